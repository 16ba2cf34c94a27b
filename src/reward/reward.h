/* reward.h — scores completions: one number per (prompt, completion, reference answer).
 *
 * A reward is made from a spec string (the `--reward` option):
 *   math            1 if the final answer (\boxed{}, "Answer:", last number) equals the
 *                   reference by value (math.h), else 0
 *   exact           1 if the completion equals the answer after trimming and collapsing
 *                   whitespace runs to one space; exact:strict compares bytes
 *   regex:PATTERN   1 if PATTERN (PCRE2, unanchored; use (?s), ^, $ as needed) matches
 *   format          1 if the completion is "<think>...</think>" followed by a non-empty answer
 *   format:boxed    1 if the completion holds a complete \boxed{...}
 *   cmd:COMMAND     an external program (external.h), started once with /bin/sh -c COMMAND
 *   kernel          the kernel environment (kernel_env/kreward.h): the line's "task", the
 *                   answer's code evaluated on the GPU; options in rl_reward_options.kernel
 * Built-in rewards never fail on a completion; the external one fails loudly (never a silent
 * zero) when the program misbehaves.
 *
 * What a broken answer does (a garbage line, a NaN/inf or missing reward, a timeout, a crash:
 * external.h) is the option on_error (`--reward-errors`): RL_REWARD_ERRORS_STOP fails the call;
 * RL_REWARD_ERRORS_ZERO scores that completion 0, restarts a program that was stopped, goes on,
 * and keeps the failures of the call (rl_reward_failures) for the trainer to count and log
 * (train/runlog.h writes them with their completions to reward_errors.jsonl). Errors that are
 * not a completion's (the program cannot start, a dataset line without the answer a reward
 * needs) fail in both modes. */
#ifndef RL_REWARD_REWARD_H
#define RL_REWARD_REWARD_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "reward/kernel_env/kreward.h"

typedef struct rl_reward_item {
    const char *prompt;
    const char *completion;
    const char *answer;   /* reference; NULL when the dataset has none */
    const cJSON *fields;  /* the whole dataset line (an object) or NULL: extra fields are
                             passed to external programs */
} rl_reward_item;

typedef struct rl_reward rl_reward;

typedef enum { RL_REWARD_ERRORS_STOP, RL_REWARD_ERRORS_ZERO } rl_reward_errors;
extern const char *const rl_reward_errors_names[]; /* "stop", "zero", NULL */

typedef struct rl_reward_options {
    double timeout_s; /* external programs: time limit per completion (0 = default 60 s) */
    rl_reward_errors on_error;
    rl_kreward_opts kernel; /* the kernel reward's evaluator and attempt database */
} rl_reward_options;

/* A completion whose answer was broken (RL_REWARD_ERRORS_ZERO): its index in the call, why. */
typedef struct rl_reward_failure {
    int index;
    char why[1024];
} rl_reward_failure;

/* Parses spec, compiles a pattern or starts the program. opt may be NULL. */
int rl_reward_create(rl_reward **out, const char *spec, const rl_reward_options *opt, rl_err *err);
/* Scores n items into rewards[n]. Fails (with the item index in the message) only for
 * external programs or a missing reference answer that the reward needs. */
int rl_reward_score(rl_reward *r, const rl_reward_item *items, int n, float *rewards, rl_err *err);
/* The failures of the last rl_reward_score call (RL_REWARD_ERRORS_ZERO; none with STOP), by
 * index; *list stays valid until the next call. Returns their count. */
int rl_reward_failures(const rl_reward *r, const rl_reward_failure **list);
/* The training step the next rl_reward_score belongs to (the kernel reward's attempt database
 * records it); other rewards ignore it. */
void rl_reward_set_step(rl_reward *r, int64_t step);
/* The spec it was made from. */
const char *rl_reward_spec(const rl_reward *r);
void rl_reward_free(rl_reward *r);

#endif
