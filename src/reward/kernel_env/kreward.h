/* kreward.h — the kernel reward of the trainers (`--reward kernel`): a step's completions,
 * each answering a kernel task, evaluated together and turned into rewards, every attempt
 * appended to the run's attempt database (attempts.h).
 *
 * The one adapter between the trainers and the evaluator (kenv.h, kpool.h): it alone calls them.
 * Per completion: the task comes from the dataset line's "task" (a task directory or a
 * KernelBench problem file); the code from the answer (native: extract.h, the last C-family
 * block defining rl_kernel; KernelBench: the last ```python block defining ModelNew); then all
 * of a step's candidates go through the GPU pool at once (compiles in parallel on the CPU, one
 * timed worker per GPU at a time). The call returns only when every evaluation is done, so the
 * caller's training never runs during a timed run: evaluation is its own phase of the step.
 *
 * Reward (docs/kernel-env.md, "Reward"): the evaluator's, 0.2 + 0.8 * clip(log2(speedup), -1, 4)
 * / 4 for a correct kernel (0 at half the reference's speed, 1 at 16x: the clip bounds what one
 * lucky timing is worth), -0.5 for a compile error, wrong result, crash or timeout, -1 for a
 * cheat. What the candidate cannot be blamed for but has to be scored all the same gets the
 * failure value -0.5 with its reason in the database and a logged warning: an answer with no
 * code ("no_code"), a task that does not exist or a KernelBench file without Model /
 * get_inputs ("bad_task"), an evaluator error ("error": no GPU, a missing tool). The trainer
 * normalises within the group (GRPO's advantages), so only the order and spacing of a group's
 * rewards matter.
 *
 * With opts.memo, the first evaluation of each (task, code) of the run stands for later copies
 * of that code (recorded with "memo": true): a policy that has converged on a few kernels then
 * costs no GPU time per step, at the price of never re-measuring them. */
#ifndef RL_REWARD_KENV_KREWARD_H
#define RL_REWARD_KENV_KREWARD_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"

#define RL_KREWARD_FAIL (-0.5)

typedef struct rl_kreward_opts {
    const char *attempts;  /* attempt database path; NULL: none */
    int64_t keep_upto;     /* resume: keep attempts of steps <= this; -1: a fresh database */
    const char *nvcc, *worker, *python, *cache_dir, *protocol; /* NULL: the evaluator's defaults */
    int gpus;              /* GPUs of the pool (0: all the worker sees) */
    int rank_gpu;          /* several training ranks: 1 + the ordinal of this rank's GPU; the pool is
                              that GPU and those from rank_gpus on, which no rank trains on (no rank
                              times a kernel on another rank's GPU); 0: one process, the pool over gpus */
    int rank_gpus;         /* with rank_gpu: the GPUs the ranks of this machine train on (0..n-1) */
    int jobs;              /* compiles at once (0: kpool.h's default) */
    int memo;              /* 1: a code evaluated before in this run (same task, same bytes) keeps
                              its first verdict and timing instead of being measured again */
    int no_sandbox;        /* 1: workers and nvcc run without the sandbox (kenv.h: stand-in tools
                              in tests, debugging) */
    int profile;           /* 1: evaluations also time each kernel (kenv.h); rl_kreward_eval's
                              profile holds the table */
    int kb_tasks;          /* 1: some task is a KernelBench problem: the precompiled torch header
                              (kbpch.h) starts building at creation, in the background, so that
                              it is ready by the first evaluation (the first step's generation
                              runs meanwhile) rather than half-way through it */
} rl_kreward_opts;

typedef struct rl_kreward rl_kreward;

/* Loads the protocol and makes the GPU pool (an error when no GPU is found); opens the database. */
int rl_kreward_create(rl_kreward **out, const rl_kreward_opts *o, rl_err *err);
void rl_kreward_free(rl_kreward *k);

/* The step the next scored attempts belong to (the database's "step"). */
void rl_kreward_set_step(rl_kreward *k, int64_t step);

/* Checks that task names an existing task: a directory with spec.json, or a readable *.py
 * defining Model and get_inputs. 0, or -1 with the reason. */
int rl_kreward_check_task(const char *task, rl_err *err);

/* Scores n completions; fields[i] is its dataset line (its "task" is used). Fails only when out
 * of memory or when the database cannot be written; every per-candidate problem is a reward. */
int rl_kreward_score(rl_kreward *k, const cJSON *const *fields, const char *const *completions, int n,
                     float *rewards, rl_err *err);

/* One evaluation as the kernel environment's tools show it (rollout/env_kernel.c). */
typedef struct rl_kreward_eval {
    char status[24];       /* the evaluator's status, or "bad_task" */
    char *reason;          /* malloc'd or NULL */
    char *compile_log;     /* malloc'd: compile_error's compiler output, else NULL */
    int timed;
    double speedup, ref_ms, cand_ms;
    double reward;         /* the reward of kreward.h (the failure value when the evaluator had none) */
    char *profile;         /* malloc'd: with rl_kreward_opts.profile, the per-kernel times of a
                              timed evaluation as text (rl_kreward_profile_text), else NULL */
} rl_kreward_eval;

/* The per-kernel times of an evaluator result ("profile": candidate and reference, each a list
 * of {"name", "calls", "ms"}) as lines for the model, e.g.
 *   yours: 2 kernels, 0.1730 ms on the GPU
 *     0.1712 ms  x1  softmax_rows_kernel
 * (at most 8 kernels a side, the slowest first); NULL when the result has none. malloc'd. */
char *rl_kreward_profile_text(const cJSON *profile);

/* Evaluates n candidates (task i, its code) together through the pool, each recorded in the
 * database. Fails only like rl_kreward_score. */
int rl_kreward_eval_many(rl_kreward *k, const char *const *tasks, const char *const *codes, const size_t *lens, int n,
                         rl_kreward_eval *out, rl_err *err);
void rl_kreward_eval_free(rl_kreward_eval *e);

/* The code of a KernelBench answer: the last ```python (or ```py, or unlabelled) block that
 * defines ModelNew, else the whole answer when it does. *code points into answer. */
int rl_kreward_extract_python(const char *answer, size_t len, const char **code, size_t *code_len, rl_err *err);

#endif
