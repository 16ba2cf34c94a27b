/* attempts.h — a training run's attempt database: every kernel the evaluator scored, one JSON
 * object a line in RUN/attempts.jsonl, appended (and flushed) as each step's evaluations finish:
 *
 *   {"step": 3, "task": "kernel_tasks/softmax", "hash": "9f1c03e2a4b5d6e7", "status": "ok",
 *    "speedup": 1.84, "reward": 0.376, "reason": null, "source": "<the extracted code>"}
 *
 * A line whose verdict was reused from an earlier identical attempt (kreward.h, memo) has
 * "memo": true. `status` is the evaluator's (docs/kernel-env.md) or "no_code" (nothing to evaluate in the
 * answer) or "bad_task"; `reason` the failure line; `speedup` is null unless the kernel was timed;
 * `hash` is FNV-1a 64 of the source. prompt.c reads the same file (status / speedup at the top
 * level) to show earlier attempts, and `rlc kernel-db` lists the best kernel of each task.
 *
 * Resuming (rl_kattempts_open with keep_upto >= 0): lines of steps after keep_upto (evaluated
 * after the checkpoint the run resumes from, and so evaluated again) and a torn last line (a run
 * killed mid-write) are dropped and the file rewritten; any other bad line is an error naming
 * the file and the line. */
#ifndef RL_REWARD_KENV_ATTEMPTS_H
#define RL_REWARD_KENV_ATTEMPTS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

typedef struct rl_kattempt {
    int64_t step;
    const char *task;
    const char *status;
    int timed;          /* speedup is measured */
    double speedup;
    int has_reward;
    double reward;
    const char *reason; /* NULL when none */
    const char *source; /* may be NULL (nothing extracted) */
    size_t source_len;
    int memo;           /* the verdict of an earlier identical attempt, not measured again */
} rl_kattempt;

typedef struct rl_kattempts {
    char *path;
    FILE *fp;
    int64_t n;          /* lines in the file */
    int64_t n_dropped;  /* dropped when opened (resume) */
} rl_kattempts;

/* Opens path for appending. keep_upto < 0: a fresh run (the file is emptied); else the lines of
 * steps <= keep_upto are kept (see above). */
int rl_kattempts_open(rl_kattempts *db, const char *path, int64_t keep_upto, rl_err *err);
int rl_kattempts_append(rl_kattempts *db, const rl_kattempt *a, rl_err *err);
void rl_kattempts_close(rl_kattempts *db);

/* Reads path into *lines (a cJSON array of the objects, caller deletes); a torn last line is
 * skipped and counted in *n_torn (may be NULL). */
int rl_kattempts_load(const char *path, cJSON **lines, int *n_torn, rl_err *err);

/* What `rlc kernel-db` shows: per task the fastest correct kernel, per step the share of
 * correct kernels and the mean reward. */
typedef struct rl_ktask_best {
    char *task;
    int64_t n, n_ok;        /* attempts, correct ones */
    int has_best;
    double best_speedup;
    int64_t best_step;
    char hash[17];
    char *source;           /* of the best (malloc'd) */
} rl_ktask_best;

typedef struct rl_kstep_stat {
    int64_t step;
    int n, n_ok;
    double reward_sum;      /* over attempts with a reward */
    int n_reward;
    double best_speedup;    /* 0 when none correct */
} rl_kstep_stat;

typedef struct rl_kattempts_summary {
    rl_ktask_best *tasks;   /* in order of first appearance */
    int n_tasks;
    rl_kstep_stat *steps;   /* ascending */
    int n_steps;
    int n_torn;
} rl_kattempts_summary;

int rl_kattempts_summarize(const char *path, rl_kattempts_summary *s, rl_err *err);
void rl_kattempts_summary_free(rl_kattempts_summary *s);

/* FNV-1a 64 of the bytes, as 16 hex digits into hex[17]. */
void rl_kattempt_hash(const char *src, size_t len, char hex[17]);

#endif
