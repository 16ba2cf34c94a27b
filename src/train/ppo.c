/* ppo.c — see ppo.h. The batch is laid out once on the host in sequence order (tokens packed,
 * and per token: old log-prob, reference log-prob, old value, advantage, return; prompt tokens
 * carry nothing), then each mini-batch is re-packed in its shuffled order and cut into
 * micro-batches of at most max_tokens tokens. The policy loss runs on the backend
 * (rl_policy_loss); the value loss is a few thousand numbers and runs on the host
 * (ppo_math.h), its gradient uploaded for the value model's backward. */
#include "train/ppo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "core/file.h"
#include "core/timer.h"
#include "io/json.h"
#include "train/dp.h"
#include "train/runlog.h"

const char *const rl_critic_names[] = {"separate", "shared", NULL};

enum { D_LOGP, D_OLD, D_ADV, D_W, D_DLOGP, D_VAL, D_DV, D_ENT, D_DENT, N_DEV };

rl_ppo_config rl_ppo_defaults(void)
{
    rl_ppo_config c = {0};
    c.prompts_per_step = 8;
    c.samples_per_prompt = 1;
    c.gen = rl_gen_params_default();
    c.gen.max_new_tokens = 256;
    c.cliprange = 0.2f;
    c.cliprange_value = 0.2f;
    c.vf_coef = 0.1f;
    c.kl_coef = 0.05;
    c.kl_horizon = 10000;
    c.gamma = 1.0f;
    c.lam = 0.95f;
    c.ppo_epochs = 4;
    c.num_mini_batches = 1;
    c.whiten_advantages = 1;
    c.max_tokens = 4096; /* a micro-batch's activations (make_acts): Qwen3-0.6B PPO fits 24 GiB */
    c.shuffle = 1;
    c.seed = 1234;
    c.engine = rl_engine_options_default();
    c.optim = rl_optim_defaults();
    c.optim.schedule.peak = 1e-6;
    c.optim.weight_decay = 0.0;
    c.value_optim = c.optim;
    c.value_optim.schedule.peak = 1e-5;
    return c;
}

static void free_acts(rl_ppo *t)
{
    rl_acts_free(t->acts);
    rl_acts_free(t->value_acts);
    rl_acts_free(t->ref_acts);
    t->acts = t->value_acts = t->ref_acts = NULL;
}

void rl_ppo_free(rl_ppo *t)
{
    rl_engine_free(t->engine);
    free_acts(t);
    if (t->grads) { /* the models' gradients were this buffer */
        rl_model_use_grads(t->policy, NULL);
        if (t->value) rl_model_use_grads(t->value, NULL);
        rl_free(t->policy->ctx, t->grads);
    }
    rl_optim_free(&t->optim);
    rl_optim_free(&t->value_optim);
    rl_shared_critic_free(&t->critic);
    rl_order_free(&t->order);
    if (t->dev) rl_free(t->policy->ctx, t->dev);
    void *bufs[] = {t->results, t->gen_prompts, t->items, t->prompt_of, t->perm, t->mine, t->mb_seqs, t->scores,
                    t->tokens, t->cu, t->old_lp, t->ref_lp, t->old_v, t->adv, t->ret, t->completion,
                    t->p_tokens, t->p_cu, t->p_old, t->p_adv, t->p_ret, t->p_oldv, t->p_w, t->h_buf, t->h_dv};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    memset(t, 0, sizeof *t);
}

static int check_config(const rl_ppo_config *c, const rl_model *policy, const rl_model *value, const rl_model *ref,
                        rl_err *err)
{
    if (c->prompts_per_step < 1 || c->samples_per_prompt < 1)
        return rl_err_set(err, "ppo: prompts_per_step and samples_per_prompt must be >= 1 (got %d, %d)",
                          c->prompts_per_step, c->samples_per_prompt);
    if (!(c->gamma > 0 && c->gamma <= 1)) return rl_err_set(err, "ppo: --gamma must be in (0, 1], got %g", c->gamma);
    if (!(c->lam >= 0 && c->lam <= 1)) return rl_err_set(err, "ppo: --lam must be in [0, 1], got %g", c->lam);
    if (c->ppo_epochs < 1 || c->num_mini_batches < 1)
        return rl_err_set(err, "ppo: --ppo-epochs and --num-mini-batches must be >= 1");
    int n = c->prompts_per_step * c->samples_per_prompt;
    if (c->num_mini_batches > n)
        return rl_err_set(err, "ppo: --num-mini-batches %d is more than the %d completions of a step",
                          c->num_mini_batches, n);
    if (!(c->gen.sample.temperature > 0)) return rl_err_set(err, "ppo: the sampling temperature must be > 0");
    if (c->kl_coef < 0 || c->target_kl < 0) return rl_err_set(err, "ppo: --kl-coef and --target-kl must be >= 0");
    if (!(c->entropy_coef >= 0 && isfinite(c->entropy_coef)))
        return rl_err_set(err, "ppo: --entropy-coef must be a finite number >= 0, got %g", c->entropy_coef);
    if (c->kl_coef > 0 && !ref) return rl_err_set(err, "ppo: a KL penalty (--kl-coef > 0) needs a reference model");
    if (ref && ref->config.vocab_size != policy->config.vocab_size)
        return rl_err_set(err, "ppo: the reference's vocabulary (%d) differs from the policy's (%d)",
                          ref->config.vocab_size, policy->config.vocab_size);
    if (c->critic == RL_CRITIC_SHARED) {
        if (value) return rl_err_set(err, "ppo: a shared critic (--critic shared) is a head on the policy: no value model");
        if (c->optim.dp || c->value_optim.dp)
            return rl_err_set(err, "ppo: --critic shared does not run data parallel (use --critic separate)");
    } else if (!value) {
        return rl_err_set(err, "ppo: a separate critic needs a value model");
    } else if (value->config.head == RL_HEAD_LM)
        return rl_err_set(err, "ppo: the value model is a causal LM (%s), not a value model", value->config.architecture);
    else if (value->config.vocab_size != policy->config.vocab_size)
        return rl_err_set(err, "ppo: the value model's vocab_size (%d) differs from the policy's (%d): it must read "
                               "the policy's tokens (same tokenizer)", value->config.vocab_size, policy->config.vocab_size);
    if (policy->config.head != RL_HEAD_LM)
        return rl_err_set(err, "ppo: the policy is a value model (%s)", policy->config.architecture);
    if (c->hooks.episode) return rl_err_set(err, "ppo: multi-turn episodes are not supported (GRPO runs them)");
    return 0;
}

/* The training activations, made after each rollout for the step's largest micro-batch (at
 * most max_tokens tokens) and freed before the next rollout, while the engine's KV pool is
 * released in between (rl_engine_release_pool): the step's peak is the larger of the two, not
 * their sum. The policy's are lent to the value model and the reference when they have its
 * shape (rl_acts_share: none of the three holds a batch while another runs), else each has its
 * own. */
static int make_acts(rl_ppo *t, int n_tokens, rl_err *err)
{
    rl_acts_mode mode = t->cfg.recompute ? RL_ACTS_TRAIN_CHECKPOINT : RL_ACTS_TRAIN;
    rl_err ignored;
    if (n_tokens > t->cfg.max_tokens) n_tokens = t->cfg.max_tokens;
    if (rl_acts_create(&t->acts, t->policy, n_tokens, mode, err)) return -1;
    if (t->value && rl_acts_share(t->acts, t->value, &ignored) && rl_acts_create(&t->value_acts, t->value, n_tokens, mode, err))
        return -1;
    if (t->ref && rl_acts_share(t->acts, t->ref, &ignored) &&
        rl_acts_create(&t->ref_acts, t->ref, n_tokens, RL_ACTS_INFER, err))
        return -1;
    return rl_acts_share(t->acts, t->policy, err);
}

/* The activations for model m (policy, value model or reference). */
static rl_acts *acts_for(rl_ppo *t, rl_model *m, rl_err *err)
{
    if (m == t->value && t->value_acts) return t->value_acts;
    if (m == t->ref && t->ref_acts) return t->ref_acts;
    return rl_acts_share(t->acts, m, err) ? NULL : t->acts;
}

/* The activations that hold m's last forward, for its backward (acts_for would forget it). */
static rl_acts *acts_held(rl_ppo *t, rl_model *m) { return m == t->value && t->value_acts ? t->value_acts : t->acts; }

/* One gradient buffer for the policy and the value model (one rank: their backwards and updates
 * take turns, and each update zeroes its gradients), of the larger model's size. Under data
 * parallelism each model's gradients belong to its rl_dp (train/dp.h). */
static int share_grads(rl_ppo *t, rl_err *err)
{
    if (t->cfg.optim.dp) return 0;
    size_t n = t->value && t->value->n_elems > t->policy->n_elems ? t->value->n_elems : t->policy->n_elems;
    rl_ctx *ctx = t->policy->ctx;
    t->grads = rl_alloc(ctx, n * sizeof(float));
    if (!t->grads || rl_memzero(ctx, t->grads, n * sizeof(float))) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "ppo: the gradient buffer: ");
    }
    rl_model_use_grads(t->policy, t->grads);
    if (t->value) rl_model_use_grads(t->value, t->grads);
    return 0;
}

int rl_ppo_create(rl_ppo *t, rl_model *policy, rl_model *value, rl_model *ref, const rl_tokenizer *tok,
                  rl_reward *reward, const rl_grpo_prompt *data, int n_data, const rl_ppo_config *cfg, rl_err *err)
{
    memset(t, 0, sizeof *t);
    if (check_config(cfg, policy, value, cfg->kl_coef > 0 ? ref : NULL, err)) return -1;
    if (!tok) return rl_err_set(err, "ppo: a tokenizer is needed (rewards read completion text)");
    t->policy = policy;
    t->value = value;
    t->ref = cfg->kl_coef > 0 ? ref : NULL;
    t->reward = reward;
    t->data = data;
    t->n_data = n_data;
    t->cfg = *cfg;
    if (!cfg->optim.dp != !cfg->value_optim.dp || (cfg->optim.dp && cfg->optim.dp == cfg->value_optim.dp))
        return rl_err_set(err, "ppo: data parallel needs one rl_dp for the policy and another for the value model");
    t->kl = (rl_kl_ctl){cfg->kl_coef, cfg->target_kl, cfg->kl_horizon};
    int longest = 0;
    for (int i = 0; i < n_data; i++) {
        if (data[i].n_ids < 1) return rl_err_set(err, "ppo: prompt %d is empty", i);
        for (int k = 0; k < data[i].n_ids; k++)
            if (data[i].ids[k] < 0 || data[i].ids[k] >= policy->config.vocab_size)
                return rl_err_set(err, "ppo: prompt %d token %d is id %d, outside the vocabulary (%d)", i, k,
                                  data[i].ids[k], policy->config.vocab_size);
        if (data[i].n_ids > longest) longest = data[i].n_ids;
    }
    if (cfg->max_prompt_tokens > longest) longest = cfg->max_prompt_tokens;
    t->max_seq_tokens = longest + cfg->gen.max_new_tokens;
    if (t->max_seq_tokens > cfg->max_tokens)
        return rl_err_set(err, "ppo: the longest prompt (%d tokens) + max_new_tokens (%d) exceeds the micro-batch "
                               "budget max_tokens = %d (raise --max-tokens, or lower --max-prompt-len / --max-new-tokens)", longest, cfg->gen.max_new_tokens, cfg->max_tokens);
    int n = t->n_seqs = cfg->prompts_per_step * cfg->samples_per_prompt;
    size_t bt = (size_t)n * t->max_seq_tokens, f = sizeof(float), mt = (size_t)cfg->max_tokens;
    t->results = calloc((size_t)n, sizeof *t->results);
    t->gen_prompts = calloc((size_t)n, sizeof *t->gen_prompts);
    t->items = calloc((size_t)n, sizeof *t->items);
    t->prompt_of = calloc((size_t)n, sizeof(int));
    t->perm = calloc((size_t)n * (size_t)rl_dp_world(cfg->optim.dp), sizeof(int));
    t->mine = calloc((size_t)n, sizeof(int));
    t->mb_seqs = calloc((size_t)n + 1, sizeof(int));
    t->scores = calloc((size_t)n, f);
    t->tokens = malloc(bt * sizeof(int32_t));
    t->cu = malloc(((size_t)n + 1) * sizeof(int32_t));
    t->old_lp = malloc(bt * f), t->ref_lp = malloc(bt * f), t->old_v = malloc(bt * f);
    t->adv = malloc(bt * f), t->ret = malloc(bt * f), t->completion = malloc(bt);
    t->p_tokens = malloc(bt * sizeof(int32_t));
    t->p_cu = malloc(((size_t)n + 1) * sizeof(int32_t));
    t->p_old = malloc(bt * f), t->p_adv = malloc(bt * f), t->p_ret = malloc(bt * f), t->p_oldv = malloc(bt * f);
    t->p_w = malloc(bt * f), t->h_buf = malloc(mt * f), t->h_dv = malloc(mt * f);
    t->dev = rl_alloc(policy->ctx, N_DEV * mt * f);
    if (!t->results || !t->gen_prompts || !t->items || !t->prompt_of || !t->perm || !t->mine || !t->mb_seqs ||
        !t->scores || !t->tokens || !t->cu || !t->old_lp || !t->ref_lp || !t->old_v || !t->adv || !t->ret ||
        !t->completion || !t->p_tokens || !t->p_cu || !t->p_old || !t->p_adv || !t->p_ret || !t->p_oldv || !t->p_w ||
        !t->h_buf || !t->h_dv || !t->dev) {
        rl_ppo_free(t);
        return rl_err_oom(err, "ppo buffers", bt * 48);
    }
    rl_rng_init(&t->state.rng, cfg->seed);
    /* the KV pool holds this rank's step, as GRPO's does (generate.h), not 0.9 of the free memory */
    rl_engine_options eng = rl_engine_options_for_training(&cfg->engine, n, t->max_seq_tokens);
    if (rl_order_create(&t->order, n_data, cfg->seed, cfg->shuffle, err) ||
        rl_engine_create(&t->engine, policy, tok, &eng, err) || share_grads(t, err) ||
        rl_dp_prepare(cfg->optim.dp, policy, err) || (value && rl_dp_prepare(cfg->value_optim.dp, value, err)) ||
        rl_optim_create(&t->optim, policy->ctx, policy->params, policy->n_params, policy->n_elems, &cfg->optim, err) ||
        (value ? rl_optim_create(&t->value_optim, value->ctx, value->params, value->n_params, value->n_elems,
                                 &cfg->value_optim, err)
               : rl_shared_critic_create(&t->critic, policy, &cfg->value_optim, err))) {
        rl_ppo_free(t);
        return -1;
    }
    return 0;
}

static float *dev(rl_ppo *t, int which) { return t->dev + (size_t)which * t->cfg.max_tokens; }

static int ctx_fail(rl_ctx *ctx, rl_err *err)
{
    rl_ctx_error(ctx, err);
    return rl_err_prefix(err, "ppo: ");
}

/* The shared critic's head when m is the policy and the critic is shared, else a zeroed head. */
static rl_value_head shared_head(const rl_ppo *t, const rl_model *m)
{
    rl_value_head none = {0};
    return m == t->policy && t->cfg.critic == RL_CRITIC_SHARED ? rl_shared_critic_head(&t->critic) : none;
}

/* Forward of model over the packed sequences [s0, s1) of (tokens, cu) into dev(D_LOGP) (and
 * the entropies into dev(D_ENT) when entropy; with a shared critic, the policy's values into
 * dev(D_VAL)), then to host_out at the batch offsets when not NULL. */
static int forward_to(rl_ppo *t, rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu, int s0, int s1,
                      int logp, int entropy, float *host_out, float *host_values, rl_err *err)
{
    if (!a) return -1; /* acts_for failed: err is set */
    int32_t local[s1 - s0 + 1];
    for (int s = s0; s <= s1; s++) local[s - s0] = cu[s] - cu[s0];
    float inv_t = 1.0f / t->cfg.gen.sample.temperature;
    rl_value_head vh = shared_head(t, m);
    if (rl_model_forward_value(m, a, tokens + cu[s0], local, s1 - s0, inv_t, logp ? dev(t, D_LOGP) : NULL,
                               entropy ? dev(t, D_ENT) : NULL, vh.weight ? &vh : NULL, dev(t, D_VAL), err))
        return -1;
    size_t bytes = (size_t)local[s1 - s0] * sizeof(float);
    if ((host_out && rl_memcpy(m->ctx, host_out + cu[s0], dev(t, D_LOGP), bytes, RL_D2H)) ||
        (host_values && rl_memcpy(m->ctx, host_values + cu[s0], dev(t, D_VAL), bytes, RL_D2H)))
        return ctx_fail(m->ctx, err);
    return 0;
}

static int forward(rl_ppo *t, rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu, int s0, int s1,
                   int entropy, float *host_out, rl_err *err)
{
    return forward_to(t, m, a, tokens, cu, s0, s1, 1, entropy, host_out, NULL, err);
}

/* Micro-batch boundaries (sequence indices into cu) of at most max_tokens tokens. */
static int cut(const rl_ppo *t, const int32_t *cu, int n, int *mb)
{
    int k = 0;
    mb[k++] = 0;
    for (int s = 0; s < n; s++)
        if (s > mb[k - 1] && cu[s + 1] - cu[mb[k - 1]] > t->cfg.max_tokens) mb[k++] = s;
    mb[k] = n;
    return k;
}

/* Scores: reward, then the missing-EOS penalty, normalisation and clip. *raw_mean: the mean
 * reward before any of them. Means and the normalisation's statistics are the step's (every
 * rank's completions). */
static int score(rl_ppo *t, double *raw_mean, rl_err *err)
{
    int n = t->n_seqs;
    for (int s = 0; s < n; s++) {
        const rl_grpo_prompt *p = &t->data[t->prompt_of[s]];
        t->items[s] = (rl_reward_item){p->text, t->results[s].text ? t->results[s].text : "", p->answer, p->fields};
    }
    rl_reward_set_step(t->reward, t->state.step + 1); /* the kernel reward's attempts record it */
    if (rl_reward_score(t->reward, t->items, n, t->scores, err)) return -1;
    double sum = 0, used = 0, m2 = 0;
    for (int s = 0; s < n; s++) {
        if (!isfinite(t->scores[s]))
            return rl_err_set(err, "reward: completion %d (prompt %d) scored %g; rewards must be finite numbers", s,
                              t->prompt_of[s], t->scores[s]);
        sum += t->scores[s];
        if (t->results[s].finish == RL_FINISH_LENGTH) t->scores[s] -= t->cfg.missing_eos_penalty;
        used += t->scores[s];
    }
    for (int s = 0; s < n; s++) m2 += (t->scores[s] - used / n) * (t->scores[s] - used / n);
    /* count, raw sum, sum, squared deviations from each rank's mean, and n mean^2: the
     * deviations combine as M2 = sum of M2_r + sum of n_r mean_r^2 - N mean^2 (Chan et al. 1979) */
    double st[5] = {n, sum, used, m2, used * used / n};
    rl_dp *dp = t->cfg.optim.dp;
    if (rl_dp_sum(dp, st, 5, err)) return -1;
    *raw_mean = st[1] / st[0];
    if (t->cfg.reward_norm) {
        double bm = st[2] / st[0], bm2 = dp ? st[3] + st[4] - st[0] * bm * bm : st[3];
        rl_running_merge(&t->reward_stats, st[0], bm, bm2 > 0 ? bm2 : 0);
        double mean = t->reward_stats.mean, sd = rl_running_std(&t->reward_stats);
        for (int s = 0; s < n; s++) t->scores[s] = (float)((t->scores[s] - mean) / sd);
    }
    float c = t->cfg.reward_clip;
    if (c > 0)
        for (int s = 0; s < n; s++) t->scores[s] = t->scores[s] < -c ? -c : t->scores[s] > c ? c : t->scores[s];
    return 0;
}

static void lay_out(rl_ppo *t)
{
    int pos = 0;
    t->cu[0] = 0;
    for (int s = 0; s < t->n_seqs; s++) {
        const rl_grpo_prompt *p = &t->data[t->prompt_of[s]];
        const rl_gen_result *r = &t->results[s];
        memcpy(t->tokens + pos, p->ids, (size_t)p->n_ids * sizeof(int32_t));
        memcpy(t->tokens + pos + p->n_ids, r->ids, (size_t)r->n_ids * sizeof(int32_t));
        for (int k = 0; k < p->n_ids + r->n_ids; k++) {
            int i = pos + k, c = k >= p->n_ids;
            t->completion[i] = (unsigned char)c;
            t->old_lp[i] = c ? r->logprobs[k - p->n_ids] : 0;
            t->ref_lp[i] = t->old_v[i] = t->adv[i] = t->ret[i] = 0;
        }
        pos += p->n_ids + r->n_ids;
        t->cu[s + 1] = pos;
    }
}

/* Whitens the advantages over every completion token of the step (all ranks), as
 * rl_ppo_whiten does over one rank's. */
static int whiten(rl_ppo *t, rl_err *err)
{
    rl_dp *dp = t->cfg.optim.dp;
    size_t n = (size_t)t->cu[t->n_seqs];
    double st[2] = {0, 0}, sq = 0;
    for (size_t i = 0; i < n; i++)
        if (t->completion[i]) st[0] += t->adv[i], st[1]++;
    if (rl_dp_sum(dp, st, 2, err)) return -1;
    if (st[1] < 2) return 0;
    double mean = st[0] / st[1];
    for (size_t i = 0; i < n; i++)
        if (t->completion[i]) sq += (t->adv[i] - mean) * (t->adv[i] - mean);
    if (rl_dp_sum(dp, &sq, 1, err)) return -1;
    double inv = 1.0 / sqrt(sq / (st[1] - 1) + 1e-8);
    for (size_t i = 0; i < n; i++)
        if (t->completion[i]) t->adv[i] = (float)((t->adv[i] - mean) * inv);
    return 0;
}

/* KL-shaped token rewards, GAE and returns of sequence s from its old values. */
static void seq_gae(rl_ppo *t, int s)
{
    float rew[t->max_seq_tokens];
    int n = t->results[s].n_ids, at = t->cu[s + 1] - n;
    rl_ppo_token_rewards(t->old_lp + at, t->ref ? t->ref_lp + at : NULL, n, t->scores[s], (float)t->kl.value, rew);
    rl_ppo_gae(rew, t->old_v + at, n, t->cfg.gamma, t->cfg.lam, t->adv + at, t->ret + at);
}

/* Rewards, GAE, returns (per sequence), then whitened advantages; the step's mean sequence KL
 * (k1 summed over a completion, over every rank's completions) into *seq_kl. */
static int advantages(rl_ppo *t, double *seq_kl, rl_err *err)
{
    double kl_sum = 0;
    for (int s = 0; s < t->n_seqs; s++) {
        int n = t->results[s].n_ids, at = t->cu[s + 1] - n;
        seq_gae(t, s);
        for (int k = 0; t->ref && k < n; k++) kl_sum += t->old_lp[at + k] - t->ref_lp[at + k];
    }
    double st[2] = {kl_sum, t->n_seqs};
    if (rl_dp_sum(t->cfg.optim.dp, st, 2, err)) return -1;
    *seq_kl = st[0] / st[1];
    return t->cfg.whiten_advantages ? whiten(t, err) : 0;
}

/* What the updates add up (weighted by tokens, over every mini-batch of every epoch). */
typedef struct acc {
    double pg_loss, pg_clip, ratio, vf_loss, vf_clip, ent, n_ent, mbs; /* mbs: mini-batch updates */
    rl_optim_stats os, vos;
} acc;

/* Packs the sequences seqs[0 .. n) of the batch into the p_* arrays (p_w: the completion
 * mask); returns their token count, and *n_comp their completion tokens. */
static int pack(rl_ppo *t, const int *seqs, int n, int *n_comp)
{
    int pos = 0, comp = 0;
    t->p_cu[0] = 0;
    for (int j = 0; j < n; j++) {
        int s = seqs[j], a = t->cu[s], len = t->cu[s + 1] - a;
        memcpy(t->p_tokens + pos, t->tokens + a, (size_t)len * sizeof(int32_t));
        for (int k = 0; k < len; k++) {
            t->p_old[pos + k] = t->old_lp[a + k];
            t->p_adv[pos + k] = t->adv[a + k];
            t->p_ret[pos + k] = t->ret[a + k];
            t->p_oldv[pos + k] = t->old_v[a + k];
            t->p_w[pos + k] = t->completion[a + k];
            comp += t->completion[a + k];
        }
        pos += len;
        t->p_cu[j + 1] = pos;
    }
    *n_comp = comp;
    return pos;
}

/* The clipped value loss of the values in h_buf (the packed tokens [off, off + n_tok) of the
 * mini-batch) on the host, its gradient times vf_coef to dev(D_DV). */
static int value_loss_grad(rl_ppo *t, size_t off, size_t n_tok, acc *a, rl_err *err)
{
    rl_ctx *ctx = t->policy->ctx;
    double frac = 0, wsum = 0;
    double loss = rl_ppo_value_loss(t->h_buf, t->p_oldv + off, t->p_ret + off, t->p_w + off, (int)n_tok,
                                    t->cfg.cliprange_value, t->h_dv, &frac);
    for (size_t i = 0; i < n_tok; i++) wsum += t->p_w[off + i], t->h_dv[i] *= t->cfg.vf_coef;
    a->vf_loss += loss;
    a->vf_clip += frac * wsum;
    if (rl_memcpy(ctx, dev(t, D_DV), t->h_dv, n_tok * sizeof(float), RL_H2D)) return ctx_fail(ctx, err);
    return 0;
}

/* The policy's part of one mini-batch (its micro-batches mb[0 .. n_mb]): loss, backward (with a
 * shared critic, the value loss's too). */
static int policy_pass(rl_ppo *t, const int *mb, int n_mb, int first_epoch, acc *a, rl_err *err)
{
    rl_ctx *ctx = t->policy->ctx;
    rl_policy_loss_params lp = {t->cfg.cliprange, t->cfg.cliprange, 0.0f};
    for (int b = 0; b < n_mb; b++) {
        size_t off = (size_t)t->p_cu[mb[b]], n_tok = (size_t)(t->p_cu[mb[b + 1]] - t->p_cu[mb[b]]), bytes = n_tok * 4;
        int ent_grad = t->cfg.entropy_coef > 0;
        if (forward(t, t->policy, acts_for(t, t->policy, err), t->p_tokens, t->p_cu, mb[b], mb[b + 1],
                    first_epoch || ent_grad, NULL, err))
            return -1;
        double st[RL_LOSS_N_STATS], wsum = 0;
        if (rl_memcpy(ctx, dev(t, D_OLD), t->p_old + off, bytes, RL_H2D) ||
            rl_memcpy(ctx, dev(t, D_ADV), t->p_adv + off, bytes, RL_H2D) ||
            rl_memcpy(ctx, dev(t, D_W), t->p_w + off, bytes, RL_H2D) ||
            rl_policy_loss(ctx, dev(t, D_DLOGP), st, dev(t, D_LOGP), dev(t, D_OLD), NULL, dev(t, D_ADV), dev(t, D_W),
                           (int)n_tok, &lp))
            return ctx_fail(ctx, err);
        for (size_t i = 0; i < n_tok; i++) wsum += t->p_w[off + i];
        a->pg_loss += st[RL_LOSS_STAT_LOSS];
        a->pg_clip += st[RL_LOSS_STAT_CLIPPED] * wsum;
        a->ratio += st[RL_LOSS_STAT_RATIO] * wsum;
        if (first_epoch) {
            if (rl_memcpy(ctx, t->h_buf, dev(t, D_ENT), bytes, RL_D2H)) return ctx_fail(ctx, err);
            for (size_t i = 0; i < n_tok; i++)
                if (t->p_w[off + i] > 0) a->ent += t->h_buf[i], a->n_ent++;
        }
        const float *dent = NULL;
        if (ent_grad) { /* d(-entropy_coef sum_t w_t H_t) / dH_t, w as the policy loss weighs tokens */
            for (size_t i = 0; i < n_tok; i++) t->h_dv[i] = -t->cfg.entropy_coef * t->p_w[off + i];
            if (rl_memcpy(ctx, dev(t, D_DENT), t->h_dv, bytes, RL_H2D)) return ctx_fail(ctx, err);
            dent = dev(t, D_DENT);
        }
        rl_value_head vh = shared_head(t, t->policy);
        if (vh.weight) { /* the shared critic's values and their loss: one backward for both */
            if (rl_memcpy(ctx, t->h_buf, dev(t, D_VAL), bytes, RL_D2H)) return ctx_fail(ctx, err);
            if (value_loss_grad(t, off, n_tok, a, err)) return -1;
        }
        if (rl_model_backward_value(t->policy, acts_held(t, t->policy), dev(t, D_DLOGP), dent, vh.weight ? &vh : NULL,
                                    dev(t, D_DV), err))
            return -1;
    }
    return 0;
}

/* The values of the packed sequences [j0, j1) (host, from offset off of the mini-batch) are
 * their old values: into old_v and p_oldv, then each sequence's GAE and returns (p_ret). */
static void take_old_values(rl_ppo *t, const float *values, int j0, int j1, size_t off)
{
    for (int j = j0; j < j1; j++) {
        int s = t->mine[j], len = t->cu[s + 1] - t->cu[s];
        size_t at = (size_t)t->p_cu[j], bytes = (size_t)len * sizeof(float);
        memcpy(t->old_v + t->cu[s], values + (at - off), bytes);
        memcpy(t->p_oldv + at, values + (at - off), bytes);
        seq_gae(t, s);
        memcpy(t->p_ret + at, t->ret + t->cu[s], bytes);
    }
}

/* The value model's part of one mini-batch: values, clipped loss (host), backward. fresh: the
 * value model has not changed since the rollout (the first pass of a single mini-batch), so
 * these values are the old values (take_old_values; the clip is then inactive, as in PPO's first
 * pass) and no separate forward made them. */
static int value_pass(rl_ppo *t, const int *mb, int n_mb, int fresh, acc *a, rl_err *err)
{
    rl_ctx *ctx = t->value->ctx;
    for (int b = 0; b < n_mb; b++) {
        size_t off = (size_t)t->p_cu[mb[b]], n_tok = (size_t)(t->p_cu[mb[b + 1]] - t->p_cu[mb[b]]), bytes = n_tok * 4;
        if (forward(t, t->value, acts_for(t, t->value, err), t->p_tokens, t->p_cu, mb[b], mb[b + 1], 0, NULL, err)) return -1;
        if (rl_memcpy(ctx, t->h_buf, dev(t, D_LOGP), bytes, RL_D2H)) return ctx_fail(ctx, err);
        if (fresh) take_old_values(t, t->h_buf, mb[b], mb[b + 1], off);
        if (value_loss_grad(t, off, n_tok, a, err)) return -1;
        if (rl_model_backward(t->value, acts_held(t, t->value), dev(t, D_DV), err)) return -1;
    }
    return 0;
}

static int policy_update(rl_ppo *t, int n_mb, int first_epoch, acc *a, rl_err *err)
{
    if (rl_dp_begin_update(t->cfg.optim.dp, n_mb, err) || policy_pass(t, t->mb_seqs, n_mb, first_epoch, a, err) ||
        rl_optim_step(&t->optim, t->policy->master, rl_model_working_copy(t->policy), t->policy->grads, 1.0, &a->os,
                      err))
        return rl_err_prefix(err, "policy update: ");
    return 0;
}

static int value_update(rl_ppo *t, int n_mb, int fresh, acc *a, rl_err *err)
{
    if (rl_dp_begin_update(t->cfg.value_optim.dp, n_mb, err) || value_pass(t, t->mb_seqs, n_mb, fresh, a, err) ||
        rl_optim_step(&t->value_optim, t->value->master, rl_model_working_copy(t->value), t->value->grads, 1.0, &a->vos,
                      err))
        return rl_err_prefix(err, "value update: ");
    return 0;
}

/* Packs this rank's members of a mini-batch, with the completion mask divided by comp (the
 * mini-batch's completion tokens on every rank); returns the micro-batch count. */
static int pack_scaled(rl_ppo *t, int n_mine, double comp)
{
    int n_comp, n_tok = pack(t, t->mine, n_mine, &n_comp);
    for (int i = 0; i < n_tok && comp > 0; i++) t->p_w[i] /= (float)comp;
    return n_mine > 0 ? cut(t, t->p_cu, n_mine, t->mb_seqs) : 0;
}

/* ppo_epochs passes of shuffled mini-batches, one update per model per mini-batch. The
 * permutation runs over every rank's sequences (rank r's s-th is r n + s, as one rank with the
 * whole step numbers them); each rank trains on the members of a mini-batch it holds, with the
 * loss normalised by the mini-batch's completion tokens on all ranks. Each model's backwards
 * and update come before the other's, so that every rank issues the same collectives in the
 * same order even when it holds none of a mini-batch.
 * fused (one mini-batch, no old values yet): the first pass trains the value model first, its
 * forward giving the old values (value_pass fresh), then the advantages come from them
 * (advantages: GAE, whitening, *seq_kl) before the policy's pass. The two models' updates are
 * independent of each other, so this order gives what the separate forward would. */
static int updates(rl_ppo *t, int train_policy, int fused, double *seq_kl, acc *a, rl_err *err)
{
    rl_dp *dp = t->cfg.optim.dp;
    int n = t->n_seqs, M = t->cfg.num_mini_batches, rank = rl_dp_rank(dp), N = n * rl_dp_world(dp);
    for (int s = 0; s < N; s++) t->perm[s] = s;
    for (int e = 0; e < t->cfg.ppo_epochs; e++) {
        for (int s = N - 1; s > 0; s--) { /* Fisher-Yates from the trainer's RNG */
            int j = (int)rl_rng_below(&t->state.rng, (uint32_t)s + 1), tmp = t->perm[s];
            t->perm[s] = t->perm[j], t->perm[j] = tmp;
        }
        for (int k = 0; k < M; k++) {
            int lo = (int)((long)N * k / M), hi = (int)((long)N * (k + 1) / M), n_mine = 0, n_comp = 0;
            for (int j = lo; j < hi; j++)
                if (t->perm[j] / n == rank) t->mine[n_mine++] = t->perm[j] - rank * n;
            for (int j = 0; j < n_mine; j++) n_comp += t->results[t->mine[j]].n_ids;
            double comp = n_comp;
            if (rl_dp_sum(dp, &comp, 1, err)) return -1;
            int n_mb = pack_scaled(t, n_mine, comp);
            a->mbs += 1; /* the stats are means over mini-batches */
            if (t->cfg.critic == RL_CRITIC_SHARED) { /* one pass trains both; the warmup drops the trunk's share */
                if (policy_pass(t, t->mb_seqs, n_mb, e == 0, a, err) ||
                    (train_policy ? rl_optim_step(&t->optim, t->policy->master, rl_model_working_copy(t->policy),
                                                  t->policy->grads, 1.0, &a->os, err)
                                  : rl_model_zero_grads(t->policy, err)))
                    return rl_err_prefix(err, "policy update: ");
                if (rl_shared_critic_step(&t->critic, &a->vos, err)) return rl_err_prefix(err, "value head update: ");
                continue;
            }
            if (fused && e == 0) {
                if (value_update(t, n_mb, 1, a, err) || advantages(t, seq_kl, err)) return -1;
                n_mb = pack_scaled(t, n_mine, comp); /* now with the advantages */
                if (train_policy && policy_update(t, n_mb, 1, a, err)) return -1;
                continue;
            }
            if ((train_policy && policy_update(t, n_mb, e == 0, a, err)) || value_update(t, n_mb, 0, a, err))
                return -1;
        }
    }
    return 0;
}

/* Device memory in use (CUDA), for the step's peak. */
static void sample_memory(rl_ctx *ctx, double *peak)
{
    size_t free_bytes, total;
    if (ctx->kind != RL_BACKEND_CUDA || rl_mem_info(ctx, &free_bytes, &total)) return;
    double used = (double)(total - free_bytes) / (1 << 30);
    if (used > *peak) *peak = used;
}

/* What the step's statistics are made of, summed over every rank. Over completion tokens: comp
 * (their count), k1 and k3 (sums of the estimators), ret, value, adv, res (return - old
 * value) and the squares of ret and res (for the explained variance). */
typedef struct step_sums {
    double seqs, len, tokens, score, score_sq, comp, k1, k3, ret, value, adv, res, ret_sq, res_sq;
} step_sums;

/* The step's sums (every rank), and the update's accumulators summed over the ranks. */
static int reduce_step(rl_ppo *t, acc *a, step_sums *s, rl_err *err)
{
    int n = t->n_seqs;
    size_t n_tok = (size_t)t->cu[n];
    s->seqs = n;
    s->tokens = (double)n_tok;
    for (int q = 0; q < n; q++) {
        s->len += t->results[q].n_ids;
        s->score += t->scores[q], s->score_sq += (double)t->scores[q] * t->scores[q];
    }
    for (size_t i = 0; i < n_tok; i++) {
        if (!t->completion[i]) continue;
        double r = t->ret[i], d = (double)t->ret[i] - t->old_v[i];
        s->comp++;
        s->ret += r, s->ret_sq += r * r, s->res += d, s->res_sq += d * d;
        s->value += t->old_v[i], s->adv += t->adv[i];
    }
    if (t->ref) {
        double k1, k3;
        rl_ppo_kl_estimates(t->old_lp, t->ref_lp, t->completion, n_tok, &k1, &k3);
        s->k1 = k1 * s->comp, s->k3 = k3 * s->comp;
    }
    enum { N_STEP = sizeof(step_sums) / sizeof(double) };
    double x[N_STEP + 7];
    memcpy(x, s, sizeof *s);
    double *u = x + N_STEP;
    u[0] = a->pg_loss, u[1] = a->pg_clip, u[2] = a->ratio, u[3] = a->vf_loss, u[4] = a->vf_clip, u[5] = a->ent;
    u[6] = a->n_ent;
    if (rl_dp_sum(t->cfg.optim.dp, x, N_STEP + 7, err)) return -1;
    memcpy(s, x, sizeof *s);
    a->pg_loss = u[0], a->pg_clip = u[1], a->ratio = u[2], a->vf_loss = u[3], a->vf_clip = u[4], a->ent = u[5];
    a->n_ent = u[6];
    return 0;
}

/* The critic's optimizer: the value model's or the shared head's. */
static rl_optim *value_optim(rl_ppo *t)
{
    return t->cfg.critic == RL_CRITIC_SHARED ? &t->critic.optim : &t->value_optim;
}

int rl_ppo_rescue(rl_ppo *t)
{
    if (t->optim.begun > t->optim_before || value_optim(t)->begun > t->value_optim_before) return -1;
    t->state = t->before;
    t->reward_stats = t->reward_stats_before;
    return 0;
}

int rl_ppo_step(rl_ppo *t, rl_step_stats *stats, rl_err *err)
{
    double t0 = rl_time_now(), peak = 0;
    int n = t->n_seqs, S = t->cfg.samples_per_prompt;
    t->before = t->state;
    t->reward_stats_before = t->reward_stats;
    t->optim_before = t->optim.begun;
    t->value_optim_before = value_optim(t)->begun;
    /* every rank walks the step's prompts for all ranks and keeps its block; its completions
     * take the Philox rows one rank with the whole step would give them */
    rl_dp *dp = t->cfg.optim.dp;
    int rank = rl_dp_rank(dp), P = t->cfg.prompts_per_step;
    rl_gen_params gen = t->cfg.gen;
    for (int i = 0; i < P * rl_dp_world(dp); i++) {
        int p = rl_order_next(&t->order, &t->state), b = i - rank * P;
        for (int g = 0; b >= 0 && b < P && g < S; g++) t->prompt_of[b * S + g] = p;
    }
    const rl_grpo_hooks *hk = &t->cfg.hooks;
    if (hk->prepare && hk->prepare(hk->user, t->state.step + 1, t->prompt_of, n, err))
        return rl_err_prefix(err, "ppo step %lld: ", (long long)t->state.step + 1);
    for (int s = 0; s < n; s++) {
        const rl_grpo_prompt *q = &t->data[t->prompt_of[s]];
        if (q->n_ids < 1 || q->n_ids > t->max_seq_tokens - t->cfg.gen.max_new_tokens)
            return rl_err_set(err, "ppo step %lld: prompt %d has %d tokens (at most %d)", (long long)t->state.step + 1,
                              t->prompt_of[s], q->n_ids, t->max_seq_tokens - t->cfg.gen.max_new_tokens);
        t->gen_prompts[s] = (rl_gen_prompt){q->ids, q->n_ids, &gen, rank * P * S + s};
    }
    gen.seed = rl_rng_u64(&t->state.rng);
    memset(t->results, 0, (size_t)n * sizeof *t->results);
    rl_engine_reset_prefix_cache(t->engine); /* the last update changed the weights */
    int rc = rl_engine_generate(t->engine, t->gen_prompts, n, &gen, t->results, NULL, NULL, err);
    double t_gen = rl_time_now() - t0, raw_mean = 0, seq_kl = 0, len = 0, k1 = 0, k3 = 0, ev = 0;
    sample_memory(t->policy->ctx, &peak);
    if (rc == 0) rc = score(t, &raw_mean, err);
    if (rc == 0) lay_out(t);
    rl_engine_release_pool(t->engine); /* the update's activations take its place */
    if (rc == 0) rc = make_acts(t, t->cu[n], err);
    int mb[n + 1], n_mb = rc == 0 ? cut(t, t->cu, n, mb) : 0;
    /* one mini-batch: the value model's first training forward gives the old values (updates) */
    int shared = t->cfg.critic == RL_CRITIC_SHARED;
    int fused = !shared && t->cfg.num_mini_batches == 1 && !t->cfg.old_values_pass;
    for (int b = 0; rc == 0 && b < n_mb; b++) {
        if (t->ref) rc = forward(t, t->ref, acts_for(t, t->ref, err), t->tokens, t->cu, mb[b], mb[b + 1], 0, t->ref_lp, err);
        if (rc == 0 && shared) /* the trunk without the lm_head, unless the old log-probs are wanted too */
            rc = forward_to(t, t->policy, acts_for(t, t->policy, err), t->tokens, t->cu, mb[b], mb[b + 1],
                            t->cfg.recompute_old_logp, 0, t->cfg.recompute_old_logp ? t->old_lp : NULL, t->old_v, err);
        else if (rc == 0 && !fused)
            rc = forward(t, t->value, acts_for(t, t->value, err), t->tokens, t->cu, mb[b], mb[b + 1], 0, t->old_v, err);
        if (rc == 0 && t->cfg.recompute_old_logp && !shared)
            rc = forward(t, t->policy, acts_for(t, t->policy, err), t->tokens, t->cu, mb[b], mb[b + 1], 0, t->old_lp, err);
    }
    double t_prep = rl_time_now();
    acc a = {0};
    int train_policy = t->state.step >= t->cfg.critic_warmup;
    double kl_coef_used = t->kl.value;
    if (rc == 0) {
        if (!fused) rc = advantages(t, &seq_kl, err);
        if (rc == 0) rc = updates(t, train_policy, fused, &seq_kl, &a, err);
        sample_memory(t->policy->ctx, &peak); /* the update's activations (the pool is released) */
    }
    step_sums sums = {0};
    if (rc == 0) rc = reduce_step(t, &a, &sums, err);
    int lengths[n];
    for (int s = 0; s < n; s++) lengths[s] = t->results[s].n_ids;
    /* samples with the scores as used (after penalty, normalisation, clip); advantages are per token */
    int logged = rc == 0 ? rl_runlog_rl_step(t->log, &(rl_runlog_rl){t->state.step + 1, t->items, t->scores, NULL,
                                                                      lengths, n, S, t->reward}, err)
                         : 0;
    for (int s = 0; s < n; s++) rl_gen_result_free(&t->results[s]);
    free_acts(t); /* the next rollout's KV pool takes their place */
    if (rc != 0) return rl_err_prefix(err, "ppo step %lld: ", (long long)t->state.step + 1);
    sample_memory(t->policy->ctx, &peak);
    rl_kl_ctl_update(&t->kl, seq_kl, sums.seqs);
    t->state.step++;
    if (logged != 0) { /* the step itself is done: a rescue keeps it */
        t->before = t->state;
        t->reward_stats_before = t->reward_stats;
        t->optim_before = t->optim.begun;
        t->value_optim_before = value_optim(t)->begun;
        return rl_err_prefix(err, "ppo step %lld: ", (long long)t->state.step);
    }
    double dt = rl_time_now() - t0, upd = a.mbs > 0 ? a.mbs : 1, n_seqs = sums.seqs, comp = sums.comp;
    if (t->ref && comp > 0) k1 = sums.k1 / comp, k3 = sums.k3 / comp;
    double vr = sums.ret_sq - sums.ret * sums.ret / comp, vd = sums.res_sq - sums.res * sums.res / comp;
    ev = comp >= 2 && vr > 0 ? 1 - vd / vr : 0;
    len = sums.len;
    memset(stats, 0, sizeof *stats);
    stats->step = t->state.step;
    stats->loss = train_policy ? a.pg_loss / upd : 0;
    stats->clip_frac = a.pg_clip / upd;
    stats->ratio_mean = train_policy ? a.ratio / upd : 1;
    stats->kl = k1;
    stats->has_rewards = 1;
    double used_mean = sums.score / n_seqs, used_var = sums.score_sq / n_seqs - used_mean * used_mean;
    stats->reward_mean = raw_mean;
    stats->reward_std = sqrt(used_var > 0 ? used_var : 0);
    stats->completion_len = len / n_seqs;
    stats->lr = a.os.lr;
    stats->grad_norm = a.os.grad_norm;
    stats->tokens = sums.tokens;
    stats->seconds = dt;
    stats->gen_seconds = t_gen;
    stats->tokens_per_s = dt > 0 ? sums.tokens / dt : 0;
    stats->has_ppo = 1;
    stats->value_loss = a.vf_loss / upd;
    stats->vf_clip_frac = a.vf_clip / upd;
    stats->value_grad_norm = a.vos.grad_norm;
    stats->explained_var = ev;
    stats->kl_k3 = k3;
    stats->kl_coef = kl_coef_used;
    stats->return_mean = comp > 0 ? sums.ret / comp : 0;
    stats->value_mean = comp > 0 ? sums.value / comp : 0;
    stats->adv_mean = comp > 0 ? sums.adv / comp : 0;
    stats->entropy = a.n_ent > 0 ? a.ent / a.n_ent : 0;
    stats->reward_used_mean = used_mean;
    stats->update_seconds = rl_time_now() - t_prep;
    stats->peak_mem_gib = peak;
    return 0;
}
