/* params.c — the model's parameter table and its one contiguous buffer: build from a config,
 * load from / save to a Hugging Face directory, random init, gradients, working copy.
 *
 * The table follows rl_config_tensor_specs order, so offsets grow in checkpoint order and a
 * tensor's gradient and optimizer moments sit at the same offset in their buffers. Tensors are
 * converted to fp32 one at a time through a host staging buffer (the checkpoint itself stays
 * memory-mapped), so loading never holds a second full copy of the model on the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/rng.h"
#include "io/safetensors.h"
#include "model/model.h"

/* Offsets are aligned to 64 elements so that every tensor starts on a 256-byte boundary in
 * fp32 and 128 bytes in bf16 (vectorised loads on both backends). */
#define PARAM_ALIGN 64

int rl_model_find_param(const rl_model *m, const char *name)
{
    for (int i = 0; i < m->n_params; i++)
        if (!strcmp(m->params[i].name, name)) return i;
    return -1;
}

static size_t offset_of(const rl_model *m, const char *name)
{
    int i = rl_model_find_param(m, name);
    return i < 0 ? SIZE_MAX : m->params[i].offset;
}

static size_t layer_offset(const rl_model *m, int layer, const char *suffix)
{
    char name[128];
    snprintf(name, sizeof name, "model.layers.%d.%s", layer, suffix);
    return offset_of(m, name);
}

static int resolve_offsets(rl_model *m, rl_err *err)
{
    const rl_model_config *c = &m->config;
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return rl_err_oom(err, "model layer table", (size_t)c->n_layers * sizeof *m->layers);
    for (int l = 0; l < c->n_layers; l++) {
        rl_layer_offsets *L = &m->layers[l];
        L->attn_norm = layer_offset(m, l, "input_layernorm.weight");
        L->q = layer_offset(m, l, "self_attn.q_proj.weight");
        L->k = layer_offset(m, l, "self_attn.k_proj.weight");
        L->v = layer_offset(m, l, "self_attn.v_proj.weight");
        L->o = layer_offset(m, l, "self_attn.o_proj.weight");
        L->q_bias = layer_offset(m, l, "self_attn.q_proj.bias");
        L->k_bias = layer_offset(m, l, "self_attn.k_proj.bias");
        L->v_bias = layer_offset(m, l, "self_attn.v_proj.bias");
        L->q_norm = layer_offset(m, l, "self_attn.q_norm.weight");
        L->k_norm = layer_offset(m, l, "self_attn.k_norm.weight");
        L->mlp_norm = layer_offset(m, l, "post_attention_layernorm.weight");
        L->gate = layer_offset(m, l, "mlp.gate_proj.weight");
        L->up = layer_offset(m, l, "mlp.up_proj.weight");
        L->down = layer_offset(m, l, "mlp.down_proj.weight");
        size_t required[] = {L->attn_norm, L->q, L->k, L->v, L->o, L->mlp_norm, L->gate, L->up, L->down};
        for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
            if (required[i] == SIZE_MAX) return rl_err_set(err, "model: layer %d lacks a required tensor", l);
        if (c->qk_norm && (L->q_norm == SIZE_MAX || L->k_norm == SIZE_MAX))
            return rl_err_set(err, "model: layer %d lacks q_norm/k_norm", l);
        if (c->attention_bias && (L->q_bias == SIZE_MAX || L->k_bias == SIZE_MAX || L->v_bias == SIZE_MAX))
            return rl_err_set(err, "model: layer %d lacks q/k/v biases", l);
    }
    /* Projections whose weights follow each other in the buffer run as one matrix product in
     * inference (qwen3.c): q, k, v without biases, and gate, up. */
    size_t qd = (size_t)c->n_heads * c->head_dim, kd = (size_t)c->n_kv_heads * c->head_dim, D = (size_t)c->hidden_size;
    m->fused_qkv = !c->attention_bias;
    m->fused_gate_up = 1;
    for (int l = 0; l < c->n_layers; l++) {
        const rl_layer_offsets *L = &m->layers[l];
        if (L->k != L->q + qd * D || L->v != L->k + kd * D) m->fused_qkv = 0;
        if (L->up != L->gate + (size_t)c->intermediate_size * D) m->fused_gate_up = 0;
    }
    /* Every tensor of the table must be one the forward reads: never half-run a checkpoint. */
    int value = c->head != RL_HEAD_LM;
    int n_used = value ? 3 + (c->head == RL_HEAD_TOKEN_CLS) : c->tie_word_embeddings ? 2 : 3;
    for (int l = 0; l < c->n_layers; l++) {
        const size_t *field = (const size_t *)&m->layers[l];
        for (size_t i = 0; i < sizeof(rl_layer_offsets) / sizeof(size_t); i++) n_used += field[i] != SIZE_MAX;
    }
    if (n_used != m->n_params)
        return rl_err_set(err, "model: the checkpoint layout has %d tensors, the model code reads %d", m->n_params, n_used);
    m->embed = offset_of(m, "model.embed_tokens.weight");
    m->final_norm = offset_of(m, "model.norm.weight");
    m->lm_head = value ? SIZE_MAX : c->tie_word_embeddings ? m->embed : offset_of(m, "lm_head.weight");
    m->score = value ? offset_of(m, "score.weight") : SIZE_MAX;
    m->score_bias = offset_of(m, "score.bias");
    if (m->embed == SIZE_MAX || m->final_norm == SIZE_MAX || (value ? m->score : m->lm_head) == SIZE_MAX)
        return rl_err_set(err, "model: embed_tokens, norm or the head missing from the tensor list");
    return 0;
}

int rl_model_table(rl_model *m, const rl_model_config *cfg, rl_err *err)
{
    memset(m, 0, sizeof *m);
    m->config = *cfg;
    rl_tensor_spec *specs = NULL;
    int n = 0;
    if (rl_config_tensor_specs(cfg, &specs, &n, err)) return -1;
    m->params = calloc((size_t)n, sizeof *m->params);
    if (!m->params) {
        free(specs);
        return rl_err_oom(err, "model parameter table", (size_t)n * sizeof *m->params);
    }
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        rl_param *p = &m->params[i];
        snprintf(p->name, sizeof p->name, "%s", specs[i].name);
        p->n_dims = specs[i].n_dims;
        p->shape[0] = specs[i].shape[0];
        p->shape[1] = p->n_dims > 1 ? specs[i].shape[1] : 1;
        p->count = (size_t)p->shape[0] * (size_t)p->shape[1];
        p->offset = offset;
        p->weight_decay = p->n_dims == 2;
        offset += (p->count + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
    }
    m->n_params = n;
    m->n_elems = offset;
    free(specs);
    if (resolve_offsets(m, err)) {
        rl_model_free(m);
        return -1;
    }
    return 0;
}

/* Table, buffers and RoPE frequencies for cfg; parameter values are left for the caller. */
static int model_create(rl_model *m, rl_ctx *ctx, const rl_model_config *cfg, rl_err *err)
{
    if (rl_model_table(m, cfg, err)) return -1;
    m->ctx = ctx;
    rl_ctx_pick_act_dtype(ctx, (size_t)rl_config_param_count(cfg));
    m->master_count = m->n_elems;
    m->master = rl_alloc(ctx, m->n_elems * sizeof(float));
    if (!m->master) goto fail_ctx;
    if (rl_memzero(ctx, m->master, m->n_elems * sizeof(float))) goto fail_ctx;
    if (ctx->act_dtype == RL_F32) {
        m->working = m->master;
    } else {
        size_t bytes = m->n_elems * rl_dtype_size(ctx->act_dtype);
        m->working = rl_alloc(ctx, bytes);
        if (!m->working || rl_memzero(ctx, m->working, bytes)) goto fail_ctx;
    }
    int half = cfg->head_dim / 2;
    float *inv_freq = malloc((size_t)half * sizeof(float));
    if (!inv_freq) {
        rl_err_oom(err, "RoPE frequencies", (size_t)half * sizeof(float));
        goto fail;
    }
    rl_config_rope_inv_freq(cfg, inv_freq);
    m->inv_freq = rl_alloc(ctx, (size_t)half * sizeof(float));
    int rc = m->inv_freq ? rl_memcpy(ctx, m->inv_freq, inv_freq, (size_t)half * sizeof(float), RL_H2D) : -1;
    free(inv_freq);
    if (rc) goto fail_ctx;
    return 0;

fail_ctx:
    rl_ctx_error(ctx, err);
fail:
    rl_model_free(m);
    return -1;
}

void rl_model_free(rl_model *m)
{
    if (m->ctx) {
        if (m->working != (void *)m->master) rl_free(m->ctx, m->working);
        rl_free(m->ctx, m->master);
        if (!m->grads_borrowed) rl_free(m->ctx, m->grads);
        rl_free(m->ctx, m->inv_freq);
    }
    free(m->params);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* Puts n host fp32 values into the masters (and the working copy) at offset. */
static int store_f32(rl_model *m, size_t offset, const float *src, size_t n)
{
    RL_ASSERT(m->master_count == m->n_elems); /* loading happens before any sharding */
    rl_ctx *ctx = m->ctx;
    if (rl_memcpy(ctx, m->master + offset, src, n * sizeof(float), RL_H2D)) return -1;
    if (m->working == (void *)m->master) return 0;
    char *working = (char *)m->working + offset * rl_dtype_size(ctx->act_dtype);
    return rl_upload_act(ctx, working, src, n);
}

static size_t largest_param(const rl_model *m)
{
    size_t most = 1;
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].count > most) most = m->params[i].count;
    return most;
}

/* as_value: a causal LM's checkpoint becomes a value model (rl_model_load_value). */
static int load(rl_model *m, rl_ctx *ctx, const char *dir, int as_value, rl_err *err)
{
    char path[4096];
    rl_model_config cfg;
    memset(m, 0, sizeof *m); /* rl_model_free is safe after a failed load */
    if (rl_path_join(path, sizeof path, dir, "config.json"))
        return rl_err_set(err, "%s: path too long", dir);
    if (rl_config_load(&cfg, path, err)) return -1;
    rl_model_config file_cfg = cfg; /* what the checkpoint holds (checked below) */
    if (as_value) rl_config_as_value(&cfg, RL_HEAD_TOKEN_CLS);
    rl_safetensors *st = NULL;
    if (rl_safetensors_open_dir(&st, dir, err)) return -1;
    rl_tensor_spec *specs = NULL;
    int n_specs = 0;
    if (rl_config_tensor_specs(&file_cfg, &specs, &n_specs, err)) goto fail_st;
    int bad = rl_safetensors_check_specs(st, specs, n_specs, err);
    free(specs);
    if (bad) {
        rl_err_prefix(err, "%s: ", dir);
        goto fail_st;
    }
    if (model_create(m, ctx, &cfg, err)) goto fail_st;

    size_t staging_n = largest_param(m);
    float *staging = malloc(staging_n * sizeof(float));
    if (!staging) {
        rl_err_oom(err, "model load staging", staging_n * sizeof(float));
        goto fail_model;
    }
    for (int i = 0; i < m->n_params; i++) {
        const rl_param *p = &m->params[i];
        const rl_st_tensor *t = rl_safetensors_find(st, p->name);
        if (!t && file_cfg.head != cfg.head) continue; /* a new value head: left at zero */
        RL_ASSERT(t && (size_t)rl_st_tensor_numel(t) == p->count); /* check_specs passed */
        rl_safetensors_to_f32(t, staging);
        if (store_f32(m, p->offset, staging, p->count)) {
            free(staging);
            rl_ctx_error(ctx, err);
            goto fail_model;
        }
    }
    free(staging);
    rl_safetensors_close(st);
    return 0;

fail_model:
    rl_model_free(m);
fail_st:
    rl_safetensors_close(st);
    return -1;
}

int rl_model_load(rl_model *m, rl_ctx *ctx, const char *dir, rl_err *err) { return load(m, ctx, dir, 0, err); }

int rl_model_load_value(rl_model *m, rl_ctx *ctx, const char *dir, rl_err *err) { return load(m, ctx, dir, 1, err); }

int rl_model_init_random(rl_model *m, rl_ctx *ctx, const rl_model_config *cfg, uint64_t seed,
                         rl_err *err)
{
    if (model_create(m, ctx, cfg, err)) return -1;
    float *staging = malloc(largest_param(m) * sizeof(float));
    if (!staging) {
        rl_model_free(m);
        return rl_err_oom(err, "model init staging", largest_param(m) * sizeof(float));
    }
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (int i = 0; i < m->n_params; i++) {
        const rl_param *p = &m->params[i];
        int is_norm = strstr(p->name, "norm.weight") != NULL;
        if (p->n_dims == 2) {
            /* Each normal takes exactly one Philox block (rng.h), so element j of this tensor is
             * block counter + j: filled in parallel, the values are the sequential stream's. */
            RL_ASSERT(rng.buf_used == 4);
            uint64_t first = rng.counter;
#pragma omp parallel for schedule(static)
            for (size_t j = 0; j < p->count; j++) {
                rl_rng at = {.seed = rng.seed, .counter = first + j, .buf_used = 4};
                staging[j] = 0.02f * rl_rng_normal(&at);
            }
            rng.counter = first + p->count;
        } else {
            for (size_t j = 0; j < p->count; j++) staging[j] = is_norm ? 1.0f : 0.0f;
        }
        if (store_f32(m, p->offset, staging, p->count)) {
            free(staging);
            rl_ctx_error(ctx, err);
            rl_model_free(m);
            return -1;
        }
    }
    free(staging);
    return 0;
}

int rl_model_save(const rl_model *m, const char *dir, rl_dtype dtype, rl_err *err)
{
    if (m->master_count != m->n_elems)
        return rl_err_set(err, "%s: this rank holds a shard of the master weights; save through train/dp", dir);
    float *host = malloc(m->n_elems * sizeof(float));
    if (!host) return rl_err_oom(err, "model save staging", m->n_elems * sizeof(float));
    int rc = rl_memcpy(m->ctx, host, m->master, m->n_elems * sizeof(float), RL_D2H);
    if (rc) rl_ctx_error(m->ctx, err);
    else rc = rl_model_save_host(m, host, dir, dtype, err);
    free(host);
    return rc;
}

int rl_model_save_host(const rl_model *m, const float *host, const char *dir, rl_dtype dtype, rl_err *err)
{
    if (dtype != RL_F32 && dtype != RL_BF16)
        return rl_err_set(err, "%s: model save dtype must be F32 or BF16, got %s", dir, rl_dtype_name(dtype));
    rl_st_write_tensor *tensors = calloc((size_t)m->n_params, sizeof *tensors);
    int rc = -1;
    if (!tensors) {
        rl_err_oom(err, "model save tensor table", (size_t)m->n_params * sizeof *tensors);
        goto done;
    }
    for (int i = 0; i < m->n_params; i++) {
        const rl_param *p = &m->params[i];
        tensors[i].name = p->name;
        tensors[i].dtype = dtype;
        tensors[i].n_dims = p->n_dims;
        tensors[i].shape[0] = p->shape[0];
        tensors[i].shape[1] = p->shape[1];
        tensors[i].data = host + p->offset;
    }
    if (rl_safetensors_write_dir(dir, tensors, m->n_params, 0, err)) goto done;
    rl_model_config cfg = m->config;
    cfg.torch_dtype = dtype;
    char path[4096];
    if (rl_path_join(path, sizeof path, dir, "config.json")) {
        rl_err_set(err, "%s: path too long", dir);
        goto done;
    }
    rc = rl_config_save(&cfg, path, err);
done:
    free(tensors);
    return rc;
}

void rl_model_freeze(rl_model *m)
{
    if (m->working == (void *)m->master || !m->master) return;
    rl_free(m->ctx, m->master);
    m->master = NULL;
    m->master_count = 0;
}

int rl_model_enable_grads(rl_model *m, rl_err *err)
{
    if (m->grads) return 0;
    m->grads = rl_alloc(m->ctx, m->n_elems * sizeof(float));
    if (!m->grads) return rl_ctx_error(m->ctx, err);
    return rl_model_zero_grads(m, err);
}

void rl_model_use_grads(rl_model *m, float *grads)
{
    if (!m->grads_borrowed) rl_free(m->ctx, m->grads);
    m->grads = grads;
    m->grads_borrowed = grads != NULL;
}

int rl_model_zero_grads(rl_model *m, rl_err *err)
{
    if (!m->grads) return rl_err_set(err, "model: gradients are not enabled");
    RL_TRY_OP(m->ctx, err, rl_memzero(m->ctx, m->grads, m->n_elems * sizeof(float)));
    return 0;
}

int rl_model_refresh_working(rl_model *m, rl_err *err)
{
    if (m->working == (void *)m->master) return 0;
    size_t n = m->master_count;
    float *host = malloc((n ? n : 1) * sizeof(float));
    if (!host) return rl_err_oom(err, "working-copy staging", n * sizeof(float));
    char *working = (char *)m->working + m->master_lo * rl_dtype_size(m->ctx->act_dtype);
    int rc = rl_memcpy(m->ctx, host, m->master, n * sizeof(float), RL_D2H);
    if (!rc) rc = rl_upload_act(m->ctx, working, host, n);
    free(host);
    return rc ? rl_ctx_error(m->ctx, err) : 0;
}

int rl_model_shard_master(rl_model *m, size_t lo, size_t count, rl_err *err)
{
    if (m->working == (void *)m->master)
        return rl_err_set(err, "model: the forward reads the fp32 master weights themselves (the CPU, or CUDA in "
                               "fp32); they cannot be sharded");
    if (lo < m->master_lo || lo + count > m->master_lo + m->master_count)
        return rl_err_set(err, "model: master shard [%zu, %zu) is not inside the %zu elements held", lo, lo + count,
                          m->master_count);
    float *shard = rl_alloc(m->ctx, (count ? count : 1) * sizeof(float));
    if (!shard || rl_memcpy(m->ctx, shard, m->master + (lo - m->master_lo), count * sizeof(float), RL_D2D)) {
        rl_ctx_error(m->ctx, err);
        rl_free(m->ctx, shard);
        return rl_err_prefix(err, "model: master shard of %zu elements: ", count);
    }
    rl_free(m->ctx, m->master);
    m->master = shard;
    m->master_lo = lo;
    m->master_count = count;
    return 0;
}

void rl_model_grad_regions(const rl_model *m, rl_grad_region *regions)
{
    int L = m->config.n_layers;
    /* layer l's tensors start with its input norm, in checkpoint order (model_create) */
    regions[0] = (rl_grad_region){m->final_norm, m->n_elems - m->final_norm};
    for (int l = 0; l < L; l++) {
        size_t end = l + 1 < L ? m->layers[l + 1].attn_norm : m->final_norm;
        regions[L - l] = (rl_grad_region){m->layers[l].attn_norm, end - m->layers[l].attn_norm};
    }
    regions[L + 1] = (rl_grad_region){0, m->layers[0].attn_norm};
}
