/* runlog.h — what a run directory records besides metrics.jsonl, so a run can be seen and not
 * only read (`rlc report`, train/report.h):
 *
 *   samples.jsonl        a few samples per step (per_step, `--log-samples`, default 4; 0: no
 *                        file). SFT: {"step", "kind": "sft", "index", "prompt", "completion",
 *                        "tokens", "loss"} (the example's mean loss per completion token). RL
 *                        trainers: {"step", "kind": "rl", "group", "prompt", "completion",
 *                        "answer", "reward", "advantage", "tokens"} and "reward_error" when its
 *                        answer was broken; the completions are taken across the step's groups
 *                        (the first of each group, then the second, ...). Texts longer than
 *                        RL_RUNLOG_MAX_TEXT bytes are cut (at a character boundary) and marked
 *                        "truncated": true, so the file grows by a bounded amount per step.
 *   reward_errors.jsonl  every broken reward answer of a `--reward-errors zero` run, whole:
 *                        {"step", "index", "error", "prompt", "completion", "answer"}; created
 *                        at the first one.
 *
 * Both are appended to on resume (like metrics.jsonl) and flushed after each step. In a
 * data-parallel run only rank 0 has a log: it writes its own completions (the metrics count the
 * reward errors of every rank). A trainer
 * writes a step's lines only once the step has succeeded, so a step that failed and was run
 * again after --resume is not there twice.
 *
 * Using it from a trainer (the whole API an RL trainer needs, PPO included): keep a
 * `struct rl_runlog *log` (not owned, NULL: nothing is written) that the run sets, and after a
 * successful step, while the completions are still alive:
 *
 *     if (rl_runlog_rl_step(t->log, &(rl_runlog_rl){step, items, rewards, advantages, lengths, n,
 *                                                   group_size, reward}, err)) return -1;
 *
 * It writes the samples and the reward's failures of its last rl_reward_score call; count
 * those for metrics.jsonl ("reward_errors") with rl_reward_failures. */
#ifndef RL_TRAIN_RUNLOG_H
#define RL_TRAIN_RUNLOG_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "io/tokenizer.h"
#include "reward/reward.h"

#define RL_RUNLOG_MAX_TEXT 4000
#define RL_RUNLOG_DEFAULT_SAMPLES 4

typedef struct rl_runlog {
    FILE *samples;           /* DIR/samples.jsonl; NULL when per_step is 0 */
    FILE *errors;            /* DIR/reward_errors.jsonl, from the first broken answer */
    char errors_path[4096];
    int per_step;
    int append;
    const rl_tokenizer *tok; /* decodes SFT examples (not owned) */
} rl_runlog;

/* Opens DIR/<prefix>samples.jsonl (when per_step > 0; prefix "" in a run directory, "sft_" for
 * the demo's phases) and names DIR/<prefix>reward_errors.jsonl; append keeps earlier lines
 * (resume), else both files start empty. tok: for SFT samples (may be NULL for RL). */
int rl_runlog_open(rl_runlog *l, const char *dir, const char *prefix, int per_step, int append, const rl_tokenizer *tok,
                   rl_err *err);
void rl_runlog_close(rl_runlog *l);

/* One RL step, after it succeeded (see above). */
typedef struct rl_runlog_rl {
    int64_t step;                /* the step number these completions trained */
    const rl_reward_item *items; /* [n]: prompt, completion, answer */
    const float *rewards;        /* [n] */
    const float *advantages;     /* [n] (one per completion) or NULL */
    const int *lengths;          /* [n] completion tokens, or NULL */
    int n, group_size;           /* n completions in groups of group_size of one prompt */
    const rl_reward *reward;     /* its last call's failures are logged; NULL: none */
} rl_runlog_rl;
int rl_runlog_rl_step(rl_runlog *l, const rl_runlog_rl *s, rl_err *err);

/* One SFT step: examples ex[items[i]] with their mean loss per completion token loss[i],
 * i < n (the first per_step are written). */
struct rl_sft_example;
int rl_runlog_sft_step(rl_runlog *l, int64_t step, const struct rl_sft_example *ex, const int *items,
                       const double *loss, int n, rl_err *err);

#endif
