/* progress.h — what a training command shows while it runs.
 *
 * On a terminal (stderr is a tty): one line rewritten in place after every step (step/total,
 * reward, loss, KL, tokens/s, ETA). Otherwise: a plain line every `every` steps and at the
 * last, so logs stay readable. rl_progress_summary prints the closing block. */
#ifndef RL_CLI_PROGRESS_H
#define RL_CLI_PROGRESS_H

#include <stdint.h>

#include "train/metrics.h"

#define RL_PROGRESS_WINDOW 25

typedef struct rl_progress {
    const char *label;    /* "sft", "grpo" */
    int tty;
    int64_t first, total; /* steps: the run goes from first to total */
    int every;
    double t0;
    int shown;            /* a tty line is on screen */
    /* The summary's "from -> to": means over the first and the last `window` steps (a tenth
     * of the run, 1 to RL_PROGRESS_WINDOW), not single steps, whose reward is one batch's. */
    int window, n_steps;
    double head_loss, head_reward;
    double tail_loss[RL_PROGRESS_WINDOW], tail_reward[RL_PROGRESS_WINDOW];
} rl_progress;

void rl_progress_init(rl_progress *p, const char *label, int64_t first_step, int64_t total_steps);
void rl_progress_step(rl_progress *p, const rl_step_stats *s);
/* Ends the live line (if any). */
void rl_progress_end(rl_progress *p);
/* "sft: 200 steps in 41.2 s; loss 2.31 -> 0.52 (means of the first and last 20 steps)";
 * GRPO adds the reward the same way and the last step's loss and KL. */
void rl_progress_summary(const rl_progress *p, const rl_step_stats *last);

#endif
