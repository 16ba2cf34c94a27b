/* train_loop.c — see train_loop.h. The SIGINT handler only sets a flag; the loop looks at it
 * between steps, so a checkpoint is never taken in the middle of an update. A second Ctrl-C
 * falls back to the default action (the handler is installed with SA_RESETHAND). */
#include "cli/train_loop.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/progress.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

int rl_train_loop(const rl_train_hooks *h, const rl_loop_config *c, rl_err *err)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old);
    int64_t start = h->steps_done(h->trainer);
    rl_progress p;
    rl_progress_init(&p, c->label, start, c->total_steps);
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
        rl_progress_step(&p, &st);
        int periodic = c->save_every > 0 && st.step % c->save_every == 0 && st.step < c->total_steps;
        if (interrupted || periodic) {
            if (c->ckpt_dir && h->save(h->trainer, c->ckpt_dir, err) != 0) {
                rc = -1;
                break;
            }
        }
        if (interrupted) {
            rl_progress_end(&p);
            if (c->ckpt_dir)
                fprintf(stderr, "%s: interrupted after step %lld; checkpoint saved to %s (continue with --resume %s)\n",
                        c->label, (long long)st.step, c->ckpt_dir, c->ckpt_dir);
            else
                fprintf(stderr, "%s: interrupted after step %lld\n", c->label, (long long)st.step);
            rc = 1;
            break;
        }
    }
    rl_progress_end(&p);
    if (rc == 0 && c->ckpt_dir && h->save(h->trainer, c->ckpt_dir, err) != 0) rc = -1;
    if (rc == 0 && last.step > start) rl_progress_summary(&p, &last);
    sigaction(SIGINT, &old, NULL);
    return rc;
}
