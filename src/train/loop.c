/* loop.c — see loop.h. */
#include "train/loop.h"

#include <stdarg.h>
#include <stdio.h>

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

int rl_train_loop(const rl_train_hooks *h, const rl_loop_config *c, rl_err *err)
{
    const rl_loop_watch *w = c->watch;
    int64_t start = h->steps_done(h->trainer);
    if (w && w->begin) w->begin(w->user, c, start);
    rl_step_stats last = {0};
    int rc = 0;
    while (h->steps_done(h->trainer) < c->total_steps) {
        rl_step_stats st;
        if (h->step(h->trainer, &st, err) != 0) {
            rc = -1;
            break;
        }
        last = st;
        if (c->metrics && rl_metrics_write(c->metrics, &st, err) != 0) {
            rc = -1;
            break;
        }
        if (w && w->step) w->step(w->user, &st);
        int stop = w && w->stop && *w->stop;
        int periodic = c->save_every > 0 && st.step % c->save_every == 0 && st.step < c->total_steps;
        if ((stop || periodic) && c->ckpt_dir && h->save(h->trainer, c->ckpt_dir, err) != 0) {
            rc = -1;
            break;
        }
        if (stop) {
            rc = 1;
            break;
        }
    }
    if (rc == 0 && c->ckpt_dir && h->save(h->trainer, c->ckpt_dir, err) != 0) rc = -1;
    if (w && w->end) w->end(w->user, c, rc, last.step > start ? &last : NULL);
    return rc;
}
