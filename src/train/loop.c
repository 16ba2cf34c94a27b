/* loop.c — see loop.h. */
#include "train/loop.h"

#include <stdarg.h>
#include <stdio.h>

#include "train/dp.h"

void rl_loop_note(const rl_loop_watch *w, const char *fmt, ...)
{
    if (!w || !w->note) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    w->note(w->user, text);
}

/* After a failed step (err holds why): save the last completed step when the trainer can go
 * back to it and it is not on disk yet; a failed save adds its reason to err. */
static int rescue(const rl_train_hooks *h, const rl_loop_config *c, int step_failed, int64_t saved_step, rl_err *err)
{
    if (!c->ckpt_dir || c->dp || (step_failed && (!h->rescue || h->rescue(h->trainer) != 0)))
        return RL_LOOP_FAILED;
    int64_t done = h->steps_done(h->trainer);
    if (done <= saved_step) return RL_LOOP_FAILED;
    rl_err save_err;
    if (h->save(h->trainer, c->ckpt_dir, &save_err) == 0) return RL_LOOP_FAILED_SAVED;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    rl_err_set(err, "%s; saving step %lld failed too: %s", why, (long long)done, save_err.msg);
    return RL_LOOP_FAILED;
}

int rl_train_loop(const rl_train_hooks *h, const rl_loop_config *c, rl_err *err)
{
    const rl_loop_watch *w = c->watch;
    int64_t start = h->steps_done(h->trainer), saved_step = start;
    if (w && w->begin) w->begin(w->user, c, start);
    rl_step_stats last = {0};
    int rc = 0, outcome = RL_LOOP_FINISHED;
    while (h->steps_done(h->trainer) < c->total_steps) {
        rl_step_stats st;
        if (h->step(h->trainer, &st, err) != 0) {
            rc = -1;
            outcome = rescue(h, c, 1, saved_step, err);
            break;
        }
        last = st;
        if (c->metrics && rl_metrics_write(c->metrics, &st, err) != 0) {
            rc = -1;
            outcome = rescue(h, c, 0, saved_step, err);
            break;
        }
        if (w && w->step) w->step(w->user, &st);
        int stop = w && w->stop && *w->stop;
        if (rl_dp_any(c->dp, stop, &stop, err) != 0) {
            rc = outcome = -1;
            break;
        }
        int periodic = c->save_every > 0 && st.step % c->save_every == 0 && st.step < c->total_steps;
        if ((stop || periodic) && c->ckpt_dir) {
            if (h->save(h->trainer, c->ckpt_dir, err) != 0) {
                rc = outcome = -1;
                break;
            }
            saved_step = h->steps_done(h->trainer);
        }
        if (stop) {
            rc = outcome = 1;
            break;
        }
    }
    if (rc == 0 && c->ckpt_dir && h->save(h->trainer, c->ckpt_dir, err) != 0) rc = outcome = -1;
    if (w && w->end) w->end(w->user, c, outcome, last.step > start ? &last : NULL);
    return rc;
}
