/* grpo.c — see grpo.h. Per step, everything about the batch is laid out once on the host
 * (tokens packed in sequence order, and per token: old log-prob, reference log-prob,
 * advantage, weight; prompt tokens weigh 0), then each micro-batch is a contiguous slice. */
#include "train/grpo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "core/timer.h"
#include "train/dp.h"
#include "train/runlog.h"
#include "train/ppo_math.h"

enum { D_LOGP, D_OLD, D_REF, D_ADV, D_W, D_DLOGP, N_DEV };

rl_grpo_config rl_grpo_defaults(void)
{
    rl_grpo_config c = {0};
    c.prompts_per_step = 8;
    c.group_size = 8;
    c.gen = rl_gen_params_default();
    c.gen.max_new_tokens = 256;
    c.clip_low = 0.2f;
    c.clip_high = 0.2f;
    c.kl_beta = 0.0f;
    c.loss_norm = RL_NORM_SEQUENCE;
    c.scale_std = 1;
    c.mu = 1;
    c.max_tokens = 8192;
    c.share_prompts = 1;
    c.shuffle = 1;
    c.seed = 1234;
    c.engine = rl_engine_options_default();
    c.optim = rl_optim_defaults();
    c.optim.schedule.peak = 1e-6;
    c.optim.weight_decay = 0.0;
    return c;
}

const char *const rl_grpo_variant_names[] = {"grpo", "dapo", "dr_grpo", "rloo", "reinforce_pp", NULL};

void rl_grpo_variant(rl_grpo_config *c, rl_grpo_variant_kind variant, unsigned keep)
{
    if (variant == RL_GRPO_VARIANT_DAPO) {
        if (!(keep & RL_GRPO_KEEP_CLIP_HIGH)) c->clip_high = 0.28f;
        if (!(keep & RL_GRPO_KEEP_LOSS_NORM)) c->loss_norm = RL_NORM_TOKEN;
    } else if (variant == RL_GRPO_VARIANT_DR_GRPO) {
        if (!(keep & RL_GRPO_KEEP_LOSS_NORM)) c->loss_norm = RL_NORM_DR_GRPO;
        if (!(keep & RL_GRPO_KEEP_SCALE_STD)) c->scale_std = 0;
    } else if (variant == RL_GRPO_VARIANT_RLOO || variant == RL_GRPO_VARIANT_REINFORCE_PP) {
        c->advantage = variant == RL_GRPO_VARIANT_RLOO ? RL_ADV_RLOO : RL_ADV_REINFORCE_PP;
        if (!(keep & RL_GRPO_KEEP_LOSS_NORM)) c->loss_norm = RL_NORM_TOKEN;
    }
}

void rl_grpo_free(rl_grpo *t)
{
    rl_engine_free(t->engine);
    rl_acts_free(t->acts);
    rl_acts_free(t->ref_acts);
    rl_optim_free(&t->optim);
    rl_order_free(&t->order);
    if (t->dev) rl_free(t->model->ctx, t->dev);
    free(t->results);
    free(t->gen_prompts);
    free(t->items);
    free(t->prompt_of);
    free(t->comp_len);
    free(t->rewards);
    free(t->adv);
    free(t->seq_w);
    free(t->tokens);
    free(t->cu);
    free(t->old_lp);
    free(t->ref_lp);
    free(t->tok_adv);
    free(t->tok_w);
    free(t->rollout_lp);
    free(t->train_lp);
    free(t->completion);
    free(t->own);
    free(t->view.tokens);
    free(t->view.full_of);
    free(t->view.cu);
    free(t->view.prefix_of);
    free(t->view.vals);
    memset(t, 0, sizeof *t);
}

static int check_config(const rl_grpo_config *c, const rl_model *ref, rl_err *err)
{
    if (c->prompts_per_step < 1 || c->group_size < 2)
        return rl_err_set(err, "grpo: prompts_per_step must be >= 1 and group_size >= 2 (got %d, %d)",
                          c->prompts_per_step, c->group_size);
    if (!(c->gen.sample.temperature > 0))
        return rl_err_set(err, "grpo: sampling temperature must be > 0, got %g", c->gen.sample.temperature);
    if (c->gen.max_new_tokens < 1) return rl_err_set(err, "grpo: max_new_tokens must be >= 1");
    if (c->mu < 1) return rl_err_set(err, "grpo: mu (updates per batch) must be >= 1, got %d", c->mu);
    if (c->kl_beta < 0) return rl_err_set(err, "grpo: kl_beta must be >= 0, got %g", c->kl_beta);
    if (c->kl_beta > 0 && !ref) return rl_err_set(err, "grpo: kl_beta > 0 needs a reference model");
    if (!(c->tis_cap >= 0)) return rl_err_set(err, "grpo: tis_cap must be >= 0 (0 = off), got %g", c->tis_cap);
    return 0;
}

int rl_grpo_create(rl_grpo *t, rl_model *m, rl_model *ref, const rl_tokenizer *tok,
                   rl_reward *reward, const rl_grpo_prompt *data, int n_data,
                   const rl_grpo_config *cfg, rl_err *err)
{
    memset(t, 0, sizeof *t);
    if (check_config(cfg, ref, err) != 0) return -1;
    if (!tok) return rl_err_set(err, "grpo: a tokenizer is needed (rewards read completion text)");
    if (!reward && !cfg->hooks.episode) return rl_err_set(err, "grpo: a reward is needed (or episodes that score themselves)");
    t->model = m;
    t->ref = cfg->kl_beta > 0 ? ref : NULL;
    t->reward = reward;
    t->data = data;
    t->n_data = n_data;
    t->cfg = *cfg;
    int longest = 0;
    for (int i = 0; i < n_data; i++) {
        if (data[i].n_ids < 1) return rl_err_set(err, "grpo: prompt %d is empty", i);
        for (int k = 0; k < data[i].n_ids; k++)
            if (data[i].ids[k] < 0 || data[i].ids[k] >= m->config.vocab_size)
                return rl_err_set(err, "grpo: prompt %d token %d is id %d, outside the vocabulary (%d)", i, k,
                                  data[i].ids[k], m->config.vocab_size);
        if (data[i].n_ids > longest) longest = data[i].n_ids;
    }
    if (cfg->max_prompt_tokens > longest) longest = cfg->max_prompt_tokens;
    int after = cfg->max_completion_tokens > cfg->gen.max_new_tokens ? cfg->max_completion_tokens : cfg->gen.max_new_tokens;
    t->max_seq_tokens = longest + after;
    if (t->max_seq_tokens > cfg->max_tokens)
        return rl_err_set(err, "grpo: the longest prompt (%d tokens) + %s (%d) exceeds the "
                               "micro-batch budget max_tokens = %d (raise --max-tokens, or lower --max-prompt-len / --max-new-tokens)",
                          longest, after > cfg->gen.max_new_tokens ? "the episode length" : "max_new_tokens", after,
                          cfg->max_tokens);
    int n = t->n_seqs = cfg->prompts_per_step * cfg->group_size;
    size_t bt = (size_t)n * t->max_seq_tokens;
    t->results = calloc((size_t)n, sizeof *t->results);
    t->gen_prompts = calloc((size_t)n, sizeof *t->gen_prompts);
    t->items = calloc((size_t)n, sizeof *t->items);
    t->prompt_of = calloc((size_t)n, sizeof(int));
    t->comp_len = calloc((size_t)n, sizeof(int));
    t->rewards = calloc((size_t)n, sizeof(float));
    t->adv = calloc((size_t)n, sizeof(float));
    t->seq_w = calloc((size_t)n, sizeof(float));
    t->tokens = malloc(bt * sizeof(int32_t));
    t->cu = malloc((size_t)(n + 1) * sizeof(int32_t));
    t->old_lp = malloc(bt * sizeof(float));
    t->ref_lp = malloc(bt * sizeof(float));
    t->tok_adv = malloc(bt * sizeof(float));
    t->tok_w = malloc(bt * sizeof(float));
    t->rollout_lp = malloc(bt * sizeof(float));
    t->train_lp = malloc(bt * sizeof(float));
    t->completion = malloc(bt);
    t->view.tokens = malloc((size_t)cfg->max_tokens * sizeof(int32_t));
    t->view.full_of = malloc((size_t)cfg->max_tokens * sizeof(int32_t));
    t->view.cu = malloc((size_t)(2 * n + 1) * sizeof(int32_t));
    t->view.prefix_of = malloc((size_t)(2 * n + 1) * sizeof(int32_t));
    t->view.vals = malloc((size_t)5 * cfg->max_tokens * sizeof(float));
    if (cfg->hooks.episode && !(t->own = malloc((size_t)n * after))) {
        rl_grpo_free(t);
        return rl_err_oom(err, "grpo episode masks", (size_t)n * after);
    }
    t->dev = rl_alloc(m->ctx, (size_t)N_DEV * cfg->max_tokens * sizeof(float));
    if (!t->results || !t->gen_prompts || !t->items || !t->prompt_of || !t->comp_len || !t->rewards ||
        !t->adv || !t->seq_w || !t->tokens || !t->cu || !t->old_lp || !t->ref_lp || !t->tok_adv ||
        !t->tok_w || !t->rollout_lp || !t->train_lp || !t->completion || !t->dev || !t->view.tokens ||
        !t->view.full_of || !t->view.cu || !t->view.prefix_of || !t->view.vals) {
        rl_grpo_free(t);
        return rl_err_oom(err, "grpo buffers", bt * 24);
    }
    rl_rng_init(&t->state.rng, cfg->seed);
    rl_acts_mode mode = cfg->recompute ? RL_ACTS_TRAIN_CHECKPOINT : RL_ACTS_TRAIN;
    /* the KV pool holds this rank's step (n sequences of at most max_seq_tokens), not a fraction
     * of the free memory: the update needs the rest */
    rl_engine_options eng = rl_engine_options_for_training(&cfg->engine, n, t->max_seq_tokens);
    if (rl_order_create(&t->order, n_data, cfg->seed, cfg->shuffle, err) ||
        rl_engine_create(&t->engine, m, tok, &eng, err) || rl_dp_prepare(cfg->optim.dp, m, err) ||
        rl_acts_create(&t->acts, m, cfg->max_tokens, mode, err) ||
        (t->ref && rl_acts_create(&t->ref_acts, t->ref, cfg->max_tokens, RL_ACTS_INFER, err)) ||
        rl_optim_create(&t->optim, m->ctx, m->params, m->n_params, m->n_elems, &cfg->optim, err)) {
        rl_grpo_free(t);
        return -1;
    }
    return 0;
}

static float *dev(rl_grpo *t, int which) { return t->dev + (size_t)which * t->cfg.max_tokens; }

/* Whether sequence s and the next one (both in [s0, s1)) repeat one prompt of two or more tokens
 * (share_prompts). */
static int same_prompt_next(const rl_grpo *t, int s, int s1)
{
    if (!t->cfg.share_prompts || s + 1 >= s1 || t->prompt_of[s] != t->prompt_of[s + 1]) return 0;
    int P = t->data[t->prompt_of[s]].n_ids;
    return P >= 2 && memcmp(t->tokens + t->cu[s], t->tokens + t->cu[s + 1], (size_t)P * sizeof(int32_t)) == 0;
}

/* Sequences [s0, s1) as the model runs them (t->view): each run of sequences that repeat one
 * prompt becomes the prompt without its last token once, then each sequence from its last
 * prompt token on (grpo.h); the others stay whole. Row r holds the step layout's token
 * full_of[r] (a prefix row, the first sequence's). */
static void build_view(rl_grpo *t, int s0, int s1)
{
    struct rl_grpo_view *v = &t->view;
    int r = 0, g = 0, prefix = -1;
    v->cu[0] = 0;
    for (int s = s0; s < s1; s++) {
        int from = t->cu[s], P = t->data[t->prompt_of[s]].n_ids;
        if (prefix >= 0 || same_prompt_next(t, s, s1)) {
            if (prefix < 0) { /* the run's prefix: its first sequence's prompt but the last token */
                for (int i = from; i < from + P - 1; i++, r++) v->tokens[r] = t->tokens[i], v->full_of[r] = i;
                v->prefix_of[g] = -1;
                prefix = g++;
                v->cu[g] = r;
            }
            from += P - 1;
        }
        for (int i = from; i < t->cu[s + 1]; i++, r++) v->tokens[r] = t->tokens[i], v->full_of[r] = i;
        v->prefix_of[g] = from > t->cu[s] ? prefix : -1;
        v->cu[++g] = r;
        if (!same_prompt_next(t, s, s1)) prefix = -1;
    }
    v->n_rows = r;
    v->n_segs = g;
}

/* Sequences [s0, s1) as a packed micro-batch (build_view): forward of model into dev(D_LOGP),
 * per row of the view, and, when host_out is not NULL, the log-probs at the step layout's token
 * offsets there (0 for prompt tokens without a row or at a row sequence's start). */
static int forward_slice(rl_grpo *t, rl_model *m, rl_acts *a, int s0, int s1, float *host_out, rl_err *err)
{
    build_view(t, s0, s1);
    struct rl_grpo_view *v = &t->view;
    float inv_t = 1.0f / t->cfg.gen.sample.temperature, *lp = v->vals + 4 * (size_t)t->cfg.max_tokens;
    if (rl_model_forward_shared(m, a, v->tokens, v->cu, v->prefix_of, v->n_segs, inv_t, dev(t, D_LOGP), NULL, err))
        return -1;
    if (!host_out) return 0;
    if (rl_memcpy(m->ctx, lp, dev(t, D_LOGP), (size_t)v->n_rows * sizeof(float), RL_D2H) != 0) {
        rl_ctx_error(m->ctx, err);
        return rl_err_prefix(err, "grpo: ");
    }
    memset(host_out + t->cu[s0], 0, (size_t)(t->cu[s1] - t->cu[s0]) * sizeof(float));
    for (int r = 0; r < v->n_rows; r++) host_out[v->full_of[r]] = lp[r];
    return 0;
}

/* Tokens after the prompt an episode may have (the stride of t->own). */
static int episode_stride(const rl_grpo *t)
{
    int after = t->cfg.max_completion_tokens;
    return after > t->cfg.gen.max_new_tokens ? after : t->cfg.gen.max_new_tokens;
}

/* Fills cu, tokens and the per-token arrays from the rollout; returns the micro-batch
 * boundaries (sequence indices) in mb[0 .. *n_mb]. */
static void lay_out(rl_grpo *t, int *mb, int *n_mb)
{
    int n = t->n_seqs, pos = 0;
    t->cu[0] = 0;
    for (int s = 0; s < n; s++) {
        const rl_grpo_prompt *p = &t->data[t->prompt_of[s]];
        const rl_gen_result *r = &t->results[s];
        memcpy(t->tokens + pos, p->ids, (size_t)p->n_ids * sizeof(int32_t));
        memcpy(t->tokens + pos + p->n_ids, r->ids, (size_t)r->n_ids * sizeof(int32_t));
        for (int k = 0; k < p->n_ids; k++) {
            t->old_lp[pos + k] = t->ref_lp[pos + k] = t->tok_adv[pos + k] = t->tok_w[pos + k] = 0;
            t->rollout_lp[pos + k] = 0;
            t->completion[pos + k] = 0;
        }
        const unsigned char *own = t->own ? t->own + (size_t)s * episode_stride(t) : NULL;
        for (int k = 0; k < r->n_ids; k++) {
            int i = pos + p->n_ids + k, mine = !own || own[k];
            t->old_lp[i] = t->rollout_lp[i] = mine ? r->logprobs[k] : 0;
            t->ref_lp[i] = 0;
            t->tok_adv[i] = mine ? t->adv[s] : 0;
            t->tok_w[i] = mine ? t->seq_w[s] : 0;
            t->completion[i] = (unsigned char)mine;
        }
        pos += p->n_ids + r->n_ids;
        t->cu[s + 1] = pos;
    }
    /* A micro-batch's attention key slabs hold its sequences whole, plus, with share_prompts, the
     * prompt but its last token once more per prompt (its prefix sequence): at most max_tokens. */
    int k = 0, rows = 0;
    mb[k++] = 0;
    for (int s = 0; s < n; s++) {
        int len = t->cu[s + 1] - t->cu[s], first = s == mb[k - 1] || t->prompt_of[s] != t->prompt_of[s - 1];
        int extra = t->cfg.share_prompts && first ? t->data[t->prompt_of[s]].n_ids - 1 : 0;
        if (s > mb[k - 1] && rows + len + extra > t->cfg.max_tokens) {
            mb[k++] = s;
            rows = 0;
            extra = t->cfg.share_prompts ? t->data[t->prompt_of[s]].n_ids - 1 : 0;
        }
        rows += len + extra;
    }
    mb[k] = n;
    *n_mb = k;
}

/* Rewards, advantages and loss weights of this rank's sequences; reward and length statistics
 * of the whole step (all ranks). */
static int score(rl_grpo *t, double *mean, double *std, double *mean_len, double *n_errors, rl_err *err)
{
    int n = t->n_seqs;
    for (int s = 0; s < n; s++) {
        const rl_grpo_prompt *p = &t->data[t->prompt_of[s]];
        t->items[s] = (rl_reward_item){p->text, t->results[s].text, p->answer, p->fields};
        t->comp_len[s] = t->results[s].n_ids;
        if (t->own) { /* episodes: the loss counts the model's own tokens */
            const unsigned char *own = t->own + (size_t)s * episode_stride(t);
            t->comp_len[s] = 0;
            for (int k = 0; k < t->results[s].n_ids; k++) t->comp_len[s] += own[k];
        }
    }
    if (t->reward) rl_reward_set_step(t->reward, t->state.step + 1);
    if (!t->cfg.hooks.episode && rl_reward_score(t->reward, t->items, n, t->rewards, err) != 0) return -1;
    double sum = 0, sq = 0, len = 0;
    for (int s = 0; s < n; s++) sum += t->rewards[s], len += t->comp_len[s];
    double local_mean = sum / n;
    for (int s = 0; s < n; s++) sq += (t->rewards[s] - local_mean) * (t->rewards[s] - local_mean);
    /* across ranks: count, sum, squared deviations and len; the deviations combine as
     * M2 = sum of M2_r + sum of n_r mean_r^2 - n mean^2 (Chan et al. 1979) */
    const rl_reward_failure *failures;
    double st[6] = {n, sum, sq, n * local_mean * local_mean, len, t->reward ? rl_reward_failures(t->reward, &failures) : 0};
    rl_dp *dp = t->cfg.optim.dp;
    if (rl_dp_sum(dp, st, 6, err) != 0) return -1;
    *n_errors = st[5];
    *mean = st[1] / st[0];
    double m2 = dp ? st[2] + st[3] - st[0] * *mean * *mean : st[2];
    *std = sqrt((m2 > 0 ? m2 : 0) / st[0]);
    *mean_len = st[4] / st[0];
    if (t->cfg.advantage == RL_ADV_RLOO) rl_rloo_advantages(t->rewards, t->cfg.prompts_per_step, t->cfg.group_size, t->adv);
    else rl_grpo_advantages(t->rewards, t->cfg.prompts_per_step, t->cfg.group_size, t->cfg.scale_std, t->adv);
    rl_grpo_weights(t->cfg.loss_norm, t->comp_len, n, t->cfg.gen.max_new_tokens, t->seq_w);
    /* the normalisers are the step's, over every rank's sequences (grpo_math.h) */
    double global = t->cfg.loss_norm == RL_NORM_TOKEN ? (len > 0 ? len / st[4] : 0) : st[0] > 0 ? n / st[0] : 0;
    if (dp)
        for (int s = 0; s < n; s++) t->seq_w[s] = (float)(t->seq_w[s] * global);
    return 0;
}

/* What the passes over a step's batch add up. */
typedef struct update_acc {
    double loss, kl, clipped, ratio, wsum; /* weight-averaged stats times their weight sum */
    double diff_sum, diff_max, tis_sum;    /* over completion tokens, first pass */
    long n_completion;
} update_acc;

/* After the first pass's forward of tokens [off, off + n_tok): the trainer's log-probs, their
 * distance to the sampler's, and with truncated importance sampling the new old log-probs and
 * the tokens' weights, min(exp(old - rollout), cap). */
static int first_pass(rl_grpo *t, update_acc *a, rl_err *err)
{
    rl_ctx *ctx = t->model->ctx;
    const struct rl_grpo_view *v = &t->view;
    float *lp = v->vals + 4 * (size_t)t->cfg.max_tokens;
    if (rl_memcpy(ctx, lp, dev(t, D_LOGP), (size_t)v->n_rows * sizeof(float), RL_D2H)) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "grpo: ");
    }
    for (int r = 0; r < v->n_rows; r++) {
        int i = v->full_of[r];
        if (!t->completion[i]) continue;
        t->train_lp[i] = lp[r];
        double d = (double)t->train_lp[i] - t->rollout_lp[i];
        a->diff_sum += fabs(d);
        if (fabs(d) > a->diff_max) a->diff_max = fabs(d);
        a->n_completion++;
        if (t->cfg.tis_cap > 0) {
            double w = exp(d) < t->cfg.tis_cap ? exp(d) : t->cfg.tis_cap;
            t->old_lp[i] = t->train_lp[i];
            t->tok_w[i] *= (float)w;
            a->tis_sum += w;
        }
    }
    return 0;
}

/* The step's totals over every rank (a no-op with one): sums, and the largest mismatch. */
static int reduce_acc(rl_dp *dp, update_acc *a, double *tokens, rl_err *err)
{
    double sums[9] = {a->loss, a->kl, a->clipped, a->ratio, a->wsum, a->diff_sum, a->tis_sum, (double)a->n_completion,
                      *tokens};
    if (rl_dp_sum(dp, sums, 9, err) || rl_dp_max(dp, &a->diff_max, 1, err)) return -1;
    *a = (update_acc){.loss = sums[0], .kl = sums[1], .clipped = sums[2], .ratio = sums[3], .wsum = sums[4],
                      .diff_sum = sums[5], .diff_max = a->diff_max, .tis_sum = sums[6], .n_completion = (long)sums[7]};
    *tokens = sums[8];
    return 0;
}

/* One pass over the micro-batches: loss, backward, then the optimizer update. */
static int update(rl_grpo *t, int pass, const int *mb, int n_mb, update_acc *a, rl_optim_stats *os, rl_err *err)
{
    rl_ctx *ctx = t->model->ctx;
    /* REINFORCE++ puts the KL in the rewards, not in the loss */
    float beta = t->cfg.advantage == RL_ADV_REINFORCE_PP ? 0.0f : t->cfg.kl_beta;
    rl_policy_loss_params lp = {t->cfg.clip_low, t->cfg.clip_high, beta};
    if (rl_dp_begin_update(t->cfg.optim.dp, n_mb, err) != 0) return -1;
    for (int b = 0; b < n_mb; b++) {
        if (forward_slice(t, t->model, t->acts, mb[b], mb[b + 1], NULL, err) != 0) return -1;
        if (pass == 0 && first_pass(t, a, err)) return -1;
        /* the loss's inputs per row of the view (a prefix row's are its prompt token's: 0) */
        const struct rl_grpo_view *v = &t->view;
        size_t n_rows = (size_t)v->n_rows, stride = (size_t)t->cfg.max_tokens, bytes = n_rows * sizeof(float);
        float *old = v->vals, *ref = old + stride, *adv = ref + stride, *w = adv + stride;
        double wsum = 0;
        for (size_t r = 0; r < n_rows; r++) {
            int i = v->full_of[r];
            old[r] = t->old_lp[i], ref[r] = t->ref_lp[i], adv[r] = t->tok_adv[i], w[r] = t->tok_w[i];
            wsum += w[r];
        }
        double st[RL_LOSS_N_STATS];
        if (rl_memcpy(ctx, dev(t, D_OLD), old, bytes, RL_H2D) || rl_memcpy(ctx, dev(t, D_REF), ref, bytes, RL_H2D) ||
            rl_memcpy(ctx, dev(t, D_ADV), adv, bytes, RL_H2D) || rl_memcpy(ctx, dev(t, D_W), w, bytes, RL_H2D) ||
            rl_policy_loss(ctx, dev(t, D_DLOGP), st, dev(t, D_LOGP), dev(t, D_OLD), dev(t, D_REF), dev(t, D_ADV),
                           dev(t, D_W), (int)n_rows, &lp) != 0) {
            rl_ctx_error(ctx, err);
            return rl_err_prefix(err, "grpo: ");
        }
        a->loss += st[RL_LOSS_STAT_LOSS];
        a->kl += st[RL_LOSS_STAT_KL] * wsum;
        a->clipped += st[RL_LOSS_STAT_CLIPPED] * wsum;
        a->ratio += st[RL_LOSS_STAT_RATIO] * wsum;
        a->wsum += wsum;
        if (rl_model_backward(t->model, t->acts, dev(t, D_DLOGP), err) != 0) return -1;
    }
    if (!isfinite(a->loss))
        return rl_err_set(err, "the loss is %g (non-finite) in update %d of %d; weights left unchanged", a->loss,
                          pass + 1, t->cfg.mu);
    return rl_optim_step(&t->optim, t->model->master, rl_model_working_copy(t->model), t->model->grads, 1.0, os, err);
}

int rl_grpo_step(rl_grpo *t, rl_step_stats *stats, rl_err *err)
{
    double t0 = rl_time_now();
    t->before = t->state;
    t->optim_before = t->optim.step;
    int n = t->n_seqs, G = t->cfg.group_size, P = t->cfg.prompts_per_step;
    /* Every rank walks the step's prompts for all ranks (prompts_per_step each) and keeps its
     * own block, so groups stay whole and the data order is the same for any rank count. */
    rl_dp *dp = t->cfg.optim.dp;
    int rank = rl_dp_rank(dp);
    for (int i = 0; i < P * rl_dp_world(dp); i++) {
        int p = rl_order_next(&t->order, &t->state), b = i - rank * P;
        for (int g = 0; b >= 0 && b < P && g < G; g++) t->prompt_of[b * G + g] = p;
    }
    const rl_grpo_hooks *hk = &t->cfg.hooks;
    if (hk->prepare && hk->prepare(hk->user, t->state.step + 1, t->prompt_of, n, err))
        return rl_err_prefix(err, "grpo step %lld: ", (long long)t->state.step + 1);
    for (int s = 0; s < n; s++) {
        const rl_grpo_prompt *q = &t->data[t->prompt_of[s]];
        if (q->n_ids < 1 || q->n_ids > t->max_seq_tokens - episode_stride(t))
            return rl_err_set(err, "grpo step %lld: prompt %d has %d tokens (at most %d)", (long long)t->state.step + 1,
                              t->prompt_of[s], q->n_ids, t->max_seq_tokens - episode_stride(t));
        t->gen_prompts[s] = (rl_gen_prompt){.ids = q->ids, .n_ids = q->n_ids};
    }
    rl_gen_params gen = t->cfg.gen;
    /* one draw per step on every rank (the RNG state stays the same everywhere); ranks sample
     * with different seeds */
    gen.seed = rl_rng_u64(&t->state.rng) ^ ((uint64_t)rank * 0x9e3779b97f4a7c15ull);
    memset(t->results, 0, (size_t)n * sizeof *t->results);
    rl_engine_reset_prefix_cache(t->engine); /* the last update changed the weights */
    int rc = hk->episode ? hk->episode(hk->user, t->engine, t->state.step + 1, t->gen_prompts, t->prompt_of, n, &gen, t->results, t->own,
                                       episode_stride(t), t->rewards, err)
                         : rl_engine_generate(t->engine, t->gen_prompts, n, &gen, t->results, NULL, NULL, err);
    double t_gen = rl_time_now() - t0;
    double r_mean = 0, r_std = 0, mean_len = 0, n_errors = 0;
    update_acc a = {0};
    int mb[n + 1], n_mb = 0;
    rl_optim_stats os = {0};
    if (rc == 0) rc = score(t, &r_mean, &r_std, &mean_len, &n_errors, err);
    if (rc == 0) lay_out(t, mb, &n_mb);
    for (int b = 0; rc == 0 && b < n_mb; b++) {
        if (t->ref) rc = forward_slice(t, t->ref, t->ref_acts, mb[b], mb[b + 1], t->ref_lp, err);
        if (rc == 0 && t->cfg.recompute_old_logp)
            rc = forward_slice(t, t->model, t->acts, mb[b], mb[b + 1], t->old_lp, err);
    }
    if (rc == 0 && t->ref) /* the reference scores completion tokens only, like the rest */
        for (int i = 0; i < t->cu[n]; i++)
            if (t->tok_w[i] == 0) t->ref_lp[i] = 0;
    if (rc == 0 && t->cfg.advantage == RL_ADV_REINFORCE_PP) { /* normalised over every rank's tokens */
        double sums[3];
        rl_reinforce_pp_returns(t->old_lp, t->ref ? t->ref_lp : NULL, t->completion, t->cu, n, t->rewards,
                                t->cfg.kl_beta, t->tok_adv, sums);
        rc = rl_dp_sum(dp, sums, 3, err);
        if (rc == 0) rl_reinforce_pp_normalise(t->completion, (size_t)t->cu[n], sums, t->tok_adv);
    }
    for (int it = 0; rc == 0 && it < t->cfg.mu; it++) rc = update(t, it, mb, n_mb, &a, &os, err);
    double tokens = rc == 0 ? t->cu[n] : 0;
    if (rc == 0) rc = reduce_acc(dp, &a, &tokens, err);
    int logged = rc == 0 ? rl_runlog_rl_step(t->log, &(rl_runlog_rl){t->state.step + 1, t->items, t->rewards, t->adv,
                                                                      t->comp_len, n, G, t->reward}, err)
                         : 0;
    for (int s = 0; s < n; s++) rl_gen_result_free(&t->results[s]);
    if (rc != 0) return rl_err_prefix(err, "grpo step %lld: ", (long long)t->state.step + 1);
    t->state.step++;
    if (logged != 0) { /* the step itself is done: a rescue keeps it */
        t->before = t->state;
        t->optim_before = t->optim.step;
        return rl_err_prefix(err, "grpo step %lld: ", (long long)t->state.step);
    }
    double dt = rl_time_now() - t0, mu = t->cfg.mu;
    memset(stats, 0, sizeof *stats);
    stats->step = t->state.step;
    stats->loss = a.loss / mu;
    stats->kl = a.wsum > 0 ? a.kl / a.wsum : 0;
    if (t->cfg.advantage == RL_ADV_REINFORCE_PP && t->ref) { /* its KL is in the rewards: the rollout's k3 */
        double k1, k3, x[2] = {0, 0};
        rl_ppo_kl_estimates(t->old_lp, t->ref_lp, t->completion, (size_t)t->cu[n], &k1, &k3);
        for (int i = 0; i < t->cu[n]; i++) x[1] += t->completion[i];
        x[0] = k3 * x[1];
        if (rl_dp_sum(dp, x, 2, err)) return rl_err_prefix(err, "grpo step %lld: ", (long long)t->state.step);
        stats->kl = x[1] > 0 ? x[0] / x[1] : 0;
    }
    stats->clip_frac = a.wsum > 0 ? a.clipped / a.wsum : 0;
    stats->ratio_mean = a.wsum > 0 ? a.ratio / a.wsum : 0;
    stats->logp_diff_mean = a.n_completion ? a.diff_sum / (double)a.n_completion : 0;
    stats->logp_diff_max = a.diff_max;
    stats->has_tis = t->cfg.tis_cap > 0;
    stats->tis_mean = a.n_completion ? a.tis_sum / (double)a.n_completion : 0;
    stats->has_rewards = 1;
    stats->reward_mean = r_mean;
    stats->reward_std = r_std;
    stats->completion_len = mean_len;
    stats->reward_errors = n_errors;
    stats->lr = os.lr;
    stats->grad_norm = os.grad_norm;
    stats->tokens = tokens * mu;
    stats->seconds = dt;
    stats->gen_seconds = t_gen;
    stats->tokens_per_s = dt > 0 ? tokens / dt : 0;
    return 0;
}

int rl_grpo_rescue(rl_grpo *t)
{
    if (t->optim.begun > t->optim_before) return -1;
    t->state = t->before;
    return 0;
}

int rl_grpo_save(const rl_grpo *t, const char *dir, const cJSON *options, const char *tokenizer_dir,
                 rl_err *err)
{
    return rl_checkpoint_save(dir, t->model, &t->optim, &t->state, options, tokenizer_dir, err);
}

int rl_grpo_resume(rl_grpo *t, const char *dir, rl_err *err)
{
    if (rl_checkpoint_load_state(dir, &t->state, NULL, err) || rl_checkpoint_load_optim(dir, &t->optim, err))
        return rl_err_prefix(err, "resume: ");
    return 0;
}

int rl_grpo_evaluate(rl_engine *e, rl_reward *reward, const rl_grpo_prompt *prompts, int n,
                     const rl_gen_params *gen, double *mean, int *correct, rl_err *err)
{
    rl_gen_prompt *gp = calloc((size_t)n, sizeof *gp);
    rl_gen_result *res = calloc((size_t)n, sizeof *res);
    rl_reward_item *items = calloc((size_t)n, sizeof *items);
    float *r = calloc((size_t)n, sizeof *r);
    int rc = (gp && res && items && r) ? 0 : rl_err_oom(err, "evaluation", (size_t)n * 64);
    for (int i = 0; rc == 0 && i < n; i++) gp[i] = (rl_gen_prompt){.ids = prompts[i].ids, .n_ids = prompts[i].n_ids};
    if (rc == 0) rc = rl_engine_generate(e, gp, n, gen, res, NULL, NULL, err);
    for (int i = 0; rc == 0 && i < n; i++)
        items[i] = (rl_reward_item){prompts[i].text, res[i].text ? res[i].text : "", prompts[i].answer, prompts[i].fields};
    if (rc == 0) rc = rl_reward_score(reward, items, n, r, err);
    if (rc == 0) {
        double sum = 0;
        int hits = 0;
        for (int i = 0; i < n; i++) sum += r[i], hits += r[i] >= 1.0f;
        *mean = n > 0 ? sum / n : 0;
        if (correct) *correct = hits;
    }
    for (int i = 0; res && i < n; i++) rl_gen_result_free(&res[i]);
    free(gp), free(res), free(items), free(r);
    return rc;
}
