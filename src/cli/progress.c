/* progress.c — see progress.h. */
#include "cli/progress.h"

#include <stdio.h>
#include <unistd.h>

#include "core/timer.h"

void rl_progress_init(rl_progress *p, const char *label, int64_t first_step, int64_t total_steps)
{
    *p = (rl_progress){0};
    p->label = label;
    p->tty = isatty(fileno(stderr));
    p->first = first_step;
    p->total = total_steps;
    int64_t span = total_steps - first_step;
    p->every = span >= 10 ? (int)(span / 10) : 1;
    p->window = p->every < RL_PROGRESS_WINDOW ? p->every : RL_PROGRESS_WINDOW;
    p->t0 = rl_time_now();
}

static void eta(double seconds, char *out, size_t size)
{
    if (seconds < 0 || seconds > 1e7) snprintf(out, size, "?");
    else if (seconds < 60) snprintf(out, size, "%.0fs", seconds);
    else if (seconds < 3600) snprintf(out, size, "%dm%02ds", (int)seconds / 60, (int)seconds % 60);
    else snprintf(out, size, "%dh%02dm", (int)seconds / 3600, ((int)seconds % 3600) / 60);
}

void rl_progress_step(rl_progress *p, const rl_step_stats *s)
{
    if (p->n_steps < p->window) {
        p->head_loss += s->loss;
        p->head_reward += s->reward_mean;
    }
    p->tail_loss[p->n_steps % p->window] = s->loss;
    p->tail_reward[p->n_steps % p->window] = s->reward_mean;
    p->n_steps++;
    double elapsed = rl_time_now() - p->t0;
    int64_t done = s->step - p->first, left = p->total - s->step;
    char when[32];
    eta(done > 0 ? elapsed / done * left : -1, when, sizeof when);
    char line[256];
    int n = snprintf(line, sizeof line, "%s step %lld/%lld", p->label, (long long)s->step, (long long)p->total);
    if (s->has_rewards)
        n += snprintf(line + n, sizeof line - n, "  reward %.3f  loss %+.4f  kl %.4f", s->reward_mean, s->loss, s->kl);
    else
        n += snprintf(line + n, sizeof line - n, "  loss %.4f", s->loss);
    snprintf(line + n, sizeof line - n, "  lr %.2e  %.0f tok/s  ETA %s", s->lr, s->tokens_per_s, when);
    if (p->tty) {
        fprintf(stderr, "\r\033[K%s", line);
        p->shown = 1;
    } else if (done % p->every == 0 || s->step == p->total) {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

void rl_progress_end(rl_progress *p)
{
    if (p->shown) fputc('\n', stderr);
    p->shown = 0;
}

void rl_progress_summary(const rl_progress *p, const rl_step_stats *last)
{
    double elapsed = rl_time_now() - p->t0;
    int n = p->n_steps < p->window ? p->n_steps : p->window;
    double tail_loss = 0, tail_reward = 0;
    for (int i = 0; i < n; i++) {
        tail_loss += p->tail_loss[i];
        tail_reward += p->tail_reward[i];
    }
    fprintf(stderr, "%s: %d steps in %.1f s", p->label, p->n_steps, elapsed);
    if (last->has_rewards)
        fprintf(stderr, "; reward %.3f -> %.3f", p->head_reward / n, tail_reward / n);
    else
        fprintf(stderr, "; loss %.4f -> %.4f", p->head_loss / n, tail_loss / n);
    if (n > 1) fprintf(stderr, " (means of the first and last %d steps)", n);
    if (last->has_rewards) fprintf(stderr, "; last step: loss %+.4f, kl %.4f", last->loss, last->kl);
    fputc('\n', stderr);
}
