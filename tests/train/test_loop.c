/* test_loop.c — the training step loop (src/train/loop.c) with a counting fake trainer: steps
 * up to the total, a metrics line and a watcher call per step, periodic and final saves, a stop
 * request honoured after the current step with a save, an error stopping the loop. */
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
} fake;

static int step(void *t, rl_step_stats *s, rl_err *err)
{
    fake *f = t;
    if (f->step + 1 == f->fail_at) return rl_err_set(err, "step %lld failed", (long long)f->fail_at);
    memset(s, 0, sizeof *s);
    s->step = ++f->step;
    s->loss = 1.0 / (double)f->step;
    if (f->step == f->stop_at) f->stop = 1;
    return 0;
}

static int save(void *t, const char *dir, rl_err *err)
{
    fake *f = t;
    if (f->saves < 16) f->saved_at[f->saves] = f->step;
    f->saves++;
    return 0;
}

static int64_t done(void *t) { return ((fake *)t)->step; }

static void begin(void *u, const rl_loop_config *c, int64_t first) { ((fake *)u)->begun++; }
static void on_step(void *u, const rl_step_stats *s) { ((fake *)u)->watched++; }
static void end(void *u, const rl_loop_config *c, int outcome, const rl_step_stats *last)
{
    ((fake *)u)->ended++;
    ((fake *)u)->outcome = outcome;
}

static int run(fake *f, int64_t total, int save_every, rl_err *err)
{
    rl_train_hooks h = {f, step, save, done};
    rl_loop_watch w = {f, begin, on_step, end, NULL, &f->stop};
    rl_loop_config c = {"test", total, save_every, "/nonexistent/ckpt", NULL, &w};
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
    cr_expect(f.step == 4 && f.saves == 0 && f.outcome == -1);
}
