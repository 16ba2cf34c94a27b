/* engine.c — the engine's life: options, creation, the end-of-sequence ids, and the KV pool.
 *
 * Pool size: opt.n_blocks when set. A trainer's engine (opt.pool_seqs > 0,
 * rl_engine_options_for_training) holds what one step can use, rl_engine_pool_blocks, within
 * gpu_memory_utilization of the free memory, on both backends. Otherwise on CUDA, once,
 * gpu_memory_utilization of the device memory free after the runner's buffers are made (vLLM's
 * rule: weights, a trainer's state and activations were made before, so the pool takes what
 * they leave), kept for every later call. On the CPU, where memory is shared with everything
 * else, the pool holds what the call's requests need at their full lengths (within the same
 * fraction of MemAvailable) and is remade larger when a later call needs more. */
#include "engine/engine_internal.h"

#include <stdlib.h>
#include <string.h>

rl_gen_params rl_gen_params_default(void)
{
    rl_gen_params p = {.sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f},
                       .max_new_tokens = 256};
    return p;
}

rl_engine_options rl_engine_options_default(void)
{
    return (rl_engine_options){.max_num_seqs = 256, .max_num_batched_tokens = 8192, .gpu_memory_utilization = 0.9,
                               .block_size = 16, .prefix_sharing = 1, .graphs = 1};
}

rl_engine_options rl_engine_options_for_training(const rl_engine_options *base, int n_seqs, int seq_len)
{
    rl_engine_options o = base ? *base : rl_engine_options_default();
    o.pool_seqs = n_seqs > 0 ? n_seqs : 1;
    o.pool_seq_len = seq_len > 0 ? seq_len : 1;
    return o;
}

long rl_engine_pool_blocks(const rl_engine_options *opt)
{
    if (opt->pool_seqs < 1 || opt->pool_seq_len < 1 || opt->block_size < 1) return 0;
    long per_seq = ((long)opt->pool_seq_len + opt->block_size - 1) / opt->block_size + 1;
    return (long)opt->pool_seqs * per_seq;
}

const char *rl_finish_name(rl_finish_reason finish)
{
    return finish == RL_FINISH_EOS ? "eos" : finish == RL_FINISH_STOP ? "stop" : "length";
}

void rl_gen_result_free(rl_gen_result *r)
{
    free(r->ids);
    free(r->logprobs);
    free(r->text);
    free(r->error);
    memset(r, 0, sizeof *r);
}

static void add_eos(rl_engine *e, int32_t id)
{
    if (id < 0 || e->n_eos == RL_ENGINE_MAX_EOS) return;
    for (int i = 0; i < e->n_eos; i++)
        if (e->eos[i] == id) return;
    e->eos[e->n_eos++] = id;
}

static int check_options(const rl_engine_options *o, const rl_model_config *c, rl_err *err)
{
    if (o->max_num_seqs < 1) return rl_err_set(err, "engine: max_num_seqs = %d, must be >= 1", o->max_num_seqs);
    if (o->max_num_batched_tokens < o->max_num_seqs)
        return rl_err_set(err, "engine: max_num_batched_tokens = %d must be >= max_num_seqs = %d",
                          o->max_num_batched_tokens, o->max_num_seqs);
    if (!(o->gpu_memory_utilization > 0 && o->gpu_memory_utilization <= 1))
        return rl_err_set(err, "engine: gpu_memory_utilization = %g, must be in (0, 1]", o->gpu_memory_utilization);
    if (o->block_size < 1 || o->block_size > 1024)
        return rl_err_set(err, "engine: block_size = %d, must be in [1, 1024]", o->block_size);
    if (o->n_blocks < 0) return rl_err_set(err, "engine: n_blocks = %d, must be >= 0", o->n_blocks);
    if (o->pool_seqs < 0 || o->pool_seq_len < 0 || (o->pool_seqs > 0) != (o->pool_seq_len > 0))
        return rl_err_set(err, "engine: pool_seqs = %d and pool_seq_len = %d must both be > 0 (a trainer's pool) or "
                               "both 0", o->pool_seqs, o->pool_seq_len);
    if (o->max_model_len < 0 || o->max_model_len > c->max_position_embeddings)
        return rl_err_set(err, "engine: max_model_len = %d, must be in [1, max_position_embeddings = %d] (0: that)",
                          o->max_model_len, c->max_position_embeddings);
    return 0;
}

int rl_engine_create(rl_engine **out, rl_model *m, const rl_tokenizer *tok, const rl_engine_options *opt,
                     rl_err *err)
{
    *out = NULL;
    rl_engine_options o = opt ? *opt : rl_engine_options_default();
    if (check_options(&o, &m->config, err)) return -1;
    if (o.max_model_len == 0) o.max_model_len = m->config.max_position_embeddings;
    rl_engine *e = calloc(1, sizeof *e);
    if (!e) return rl_err_oom(err, "engine", sizeof *e);
    e->model = m;
    e->tok = tok;
    e->opt = o;
    e->max_blocks = o.max_model_len / o.block_size + 1;
    for (int i = 0; i < m->config.n_eos; i++) add_eos(e, m->config.eos_token_ids[i]);
    int32_t tok_eos[RL_TOK_MAX_EOS];
    for (int i = 0, n = tok ? rl_tok_eos_ids(tok, tok_eos) : 0; i < n; i++) add_eos(e, tok_eos[i]);
    *out = e;
    return 0;
}

void rl_engine_free(rl_engine *e)
{
    if (!e) return;
    rl_runner_free(e->runner);
    rl_bm_free(&e->bm);
    rl_kv_pool_free(&e->pool);
    free(e);
}

void rl_engine_reset_prefix_cache(rl_engine *e)
{
    if (e->bm.ref) rl_bm_clear_cache(&e->bm);
}

void rl_engine_release_pool(rl_engine *e)
{
    if (!e || !e->pool.view.base) return;
    e->released_blocks = e->pool.view.n_blocks;
    e->released_block_bytes = e->pool.block_bytes;
    if (e->runner) rl_runner_set_pool(e->runner, NULL); /* its graphs point into the pool */
    rl_bm_free(&e->bm);
    rl_kv_pool_free(&e->pool);
}

int rl_engine_eos_ids(const rl_engine *e, const int32_t **ids)
{
    *ids = e->eos;
    return e->n_eos;
}

static int make_pool(rl_engine *e, long n_blocks, rl_err *err)
{
    rl_bm_free(&e->bm);
    rl_kv_pool_free(&e->pool);
    if (n_blocks > (1 << 29)) n_blocks = 1 << 29;
    if (rl_kv_pool_create(&e->pool, e->model->ctx, &e->model->config, e->opt.block_size, (int)n_blocks, err) ||
        rl_bm_create(&e->bm, (int)n_blocks, e->opt.block_size, err))
        return -1;
    rl_runner_set_pool(e->runner, &e->pool);
    return 0;
}

int rl_engine_prepare(rl_engine *e, long need_blocks, rl_err *err)
{
    rl_ctx *ctx = e->model->ctx;
    if (!e->runner) {
        rl_runner_config rc = {.max_num_seqs = e->opt.max_num_seqs,
                               .max_num_batched_tokens = e->opt.max_num_batched_tokens,
                               .max_blocks = e->max_blocks, .graphs = e->opt.graphs, .pad_decode = e->opt.pad_decode,
                               .cascade = e->opt.cascade};
        if (rl_runner_create(&e->runner, e->model, &rc, err)) return -1;
    }
    if (e->opt.n_blocks > 0) return e->pool.view.base ? 0 : make_pool(e, e->opt.n_blocks, err);
    long by_step = rl_engine_pool_blocks(&e->opt);
    if ((ctx->kind == RL_BACKEND_CUDA || by_step > 0) && e->pool.view.base) return 0;
    size_t block_bytes = rl_kv_pool_block_bytes(&e->model->config, e->opt.block_size, ctx->act_dtype);
    long budget = 0;
    if (rl_kv_pool_budget_blocks(ctx, block_bytes, e->opt.gpu_memory_utilization, &budget, err)) return -1;
    long want = by_step > 0 ? by_step : ctx->kind == RL_BACKEND_CUDA ? budget : need_blocks;
    if (want > budget) want = budget;
    if (e->pool.view.base && e->pool.view.n_blocks >= want) return 0;
    if (want < 1)
        return rl_err_set(err, "engine: no memory for the KV pool (%.2f of %s memory free is less than one block of "
                               "%zu bytes)", e->opt.gpu_memory_utilization, rl_backend_name(ctx), block_bytes);
    return make_pool(e, want, err);
}

void rl_engine_stats_get(const rl_engine *e, rl_engine_stats *s)
{
    *s = e->stats;
    int live = e->pool.view.base != NULL;
    s->n_blocks = live ? e->pool.view.n_blocks : e->released_blocks;
    s->block_size = e->opt.block_size;
    s->pool_bytes = (live ? e->pool.block_bytes : e->released_block_bytes) * (size_t)s->n_blocks;
    s->runner_bytes = e->runner ? rl_runner_bytes(e->runner) : 0;
}
