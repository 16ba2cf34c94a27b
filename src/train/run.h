/* run.h — a whole training run, from files on disk to the final checkpoint: what `rlc sft` and
 * `rlc grpo` call once their options are parsed (and what every trainer added later plugs into).
 *
 * A run loads the model to start from (the checkpoint named by resume, else model_dir), its
 * tokenizer (tokenizer, else the loaded directory's tokenizer.json), the data (train/data.h) and,
 * for RL, the reward and the frozen KL reference (model_dir, only when kl_beta / kl_coef > 0; on
 * CUDA without fp32 masters, rl_model_freeze), for PPO the value model; creates the
 * trainer, continues it from resume when given, and runs the step loop (train/loop.h) with
 * checkpoints in OUT/model, one metrics line per step in OUT/metrics.jsonl, a few samples per
 * step in OUT/samples.jsonl and every broken reward answer in OUT/reward_errors.jsonl
 * (train/runlog.h; all appended to on resume). The one-line messages a user wants (what is being trained, truncated examples, where
 * the result went) go through the watcher's note.
 *
 * A trainer kind added here plugs into the same pieces: its hooks for the step loop, rescue
 * included (train/loop.h: a fatal error mid-run then saves its last completed step), and the
 * run's rl_runlog (set the trainer's `log` after creating it on rank 0, as sft and grpo do; an
 * RL trainer then writes samples and broken reward answers with one rl_runlog_rl_step call per
 * step, train/runlog.h).
 *
 * Before loading anything the run checks its memory plan (train/mem_plan.h) against the device
 * and refuses a run that cannot fit. With a communicator (a rank of a data-parallel run,
 * dist/dist.h) the model trains data-parallel with ZeRO stage `zero` (train/dp.h); rank 0 alone
 * writes the metrics and the checkpoints and makes the notes, except each rank's closing line
 * with the device memory it used. */
#ifndef RL_TRAIN_RUN_H
#define RL_TRAIN_RUN_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "backend/ctx.h"
#include "core/error.h"
#include "dist/comm.h"
#include "reward/reward.h"
#include "train/grpo.h"
#include "train/loop.h"
#include "train/ppo.h"
#include "train/sft.h"

typedef enum { RL_RUN_SFT, RL_RUN_GRPO, RL_RUN_PPO } rl_run_kind;

typedef struct rl_run_config {
    rl_run_kind kind;
    const char *model_dir;   /* start from (and the KL reference); NULL when resuming only */
    const char *resume;      /* a run's OUT/model to continue from, or NULL */
    const char *data;        /* JSON lines */
    const char *out;         /* run directory */
    const char *tokenizer;   /* tokenizer.json; NULL: the loaded model directory's */
    int64_t steps;           /* SFT: 0 = from epochs */
    double epochs;           /* SFT, when steps is 0 */
    int max_len;             /* SFT: examples cut to this many tokens; RL: longest prompt */
    int thinking_off;        /* RL, PPO: chat prompts with enable_thinking false (io/chat.h) */
    int save_every;          /* checkpoint every N steps (0: at the end only) */
    const char *reward;      /* RL: reward spec (reward/reward.h); NULL with env */
    rl_reward_options reward_options;
    const char *env;         /* RL: multi-turn episodes with this environment (rollout/env.h), or NULL */
    int max_turns;           /* env: turns per episode */
    int max_episode_tokens;  /* env: tokens after the prompt (0: max_turns x (max_new_tokens + 256)) */
    double env_timeout;      /* env: a program's seconds per turn */
    double env_fail_reward;  /* env: the reward of an episode the environment failed */
    rl_sft_config sft;       /* the trainer's settings (seed and schedule included) */
    rl_grpo_config grpo;
    rl_ppo_config ppo;
    const char *eval_data;   /* RL: prompts with answers for greedy evaluation, or NULL */
    int eval_every;          /* RL: evaluate every N steps (metrics: eval_accuracy, eval_reward) */
    const char *value_model; /* PPO: the value model to start from; NULL: the policy's trunk with a
                                new head (rl_model_load_value); resuming: RESUME/value */
    const cJSON *options;    /* saved with every checkpoint: the defaults of a resumed run */
    rl_comm *comm;           /* this rank's communicator (not owned); NULL: a single process */
    int zero;                /* ZeRO stage 0, 1 or 2 (train/dp.h), with a communicator */
    int no_save;             /* write no checkpoint (benchmarks) */
    int log_samples;         /* samples per step in OUT/samples.jsonl (0: no file) */
} rl_run_config;

/* 0 when the run finished, 1 when it stopped on the watcher's request (checkpoint saved),
 * -1 on failure (err filled). watch may be NULL. */
int rl_train_run(rl_ctx *ctx, const rl_run_config *c, const rl_loop_watch *watch, rl_err *err);

#endif
