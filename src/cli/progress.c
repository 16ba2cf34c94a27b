/* progress.c — see progress.h. */
#include "cli/progress.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"

static volatile sig_atomic_t interrupted;
static struct sigaction old_action;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void init(rl_progress *p, const char *label, int64_t first_step, int64_t total_steps)
{
    const char *cmd = p->cmd;
    int quiet = p->quiet;
    *p = (rl_progress){0};
    p->cmd = cmd;
    p->quiet = quiet;
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

static void step(rl_progress *p, const rl_step_stats *s)
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
    if (s->has_ppo)
        n += snprintf(line + n, sizeof line - n, "  vloss %.4f  ev %+.2f", s->value_loss, s->explained_var);
    if (!s->has_rewards)
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

static void end_line(rl_progress *p)
{
    if (p->shown) fputc('\n', stderr);
    p->shown = 0;
}

static void summary(const rl_progress *p, const rl_step_stats *last)
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

static void watch_begin(void *user, const rl_loop_config *c, int64_t first_step)
{
    init(user, c->label, first_step, c->total_steps);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_action);
}

static void watch_step(void *user, const rl_step_stats *s)
{
    if (!((rl_progress *)user)->quiet) step(user, s);
}

static void watch_end(void *user, const rl_loop_config *c, int outcome, const rl_step_stats *last)
{
    rl_progress *p = user;
    end_line(p);
    sigaction(SIGINT, &old_action, NULL);
    if (outcome == RL_LOOP_FAILED_SAVED && last) {
        p->rescued_step = last->step;
        p->rescued_dir = c->ckpt_dir;
    }
    if (p->quiet) return;
    if (outcome == 1 && c->ckpt_dir)
        fprintf(stderr, "%s: interrupted after step %lld; checkpoint saved to %s (continue with --resume %s)\n",
                c->label, (long long)last->step, c->ckpt_dir, c->ckpt_dir);
    else if (outcome == 1)
        fprintf(stderr, "%s: interrupted after step %lld\n", c->label, (long long)last->step);
    else if (outcome == 0 && last)
        summary(p, last);
}

static void watch_note(void *user, const char *text) { fprintf(stderr, "rlc %s: %s\n", ((rl_progress *)user)->cmd, text); }

rl_loop_watch rl_progress_watch(rl_progress *p, const char *cmd)
{
    *p = (rl_progress){0};
    p->cmd = cmd;
    return (rl_loop_watch){p, watch_begin, watch_step, watch_end, watch_note, &interrupted};
}
