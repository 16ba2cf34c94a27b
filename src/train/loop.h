/* loop.h — the step loop every training run shares: run steps until the total, write a metrics
 * line per step, save a checkpoint every save_every steps and at the end, and stop cleanly
 * between two steps when asked (the CLI's Ctrl-C): save, then return 1. A checkpoint is never
 * taken in the middle of an update.
 *
 * What a run shows while it goes is not the loop's business: it calls the watcher (progress
 * lines in src/cli/progress.c; NULL: nothing) before the first step, after each step and at the
 * end, and the watcher's `note` carries the one-line messages of a longer run (the demo's
 * accuracies). */
#ifndef RL_TRAIN_LOOP_H
#define RL_TRAIN_LOOP_H

#include <signal.h>
#include <stdint.h>

#include "core/error.h"
#include "train/metrics.h"

typedef struct rl_train_hooks {
    void *trainer;
    int (*step)(void *trainer, rl_step_stats *stats, rl_err *err);
    int (*save)(void *trainer, const char *dir, rl_err *err);
    int64_t (*steps_done)(void *trainer);
} rl_train_hooks;

typedef struct rl_loop_config rl_loop_config;

typedef struct rl_loop_watch {
    void *user;
    void (*begin)(void *user, const rl_loop_config *c, int64_t first_step);
    void (*step)(void *user, const rl_step_stats *s);
    /* outcome: 0 finished, 1 stopped on request (checkpoint saved), -1 failed; last: the last
     * step run, NULL when none was. */
    void (*end)(void *user, const rl_loop_config *c, int outcome, const rl_step_stats *last);
    void (*note)(void *user, const char *text);
    volatile sig_atomic_t *stop; /* set (by a signal handler) to stop after the current step */
} rl_loop_watch;

struct rl_loop_config {
    const char *label;           /* "sft", "grpo": what the watcher shows */
    int64_t total_steps;
    int save_every;              /* 0 = only at the end */
    const char *ckpt_dir;        /* where checkpoints go (NULL: never saved) */
    rl_metrics *metrics;         /* may be NULL */
    const rl_loop_watch *watch;  /* may be NULL */
};

/* Returns 0 when the run finished, 1 when it stopped on request after saving, -1 on error
 * (err filled). */
int rl_train_loop(const rl_train_hooks *h, const rl_loop_config *c, rl_err *err);

/* Passes text to the watcher's note (printf-style); nothing without one. */
void rl_loop_note(const rl_loop_watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
