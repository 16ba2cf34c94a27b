/* progress.h — what a training command shows while it runs, as the watcher of the training
 * loop (train/loop.h), and Ctrl-C.
 *
 * On a terminal (stderr is a tty): one line rewritten in place after every step (step/total,
 * reward, loss, KL, tokens/s, ETA). Otherwise: a plain line every `every` steps and at the
 * last, so logs stay readable. At the end: the summary, or where the checkpoint of a run
 * stopped by Ctrl-C went. While a loop runs, SIGINT only sets the watcher's stop flag (the loop
 * saves and stops after the current step); a second Ctrl-C kills as usual. Notes print as
 * "rlc <cmd>: <text>". A quiet watcher (set quiet after rl_progress_watch) shows no progress, but
 * handles Ctrl-C and notes the same way. */
#ifndef RL_CLI_PROGRESS_H
#define RL_CLI_PROGRESS_H

#include <stdint.h>

#include "train/loop.h"
#include "train/metrics.h"

#define RL_PROGRESS_WINDOW 25

typedef struct rl_progress {
    const char *cmd;      /* "demo": notes print as "rlc demo: ..." */
    int quiet;            /* the ranks of a data-parallel run other than 0: notes and Ctrl-C only */
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
    /* filled when a run failed after saving its last completed step (RL_LOOP_FAILED_SAVED):
     * the command prints them after the error, with how to resume */
    int64_t rescued_step;
    const char *rescued_dir;
} rl_progress;

/* A watcher for rl_train_loop that shows progress through p; cmd names the command in notes. */
rl_loop_watch rl_progress_watch(rl_progress *p, const char *cmd);

#endif
