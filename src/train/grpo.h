/* grpo.h — GRPO (Shao et al. 2024) with the DAPO (Yu et al. 2025) and Dr. GRPO (Liu et al.
 * 2025) options, on the model API and the generation engine.
 *
 * One step: take prompts_per_step prompts (data order, order.h); sample group_size completions
 * of each with the engine (seed drawn from the trainer's RNG, so a resumed run samples the
 * same); score them with the reward; group-normalised advantages (grpo_math.h); then mu
 * optimizer updates on the batch, each over packed micro-batches of at most max_tokens tokens
 * (prompt + completion per sequence, no padding), with rl_policy_loss: the clipped ratio to the
 * "old" log-probs (the sampler's, or recomputed by a training forward when
 * recompute_old_logp), the loss normalisation carried by per-token weights, and, when
 * kl_beta > 0, the k3 KL to a frozen reference model. The training forward scales logits by
 * 1 / temperature, as the sampler did. With share_prompts (the default) the samples of one
 * prompt that share a micro-batch run their prompt once (rl_model_forward_shared): the prompt
 * without its last token as one sequence, each sample as [last prompt token, completion]; the
 * completion tokens' log-probs and the gradients are those of the whole sequences (up to the
 * order of float sums), for ~(G - 1) / G of the prompt tokens' work less. Micro-batches are
 * then cut so that the attention's key slabs (the prompt again for each sample) fit max_tokens.
 *
 * Data parallel (cfg.optim.dp, train/dp.h): prompts_per_step is per rank. Each step takes
 * N x prompts_per_step prompts in the data order, rank r the r-th block (a group stays on one
 * rank); each rank samples with its own seed, scores its completions and computes its groups'
 * advantages; loss normalisers, rewards and every statistic are the whole step's
 * (the mismatch below too). Each rank has its own engine over its own KV pool.
 *
 * The engine is made once and kept (its KV pool too: made at the first rollout and reused
 * every step, sized by what a step can use, rl_engine_options_for_training, with
 * engine.gpu_memory_utilization only capping it); it reads the working weights the optimizer
 * updates, so nothing is copied or reloaded between steps.
 *
 * Train-vs-rollout mismatch: the first update's forward (no extra one) gives the trainer's
 * log-prob of every completion token; mean and max |trainer - sampler| over completion tokens
 * go to the step's stats (metrics.jsonl: rollout_logp_diff_mean / _max). With
 * ctx->deterministic (batch-invariant ops) both sides compute the same bits and it is 0.
 * tis_cap > 0 turns on truncated importance sampling as TRL and verl apply it: the "old"
 * log-probs of the ratio become the trainer's (from that same first forward: all micro-batches
 * of the first update run before any weight changes), and each token's loss is weighted by
 * min(exp(old - rollout), tis_cap), correcting for the sampler's numerics. */
#ifndef RL_TRAIN_GRPO_H
#define RL_TRAIN_GRPO_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "engine/generate.h"
#include "model/model.h"
#include "reward/reward.h"
#include "train/checkpoint.h"
#include "train/grpo_math.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "train/order.h"

typedef struct rl_grpo_prompt {
    const int32_t *ids;  /* the prompt as the model sees it (chat template applied) */
    int n_ids;
    const char *text;    /* the prompt text given to the reward */
    const char *answer;  /* reference answer or NULL */
    const cJSON *fields; /* the dataset line or NULL (extra fields for external rewards) */
} rl_grpo_prompt;

/* Optional rollout hooks (src/rollout/). prepare: before a step's generation, may rewrite the
 * prompts (data entries) the step uses, e.g. contrastive kernel prompts built from the attempts
 * so far; it must keep each within max_prompt_tokens. episode: replaces generation and scoring
 * (multi-turn episodes): for each of the n requests it fills results[i] with the tokens after the
 * prompt (ids, and logprobs of the model's own tokens), own[i * stride + k] = 1 for the model's
 * own tokens and 0 for the rest (observations: masked out of the loss), and rewards[i]; at most
 * stride tokens each. */
typedef struct rl_grpo_hooks {
    void *user;
    int (*prepare)(void *user, int64_t step, const int *prompt_of, int n, rl_err *err);
    int (*episode)(void *user, rl_engine *e, int64_t step, const rl_gen_prompt *prompts, const int *prompt_of, int n,
                   const rl_gen_params *gen, rl_gen_result *results, unsigned char *own, int stride, float *rewards,
                   rl_err *err);
} rl_grpo_hooks;

typedef struct rl_grpo_config {
    int prompts_per_step;
    int group_size;
    rl_gen_params gen;       /* temperature (> 0), top_k/top_p, max_new_tokens, stop strings;
                                its seed is replaced every step */
    float clip_low, clip_high;
    float kl_beta;           /* > 0 needs a reference model */
    rl_loss_norm loss_norm;
    int scale_std;           /* 0: Dr. GRPO advantages (no division by the group std) */
    rl_adv_kind advantage;   /* group (GRPO), rloo, reinforce_pp (grpo_math.h): set by the variant;
                                reinforce_pp takes kl_beta as its reward's KL coefficient */
    int mu;                  /* optimizer updates per rollout batch */
    int recompute_old_logp;
    int max_tokens;          /* token budget of one packed micro-batch */
    int share_prompts;       /* run a group's prompt once per micro-batch (above) */
    int shuffle;
    uint64_t seed;
    int recompute;           /* activation checkpointing */
    float tis_cap;           /* > 0: truncated importance sampling of the loss (see above) */
    rl_engine_options engine;
    rl_optim_config optim;
    rl_grpo_hooks hooks;
    int max_prompt_tokens;   /* > 0: prompts may grow to this many tokens (hooks.prepare) */
    int max_completion_tokens; /* > 0: tokens after the prompt, if more than gen.max_new_tokens (episodes) */
} rl_grpo_config;

typedef struct rl_grpo {
    rl_model *model, *ref;   /* not owned; ref only when kl_beta > 0 */
    rl_reward *reward;       /* not owned; NULL with hooks.episode (episodes score themselves) */
    const rl_grpo_prompt *data;
    int n_data;
    rl_grpo_config cfg;
    rl_engine *engine;
    rl_acts *acts, *ref_acts;
    rl_optim optim;
    rl_order order;
    rl_train_state state;
    rl_train_state before;   /* state at the start of the current step (rescue) */
    int optim_before;        /* optim.step then */
    /* per step, host, sized for prompts_per_step * group_size sequences */
    int n_seqs, max_seq_tokens;
    rl_gen_result *results;
    rl_gen_prompt *gen_prompts;
    rl_reward_item *items;
    int *prompt_of, *comp_len;
    float *rewards, *adv, *seq_w;
    int32_t *tokens, *cu;          /* whole batch, packed */
    float *old_lp, *ref_lp, *tok_adv, *tok_w; /* whole batch, per token */
    float *rollout_lp, *train_lp;  /* the sampler's and the first update's log-probs, per token */
    unsigned char *completion;     /* per token: 1 on completion tokens (the model's own) */
    unsigned char *own;            /* episodes: [n_seqs, max_seq_tokens] 1 on the model's own tokens */
    float *dev;                    /* backend: logp, old, ref, adv, weight, dlogp [max_tokens] */
    struct rl_grpo_view {          /* the micro-batch as the model runs it (grpo.c, build_view) */
        int n_rows, n_segs;
        int32_t *tokens, *full_of;  /* [max_tokens]: row tokens, and each row's token in the step layout */
        int32_t *cu, *prefix_of;   /* [2 n_seqs + 1] segments (rl_model_forward_shared) */
        float *vals;               /* [5 max_tokens]: old, ref, adv, weight, log-prob per row */
    } view;
    struct rl_runlog *log;         /* samples and broken reward answers (train/runlog.h); not
                                      owned, NULL: none. Set after rl_grpo_create */
} rl_grpo;

rl_grpo_config rl_grpo_defaults(void);

/* The published variants as presets over a config: "grpo" changes nothing; "dapo" (Yu et al.
 * 2025) clips the ratio above at 1.28 and normalises the loss per token; "dr_grpo" (Liu et al.
 * 2025) keeps advantages unscaled by the group std and normalises by a constant; "rloo" and
 * "reinforce_pp" take their advantages from grpo_math.h's RLOO and REINFORCE++ (both with the
 * token-level loss normalisation). Settings named in `keep` (RL_GRPO_KEEP_*: the caller chose
 * them itself) are left as they are. */
typedef enum {
    RL_GRPO_VARIANT_GRPO,
    RL_GRPO_VARIANT_DAPO,
    RL_GRPO_VARIANT_DR_GRPO,
    RL_GRPO_VARIANT_RLOO,
    RL_GRPO_VARIANT_REINFORCE_PP
} rl_grpo_variant_kind;
extern const char *const rl_grpo_variant_names[]; /* by rl_grpo_variant_kind, then NULL */
enum { RL_GRPO_KEEP_CLIP_HIGH = 1, RL_GRPO_KEEP_LOSS_NORM = 2, RL_GRPO_KEEP_SCALE_STD = 4 };
void rl_grpo_variant(rl_grpo_config *c, rl_grpo_variant_kind variant, unsigned keep);

/* ref must be a separate model (same architecture and vocabulary) when kl_beta > 0, else
 * NULL. tok: the engine decodes completions with it (required: rewards read text). */
int rl_grpo_create(rl_grpo *t, rl_model *m, rl_model *ref, const rl_tokenizer *tok,
                   rl_reward *reward, const rl_grpo_prompt *data, int n_data,
                   const rl_grpo_config *cfg, rl_err *err);
void rl_grpo_free(rl_grpo *t);

/* One rollout + mu updates. stats: loss, kl, clip fraction, ratio (averaged over the mu
 * updates), rewards, mean completion length, lr and grad norm of the last update, times,
 * the train-vs-rollout log-prob mismatch and the mean importance weight (tis_cap > 0). */
int rl_grpo_step(rl_grpo *t, rl_step_stats *stats, rl_err *err);
/* After rl_grpo_step failed: the data position and RNG of the last completed step come back.
 * 0 when t again holds exactly that step (rl_grpo_save may follow), -1 when the failed step had
 * already changed the weights (an update after the first of mu; train/loop.h: rescue hook). */
int rl_grpo_rescue(rl_grpo *t);

int rl_grpo_save(const rl_grpo *t, const char *dir, const cJSON *options, const char *tokenizer_dir,
                 rl_err *err);
int rl_grpo_resume(rl_grpo *t, const char *dir, rl_err *err);

/* Mean reward of one completion per prompt (e.g. greedy: gen->sample.temperature = 0) over
 * prompts; *correct counts rewards >= 1 when not NULL. */
int rl_grpo_evaluate(rl_engine *e, rl_reward *reward, const rl_grpo_prompt *prompts, int n,
                     const rl_gen_params *gen, double *mean, int *correct, rl_err *err);

#endif
