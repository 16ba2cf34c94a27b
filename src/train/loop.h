/* loop.h — the step loop every training run shares: run steps until the total, write a metrics
 * line per step, save a checkpoint every save_every steps and at the end, and stop cleanly
 * between two steps when asked (the CLI's Ctrl-C): save, then return 1. A checkpoint is never
 * taken in the middle of an update.
 *
 * A fatal error in the middle of a run (a reward program that fails, a non-finite loss, a GPU
 * out of memory, a failed write) loses no finished step: when the step fails, the trainer's
 * rescue hook puts back what the failed step had changed besides the weights (data position,
 * RNG), and when the weights were not touched either the loop saves the last completed step,
 * as Ctrl-C does, before returning -1 (the watcher's outcome RL_LOOP_FAILED_SAVED). A failed
 * metrics write comes after a completed step: that step is saved. Nothing is saved when the
 * step had already updated the weights (the hook says so), when the last completed step is
 * already on disk, or in a data-parallel run (saving is collective; a failed rank cannot join).
 * If the save fails too (a full disk), its message is added to the step's.
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
    /* After step failed: undo the failed step's changes to the trainer's state (data position,
     * RNG); 0 when the trainer again holds exactly its last completed step (so save writes that
     * step), -1 when it cannot (the weights were already updated). NULL: never rescued. */
    int (*rescue)(void *trainer);
} rl_train_hooks;

/* The watcher's outcome (rl_loop_watch.end). */
enum {
    RL_LOOP_FINISHED = 0,
    RL_LOOP_STOPPED = 1,       /* on request, checkpoint saved */
    RL_LOOP_FAILED = -1,       /* an error; nothing saved after it */
    RL_LOOP_FAILED_SAVED = -2, /* an error; the last completed step (`last`) was saved to ckpt_dir */
};

typedef struct rl_loop_config rl_loop_config;

typedef struct rl_loop_watch {
    void *user;
    void (*begin)(void *user, const rl_loop_config *c, int64_t first_step);
    void (*step)(void *user, const rl_step_stats *s);
    /* outcome: RL_LOOP_*; last: the last step completed, NULL when none was. */
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
    struct rl_dp *dp;            /* data parallel (train/dp.h): every rank stops after the same
                                    step when any was asked to; NULL: one rank */
};

/* Returns 0 when the run finished, 1 when it stopped on request after saving, -1 on error
 * (err filled). */
int rl_train_loop(const rl_train_hooks *h, const rl_loop_config *c, rl_err *err);

/* Passes text to the watcher's note (printf-style); nothing without one. */
void rl_loop_note(const rl_loop_watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
