/* ppo.h — PPO with a critic for language models (Schulman et al. 2017, in the RLHF form of
 * Ziegler et al. 2019 / Ouyang et al. 2022 as TRL's PPO trainer and OpenRLHF run it), on the
 * model API, the generation engine and the arithmetic of ppo_math.h.
 *
 * Models: the policy (trained, its own AdamW), a value model (model.h "Value models": trained,
 * its own AdamW with its own learning rate, vf_lr) and, when kl_coef > 0, a frozen reference
 * (forward only: on CUDA it keeps only its bf16 weights, rl_model_freeze). The value model may
 * be any size but must read the policy's tokens (same vocabulary).
 *
 * One step:
 *   1. rollout: prompts_per_step prompts (data order, order.h; hooks.prepare, when set, may
 *      rewrite them first, as in grpo.h), samples_per_prompt completions each, with the engine
 *      (seed drawn from the trainer's RNG: a resumed run samples the same);
 *   2. scores from the reward; missing_eos_penalty subtracted from completions that hit the
 *      length limit; with reward_norm, normalised by the running mean / std of every score so
 *      far (this step's included); clipped to [-reward_clip, reward_clip] when reward_clip > 0.
 *      A NaN or infinite score stops the step with an error naming the completion;
 *   3. forwards without gradients over packed micro-batches (at most max_tokens tokens): the
 *      reference's log-probs, the value model's values (the old values) and, with
 *      recompute_old_logp, the policy's log-probs (else the sampler's are the old ones). With
 *      one mini-batch (num_mini_batches 1, the default) and not old_values_pass, the value
 *      model's forward is left out: it has not changed before its first training forward, whose
 *      values are then the old ones, so the first pass runs the value model first (values,
 *      GAE of those sequences, the clipped value loss with old = current, so the clip is
 *      inactive as in any PPO's first pass, backward, update), then step 4, then the policy's
 *      pass: the same result as the separate forward, one value forward less per step;
 *   4. per completion: KL-shaped token rewards with the current kl_coef, GAE (gamma, lam),
 *      returns; advantages whitened over every completion token of the batch;
 *   5. ppo_epochs passes, each over the completions in a fresh random order cut into
 *      num_mini_batches mini-batches; per mini-batch: the clipped policy loss (rl_policy_loss,
 *      cliprange, token-mean over the mini-batch) minus entropy_coef times the policy's token-mean
 *      entropy (its gradient through the lm_head: rl_model_backward_entropy), and the clipped
 *      value loss (cliprange_value, times vf_coef), backward through each model, one AdamW update per model with its own
 *      gradient clipping (max_grad_norm of each optimizer config). During the first
 *      critic_warmup steps only the value model is updated;
 *   6. the adaptive KL controller (target_kl > 0) moves kl_coef with the step's mean KL.
 * The engine and its KV pool are made once and kept, reading the policy's working weights.
 *
 * The shared critic (cfg.critic RL_CRITIC_SHARED, TRL's older AutoModelForCausalLMWithValueHead):
 * no value model; a scalar head on the policy's final hidden state (shared_critic.h) gives the
 * values. The old values come from a forward of the policy's trunk without its lm_head (with
 * recompute_old_logp, the one forward that gives the old log-probs), and each mini-batch is one
 * forward and one backward of the policy: the head's gradient (vf_coef x the value loss's) joins
 * the policy loss's in the trunk (rl_model_backward_value), the policy's AdamW (lr, clipping)
 * applies both to the trunk and the head has its own (value_optim: vf_lr). The update then
 * costs about GRPO's plus the head, and no value model's weights, gradients, moments or
 * activations are held; but the value loss now moves the features the policy acts on (vf_coef
 * weighs it against the policy loss), which a separate critic never does. During the critic
 * warmup the head alone trains (the trunk's gradient is dropped). Not data parallel.
 *
 * Data parallel (train/dp.h): cfg.optim.dp and cfg.value_optim.dp, two rl_dp of one
 * communicator (both set or both NULL). prompts_per_step is per rank: a step walks the prompts of
 * every rank in the data order and rank r keeps the r-th block, with the Philox rows one rank
 * with world x prompts_per_step would give them, so N ranks sample, score and train exactly as
 * one rank with N times the batch. The reward normalisation, advantage whitening, KL controller,
 * loss normalisers and logged statistics use the whole step (sums over the ranks); the
 * mini-batches cut one permutation of every rank's sequences, each rank running the members
 * it holds (possibly none), and each model's update is reduced before the other's begins. */
#ifndef RL_TRAIN_PPO_H
#define RL_TRAIN_PPO_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "engine/generate.h"
#include "model/model.h"
#include "reward/reward.h"
#include "train/checkpoint.h"
#include "train/grpo.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "train/order.h"
#include "train/ppo_math.h"
#include "train/shared_critic.h"

/* The critic: a value model of its own (OpenRLHF's and TRL's PPOTrainer) or a head on the
 * policy's trunk (shared_critic.h). */
typedef enum { RL_CRITIC_SEPARATE, RL_CRITIC_SHARED } rl_critic_kind;
extern const char *const rl_critic_names[]; /* "separate", "shared", NULL */

typedef struct rl_ppo_config {
    int prompts_per_step, samples_per_prompt;
    rl_gen_params gen;          /* temperature > 0; the seed is replaced every step */
    float cliprange;            /* policy ratio clipped to [1 - c, 1 + c] */
    float cliprange_value;      /* values clipped to old +- c in the value loss */
    float vf_coef;              /* value-loss weight */
    float entropy_coef;         /* entropy bonus: policy loss - entropy_coef x token-mean entropy (0: off) */
    double kl_coef;             /* initial coefficient of the KL penalty in the rewards (0: no reference) */
    double target_kl;           /* > 0: adaptive controller towards this KL per sequence */
    double kl_horizon;
    float gamma, lam;           /* GAE: gamma in (0, 1], lam in [0, 1] */
    int ppo_epochs, num_mini_batches;
    int critic_warmup;          /* first steps that update the value model only */
    int reward_norm;            /* normalise scores by their running statistics */
    float reward_clip;          /* > 0: clip (normalised) scores to [-c, c] */
    float missing_eos_penalty;  /* subtracted from completions without an end of sequence */
    int whiten_advantages;
    int recompute_old_logp;
    rl_critic_kind critic;      /* separate (default) or shared: see "The shared critic" above */
    int old_values_pass;        /* 1: the old values always from a forward of their own (step 3), also
                                   where the first value pass gives them (one mini-batch) */
    int max_tokens;             /* token budget of one packed micro-batch (default 4096) */
    int shuffle;                /* data order */
    int recompute;              /* activation checkpointing (both models) */
    uint64_t seed;
    rl_engine_options engine;
    rl_optim_config optim;       /* policy */
    rl_optim_config value_optim; /* value model */
    rl_grpo_hooks hooks;         /* prepare only (as GRPO's: e.g. kernel prompts rebuilt each step);
                                    episode is not supported */
    int max_prompt_tokens;       /* > 0: prompts may grow to this many tokens (hooks.prepare) */
} rl_ppo_config;

typedef struct rl_ppo {
    rl_model *policy, *value, *ref; /* not owned; ref only when kl_coef > 0; value NULL with a shared critic */
    rl_shared_critic critic;        /* the shared critic's head (cfg.critic shared) */
    rl_reward *reward;              /* not owned */
    const rl_grpo_prompt *data;
    int n_data;
    rl_ppo_config cfg;
    rl_engine *engine;
    rl_acts *acts, *value_acts, *ref_acts; /* during a step's update only (ppo.c make_acts) */
    float *grads;                          /* the policy's and value model's gradients (one rank) */
    rl_optim optim, value_optim;
    rl_order order;
    rl_train_state state;
    rl_running_stats reward_stats; /* of the scores (reward_norm), saved with checkpoints */
    rl_kl_ctl kl;                  /* the current kl_coef, saved with checkpoints */
    /* at the start of the current step (rl_ppo_rescue) */
    rl_train_state before;
    rl_running_stats reward_stats_before;
    int optim_before, value_optim_before;
    /* per step, host */
    int n_seqs, max_seq_tokens;
    rl_gen_result *results;
    rl_gen_prompt *gen_prompts;
    rl_reward_item *items;
    int *prompt_of, *perm, *mine, *mb_seqs; /* perm: over every rank's sequences; mine: this rank's in a mini-batch */
    float *scores;                          /* as used (after penalty, normalisation, clip) */
    int32_t *tokens, *cu;                   /* batch layout, sequence order */
    float *old_lp, *ref_lp, *old_v, *adv, *ret;
    unsigned char *completion;
    int32_t *p_tokens, *p_cu;               /* one mini-batch, packed in its order */
    float *p_old, *p_adv, *p_ret, *p_oldv, *p_w, *h_buf, *h_dv;
    float *dev;                             /* backend scratch [N_DEV * max_tokens] */
    struct rl_runlog *log;                  /* samples and broken reward answers (train/runlog.h); not
                                               owned, NULL: none. Set after rl_ppo_create */
} rl_ppo;

rl_ppo_config rl_ppo_defaults(void);

/* value: a value model (config head != RL_HEAD_LM) with the policy's vocabulary, NULL with a
 * shared critic; ref: a
 * separate model when kl_coef > 0, else NULL. tok: the engine decodes completions with it. */
int rl_ppo_create(rl_ppo *t, rl_model *policy, rl_model *value, rl_model *ref, const rl_tokenizer *tok,
                  rl_reward *reward, const rl_grpo_prompt *data, int n_data, const rl_ppo_config *cfg, rl_err *err);
void rl_ppo_free(rl_ppo *t);

/* One rollout and its PPO epochs; stats as metrics.h's PPO fields. */
int rl_ppo_step(rl_ppo *t, rl_step_stats *stats, rl_err *err);
/* After rl_ppo_step failed: the data position, RNG and reward statistics of the last completed
 * step come back. 0 when t again holds exactly that step (rl_ppo_save may follow), -1 when the
 * failed step had already changed either model's weights (train/loop.h: rescue hook). */
int rl_ppo_rescue(rl_ppo *t);

/* A run directory's checkpoint DIR: the policy as rl_checkpoint_save writes it, and DIR/value
 * the value model the same way (HF layout, its optimizer), with DIR/value/ppo_state.json (the
 * reward statistics and the KL coefficient). rl_ppo_resume reads the policy's and value
 * model's optimizer states and ppo_state.json; the models themselves are loaded by the caller
 * (DIR and DIR/value). */
int rl_ppo_save(const rl_ppo *t, const char *dir, const cJSON *options, const char *tokenizer_dir, rl_err *err);
int rl_ppo_resume(rl_ppo *t, const char *dir, rl_err *err);

#endif
