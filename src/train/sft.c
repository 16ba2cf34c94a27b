/* sft.c — see sft.h. */
#include "train/sft.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "core/timer.h"
#include "train/dp.h"
#include "train/runlog.h"

rl_sft_config rl_sft_defaults(void)
{
    rl_sft_config c = {0};
    c.max_tokens = 4096;
    c.grad_accum = 1;
    c.shuffle = 1;
    c.seed = 1234;
    c.optim = rl_optim_defaults();
    c.optim.schedule.peak = 2e-5;
    return c;
}

void rl_sft_free(rl_sft *t)
{
    rl_acts_free(t->acts);
    rl_optim_free(&t->optim);
    rl_order_free(&t->order);
    if (t->logp) rl_free(t->model->ctx, t->logp);
    free(t->tokens);
    free(t->cu_seqlens);
    free(t->host_f);
    free(t->batch_items);
    free(t->item_loss);
    memset(t, 0, sizeof *t);
}

int rl_sft_create(rl_sft *t, rl_model *m, const rl_sft_example *data, int n_data,
                  const rl_sft_config *cfg, rl_err *err)
{
    memset(t, 0, sizeof *t);
    t->model = m;
    t->data = data;
    t->n_data = n_data;
    t->cfg = *cfg;
    if (cfg->max_tokens < 2 || cfg->grad_accum < 1)
        return rl_err_set(err, "sft: max_tokens must be >= 2 and grad_accum >= 1 (got %d, %d)",
                          cfg->max_tokens, cfg->grad_accum);
    for (int i = 0; i < n_data; i++) {
        const rl_sft_example *e = &data[i];
        if (e->n_ids > cfg->max_tokens)
            return rl_err_set(err, "sft: example %d has %d tokens, more than the micro-batch budget "
                                   "max_tokens = %d (raise --max-tokens or shorten the data)",
                              i, e->n_ids, cfg->max_tokens);
        if (e->n_prompt < 0 || e->n_ids - (e->n_prompt > 1 ? e->n_prompt : 1) < 1)
            return rl_err_set(err, "sft: example %d has no completion tokens to learn (%d tokens, %d of prompt)",
                              i, e->n_ids, e->n_prompt);
        for (int k = 0; k < e->n_ids; k++)
            if (e->ids[k] < 0 || e->ids[k] >= m->config.vocab_size)
                return rl_err_set(err, "sft: example %d token %d is id %d, outside the model's vocabulary (%d)",
                                  i, k, e->ids[k], m->config.vocab_size);
    }
    int mt = cfg->max_tokens;
    t->tokens = malloc((size_t)mt * sizeof *t->tokens);
    t->cu_seqlens = malloc((size_t)(mt + 1) * sizeof *t->cu_seqlens);
    t->host_f = malloc((size_t)mt * sizeof *t->host_f);
    /* a step plans the micro-batches of every rank (dp.h) */
    size_t n_micro = (size_t)cfg->grad_accum * (size_t)rl_dp_world(cfg->optim.dp);
    t->batch_items = malloc((size_t)mt * n_micro * sizeof *t->batch_items);
    t->item_loss = malloc((size_t)mt * sizeof *t->item_loss);
    t->logp = rl_alloc(m->ctx, 2 * (size_t)mt * sizeof(float));
    if (!t->tokens || !t->cu_seqlens || !t->host_f || !t->batch_items || !t->item_loss || !t->logp) {
        rl_sft_free(t);
        return rl_err_oom(err, "sft buffers", (size_t)mt * 16);
    }
    t->dlogp = t->logp + mt;
    rl_rng_init(&t->state.rng, cfg->seed);
    if (rl_order_create(&t->order, n_data, cfg->seed, cfg->shuffle, err) ||
        rl_dp_prepare(cfg->optim.dp, m, err) ||
        rl_acts_create(&t->acts, m, mt, cfg->recompute ? RL_ACTS_TRAIN_CHECKPOINT : RL_ACTS_TRAIN, err) ||
        rl_optim_create(&t->optim, m->ctx, m->params, m->n_params, m->n_elems, &cfg->optim, err)) {
        rl_sft_free(t);
        return -1;
    }
    return 0;
}

static int first_loss_token(const rl_sft_example *e) { return e->n_prompt > 1 ? e->n_prompt : 1; }

/* Packs items into t->tokens / cu_seqlens; returns the token count. */
static int pack(rl_sft *t, const rl_sft_example *ex, const int *items, int n_items)
{
    int n = 0;
    t->cu_seqlens[0] = 0;
    for (int i = 0; i < n_items; i++) {
        const rl_sft_example *e = &ex[items[i]];
        memcpy(t->tokens + n, e->ids, (size_t)e->n_ids * sizeof(int32_t));
        n += e->n_ids;
        t->cu_seqlens[i + 1] = n;
    }
    return n;
}

/* Forward (and backward when train) of one packed micro-batch; adds sum of -logp over its
 * completion tokens to *nll, and when item_loss is not NULL sets each example's mean.
 * dscale: d loss / d (sum of logp) for the backward. */
static int run_micro(rl_sft *t, const rl_sft_example *ex, const int *items, int n_items, int train,
                     float dscale, double *nll, double *item_loss, rl_err *err)
{
    rl_ctx *ctx = t->model->ctx;
    int n = pack(t, ex, items, n_items);
    if (rl_model_forward(t->model, t->acts, t->tokens, t->cu_seqlens, n_items, 1.0f, t->logp, NULL, err) != 0)
        return -1;
    if (rl_memcpy(ctx, t->host_f, t->logp, (size_t)n * sizeof(float), RL_D2H) != 0) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "sft: ");
    }
    double sum = 0;
    for (int i = 0; i < n_items; i++) {
        const rl_sft_example *e = &ex[items[i]];
        double item = 0;
        for (int k = first_loss_token(e); k < e->n_ids; k++) item -= t->host_f[t->cu_seqlens[i] + k];
        if (item_loss) item_loss[i] = item / (e->n_ids - first_loss_token(e));
        sum += item;
    }
    *nll += sum;
    if (!train) return 0;
    for (int i = 0; i < n; i++) t->host_f[i] = 0;
    for (int i = 0; i < n_items; i++) {
        const rl_sft_example *e = &ex[items[i]];
        for (int k = first_loss_token(e); k < e->n_ids; k++) t->host_f[t->cu_seqlens[i] + k] = dscale;
    }
    if (rl_memcpy(ctx, t->dlogp, t->host_f, (size_t)n * sizeof(float), RL_H2D) != 0) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "sft: ");
    }
    return rl_model_backward(t->model, t->acts, t->dlogp, err);
}

int rl_sft_step(rl_sft *t, rl_step_stats *stats, rl_err *err)
{
    double t0 = rl_time_now();
    t->before = t->state;
    t->optim_before = t->optim.step;
    /* plan: which examples go into each micro-batch, and the step's completion-token count.
     * With data parallelism every rank plans the whole step (grad_accum micro-batches per
     * rank) and runs its own grad_accum of them, so the loss normaliser is the global one. */
    rl_dp *dp = t->cfg.optim.dp;
    int n_mb = t->cfg.grad_accum * rl_dp_world(dp), first_mb = t->cfg.grad_accum * rl_dp_rank(dp);
    int starts[n_mb + 1];
    int n_items = 0;
    double n_loss_tokens = 0, n_tokens = 0;
    for (int mb = 0; mb < n_mb; mb++) {
        starts[mb] = n_items;
        int used = 0;
        for (;;) {
            int next = rl_order_peek(&t->order, &t->state);
            const rl_sft_example *e = &t->data[next];
            if (n_items > starts[mb] && used + e->n_ids > t->cfg.max_tokens) break;
            rl_order_next(&t->order, &t->state);
            t->batch_items[n_items++] = next;
            used += e->n_ids;
            n_tokens += e->n_ids;
            n_loss_tokens += e->n_ids - first_loss_token(e);
            if (n_items - starts[mb] >= t->n_data) break; /* every example once per micro-batch at most */
        }
    }
    starts[n_mb] = n_items;
    double nll = 0;
    if (rl_dp_begin_update(dp, t->cfg.grad_accum, err) != 0) return -1;
    for (int mb = first_mb; mb < first_mb + t->cfg.grad_accum; mb++)
        if (run_micro(t, t->data, t->batch_items + starts[mb], starts[mb + 1] - starts[mb], 1,
                      (float)(-1.0 / n_loss_tokens), &nll, mb == first_mb ? t->item_loss : NULL, err) != 0)
            return rl_err_prefix(err, "sft step %lld: ", (long long)t->state.step + 1);
    if (rl_dp_sum(dp, &nll, 1, err) != 0) return rl_err_prefix(err, "sft step %lld: ", (long long)t->state.step + 1);
    if (!isfinite(nll))
        return rl_err_set(err, "sft step %lld: the loss is %g (non-finite); weights left unchanged",
                          (long long)t->state.step + 1, nll / n_loss_tokens);
    rl_optim_stats os;
    if (rl_optim_step(&t->optim, t->model->master, rl_model_working_copy(t->model), t->model->grads, 1.0, &os, err) != 0)
        return -1;
    t->state.step++;
    if (rl_runlog_sft_step(t->log, t->state.step, t->data, t->batch_items + starts[first_mb], t->item_loss,
                           starts[first_mb + 1] - starts[first_mb], err)) {
        t->before = t->state; /* the step itself is done: a rescue keeps it */
        t->optim_before = t->optim.step;
        return -1;
    }
    double dt = rl_time_now() - t0;
    memset(stats, 0, sizeof *stats);
    stats->step = t->state.step;
    stats->loss = nll / n_loss_tokens;
    stats->lr = os.lr;
    stats->grad_norm = os.grad_norm;
    stats->tokens = n_tokens;
    stats->seconds = dt;
    stats->tokens_per_s = dt > 0 ? n_tokens / dt : 0;
    return 0;
}

int rl_sft_rescue(rl_sft *t)
{
    if (t->optim.begun > t->optim_before) return -1;
    t->state = t->before;
    return 0;
}

int rl_sft_eval_loss(rl_sft *t, const rl_sft_example *ex, int n, double *loss, rl_err *err)
{
    double nll = 0, count = 0;
    int *items = t->batch_items;
    for (int i = 0; i < n;) {
        int k = 0, used = 0;
        while (i < n && (k == 0 || used + ex[i].n_ids <= t->cfg.max_tokens)) {
            if (ex[i].n_ids > t->cfg.max_tokens)
                return rl_err_set(err, "sft eval: example %d has %d tokens, more than max_tokens = %d", i,
                                  ex[i].n_ids, t->cfg.max_tokens);
            used += ex[i].n_ids;
            count += ex[i].n_ids - first_loss_token(&ex[i]);
            items[k++] = i++;
        }
        if (run_micro(t, ex, items, k, 0, 0, &nll, NULL, err) != 0) return -1;
    }
    *loss = count > 0 ? nll / count : 0;
    return 0;
}

int rl_sft_save(const rl_sft *t, const char *dir, const cJSON *options, const char *tokenizer_dir,
                rl_err *err)
{
    return rl_checkpoint_save(dir, t->model, &t->optim, &t->state, options, tokenizer_dir, err);
}

int rl_sft_resume(rl_sft *t, const char *dir, rl_err *err)
{
    if (rl_checkpoint_load_state(dir, &t->state, NULL, err) || rl_checkpoint_load_optim(dir, &t->optim, err))
        return rl_err_prefix(err, "resume: ");
    return 0;
}
