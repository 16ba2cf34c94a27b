/* env.h — an environment of multi-turn episodes (docs/episodes.md): it reads each model turn
 * and answers with an observation, or ends the episode with a reward.
 *
 * Two kinds: a program speaking JSON lines (env_proc.c, `--env "COMMAND"`), and the built-in
 * kernel environment (env_kernel.c, `--env kernel`: tools compile, check, profile, submit).
 * rl_env_turn is one model turn handed to the environment; the environment fills its answer.
 * A failure of the environment on one turn (a crash, a hang past the time limit, garbage) is
 * that episode's failure: `failure` says why, and the episode ends with the failure reward;
 * the environment must still answer the other turns. */
#ifndef RL_ROLLOUT_ENV_H
#define RL_ROLLOUT_ENV_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "reward/kernel_env/kreward.h"

typedef struct rl_env_turn {
    /* in */
    int episode;          /* index of the episode in the step */
    int turn;             /* 0, 1, ... */
    int last;             /* no further turn: the environment must end the episode */
    const char *text;     /* the model's turn (decoded, without the end-of-turn token) */
    const cJSON *fields;  /* the episode's dataset line */
    /* out */
    int done;
    float reward;         /* when done */
    char *observation;    /* malloc'd, when not done */
    char *failure;        /* malloc'd: the environment failed this turn (then done is ignored) */
} rl_env_turn;

typedef struct rl_env rl_env;

typedef struct rl_env_options {
    double timeout_s;      /* a program's time per turn (default 60) */
    rl_kreward_opts kernel;/* --env kernel: the evaluator */
} rl_env_options;

/* spec: "kernel", or a shell command for /bin/sh -c (started at the first turn, restarted after
 * a failure). */
int rl_env_create(rl_env **out, const char *spec, const rl_env_options *o, rl_err *err);
void rl_env_free(rl_env *e);
const char *rl_env_spec(const rl_env *e);

/* A step with n episodes begins (the kernel environment forgets the last step's code); step is
 * what the kernel environment's attempt database records. */
int rl_env_begin(rl_env *e, int64_t step, int n, rl_err *err);
/* Answers n turns (of different episodes). -1 only for what ends the run (out of memory). */
int rl_env_step(rl_env *e, rl_env_turn *turns, int n, rl_err *err);

/* What each kind implements (env_proc.c, env_kernel.c). */
typedef struct rl_env_ops {
    int (*begin)(void *self, int64_t step, int n, rl_err *err);
    int (*step)(void *self, rl_env_turn *turns, int n, rl_err *err);
    void (*free)(void *self);
} rl_env_ops;

int rl_env_proc_create(void **self, const rl_env_ops **ops, const char *command, double timeout_s, rl_err *err);
int rl_env_kernel_create(void **self, const rl_env_ops **ops, const rl_kreward_opts *o, rl_err *err);

/* The tools of the kernel environment, described for the system prompt. */
extern const char rl_env_kernel_tools_text[];

#endif
