/* rollout_setup.h — how a GRPO run whose data are not plain prompts is put together: the
 * trainer (grpo.h) stays the same, and its hooks (rl_grpo_hooks) come from src/rollout/. A PPO
 * run with --reward kernel uses it too (run.c hands the prepare hook to rl_ppo_config; --env is
 * GRPO's only).
 *
 *   --reward kernel: the data name kernel tasks (rollout/ktasks.h); every step's prompts are
 *   built afresh from OUT/attempts.jsonl, the run's attempt database, which the kernel reward
 *   (reward/kernel_env/kreward.h) appends to. On resume the database keeps the attempts of the
 *   steps up to the checkpoint's.
 *   --env SPEC: multi-turn episodes (rollout/episodes.h) replace generation and scoring; the
 *   data are plain prompts for a program environment, kernel tasks (with the tools described)
 *   for --env kernel, whose evaluations go to OUT/attempts.jsonl likewise. */
#ifndef RL_TRAIN_ROLLOUT_SETUP_H
#define RL_TRAIN_ROLLOUT_SETUP_H

#include "io/tokenizer.h"
#include "rollout/episodes.h"
#include "rollout/ktasks.h"
#include "train/data.h"
#include "train/grpo.h"
#include "train/run.h"

typedef struct rl_rollout_setup {
    int kernel;              /* 1: kernel tasks */
    rl_ktasks kt;
    rl_train_data data;      /* a program environment's prompts */
    int have_data;
    rl_env *env;
    rl_episodes episodes;
    int have_episodes;
    rl_grpo_prompt *prompts; /* the trainer's data, [n] */
    int n;
    char attempts[4200];
} rl_rollout_setup;

/* For a run that needs it: loads the data, sets the reward options it implies (into *ro) and the
 * trainer's hooks (into *gc). Returns 1 when it did (then s->prompts / s->n are the data), 0
 * when the run is a plain one, -1 on error. */
int rl_rollout_setup_make(rl_rollout_setup *s, const rl_run_config *c, const rl_tokenizer *tok, rl_reward_options *ro,
                          rl_grpo_config *gc, rl_err *err);
void rl_rollout_setup_free(rl_rollout_setup *s);

#endif
