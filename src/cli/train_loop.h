/* train_loop.h — the step loop every training command shares: run steps until the total,
 * write a metrics line per step, show progress, save a checkpoint every save_every steps and
 * at the end, and on Ctrl-C (SIGINT) finish the current step, save, and stop cleanly. */
#ifndef RL_CLI_TRAIN_LOOP_H
#define RL_CLI_TRAIN_LOOP_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "train/metrics.h"

typedef struct rl_train_hooks {
    void *trainer;
    int (*step)(void *trainer, rl_step_stats *stats, rl_err *err);
    int (*save)(void *trainer, const char *dir, rl_err *err);
    int64_t (*steps_done)(void *trainer);
} rl_train_hooks;

typedef struct rl_loop_config {
    const char *label;    /* command name for messages */
    int64_t total_steps;
    int save_every;       /* 0 = only at the end */
    const char *ckpt_dir; /* where checkpoints go (NULL: never saved) */
    rl_metrics *metrics;  /* may be NULL */
} rl_loop_config;

/* Returns 0 when the run finished, 1 when it stopped on Ctrl-C after saving, -1 on error
 * (err filled). */
int rl_train_loop(const rl_train_hooks *h, const rl_loop_config *c, rl_err *err);

#endif
