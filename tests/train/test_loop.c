/* test_loop.c — the training step loop (src/train/loop.c) with a counting fake trainer: steps
 * up to the total, a metrics line and a watcher call per step, periodic and final saves, a stop
 * request honoured after the current step with a save, an error stopping the loop: with a save
 * of the last completed step when the trainer can go back to it, none when it cannot, when that
 * step is on disk already or when there is no rescue hook, and a failed save named in the
 * error. */
#include <signal.h>
#include <string.h>

#include "train/loop.h"
#include "test_util.h"

typedef struct fake {
    int64_t step, fail_at;
    int saves, watched, begun, ended, outcome;
    int64_t saved_at[16];
    volatile sig_atomic_t stop;
    int64_t stop_at;
    int rescue_ok, rescues, fail_save;
    int64_t half_done; /* what the failed step had advanced (rescue puts it back) */
} fake;

static int step(void *t, rl_step_stats *s, rl_err *err)
{
    fake *f = t;
    if (f->step + 1 == f->fail_at) {
        f->half_done = 1;
        return rl_err_set(err, "step %lld failed", (long long)f->fail_at);
    }
    memset(s, 0, sizeof *s);
    s->step = ++f->step;
    s->loss = 1.0 / (double)f->step;
    if (f->step == f->stop_at) f->stop = 1;
    return 0;
}

static int save(void *t, const char *dir, rl_err *err)
{
    fake *f = t;
    if (f->half_done) return rl_err_set(err, "saved a half-done step");
    if (f->fail_save) return rl_err_set(err, "disk full");
    if (f->saves < 16) f->saved_at[f->saves] = f->step;
    f->saves++;
    return 0;
}

static int64_t done(void *t) { return ((fake *)t)->step; }

static int rescue(void *t)
{
    fake *f = t;
    f->rescues++;
    if (!f->rescue_ok) return -1;
    f->half_done = 0;
    return 0;
}

static void begin(void *u, const rl_loop_config *c, int64_t first) { ((fake *)u)->begun++; }
static void on_step(void *u, const rl_step_stats *s) { ((fake *)u)->watched++; }
static void end(void *u, const rl_loop_config *c, int outcome, const rl_step_stats *last)
{
    ((fake *)u)->ended++;
    ((fake *)u)->outcome = outcome;
}

static int run(fake *f, int64_t total, int save_every, rl_err *err)
{
    rl_train_hooks h = {f, step, save, done, rescue};
    rl_loop_watch w = {f, begin, on_step, end, NULL, &f->stop};
    rl_loop_config c = {"test", total, save_every, "/nonexistent/ckpt", NULL, &w, NULL};
    return rl_train_loop(&h, &c, err);
}

Test(loop, runs_to_the_total_with_periodic_saves)
{
    fake f = {0};
    rl_err err;
    cr_assert_eq(run(&f, 10, 4, &err), 0, "%s", err.msg);
    cr_expect_eq(f.step, 10);
    cr_expect_eq(f.watched, 10);
    cr_expect(f.begun == 1 && f.ended == 1 && f.outcome == 0);
    cr_assert_eq(f.saves, 3, "saves after steps 4, 8 and at the end");
    cr_expect(f.saved_at[0] == 4 && f.saved_at[1] == 8 && f.saved_at[2] == 10);
}

Test(loop, stop_request_saves_after_the_current_step)
{
    fake f = {.stop_at = 3};
    rl_err err;
    cr_assert_eq(run(&f, 10, 0, &err), 1);
    cr_expect_eq(f.step, 3);
    cr_expect(f.saves == 1 && f.saved_at[0] == 3);
    cr_expect_eq(f.outcome, 1);
}

Test(loop, an_error_stops_without_a_save)
{
    fake f = {.fail_at = 5};
    rl_err err;
    cr_assert_eq(run(&f, 10, 0, &err), -1);
    cr_expect_str_eq(err.msg, "step 5 failed");
    cr_expect(f.step == 4 && f.saves == 0 && f.outcome == RL_LOOP_FAILED);
    cr_expect_eq(f.rescues, 1, "the trainer was asked");
}

Test(loop, an_error_saves_the_last_completed_step_when_the_trainer_can_go_back)
{
    fake f = {.fail_at = 5, .rescue_ok = 1};
    rl_err err;
    cr_assert_eq(run(&f, 10, 0, &err), -1);
    cr_expect_str_eq(err.msg, "step 5 failed");
    cr_assert(f.saves == 1 && f.saved_at[0] == 4, "%d saves", f.saves);
    cr_expect_eq(f.outcome, RL_LOOP_FAILED_SAVED);
}

Test(loop, no_rescue_save_when_the_last_step_is_on_disk_or_nothing_ran)
{
    fake f = {.fail_at = 5, .rescue_ok = 1};
    rl_err err;
    cr_assert_eq(run(&f, 10, 4, &err), -1); /* step 4 saved periodically */
    cr_expect(f.saves == 1 && f.saved_at[0] == 4 && f.outcome == RL_LOOP_FAILED);
    fake g = {.fail_at = 1, .rescue_ok = 1};
    cr_assert_eq(run(&g, 10, 0, &err), -1);
    cr_expect(g.saves == 0 && g.outcome == RL_LOOP_FAILED);
}

Test(loop, a_failed_rescue_save_is_named_in_the_error)
{
    fake f = {.fail_at = 3, .rescue_ok = 1, .fail_save = 1};
    rl_err err;
    cr_assert_eq(run(&f, 10, 0, &err), -1);
    cr_expect_str_eq(err.msg, "step 3 failed; saving step 2 failed too: disk full");
    cr_expect_eq(f.outcome, RL_LOOP_FAILED);
}

Test(loop, without_a_rescue_hook_nothing_is_saved)
{
    fake f = {.fail_at = 3, .rescue_ok = 1};
    rl_train_hooks h = {&f, step, save, done, NULL};
    rl_loop_config c = {"test", 10, 0, "/nonexistent/ckpt", NULL, NULL, NULL};
    rl_err err;
    cr_assert_eq(rl_train_loop(&h, &c, &err), -1);
    cr_expect_eq(f.saves, 0);
}
