/* mem_plan.c — see mem_plan.h. */
#include "train/mem_plan.h"

#include <stdio.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define WORKSPACE ((size_t)1 << 30)

void rl_mem_plan_make(rl_mem_plan *p, const rl_model_config *cfg, rl_backend_kind backend, rl_dtype act, int world,
                      int zero, int max_tokens, rl_acts_mode mode, int with_reference)
{
    double psi = (double)rl_config_param_count(cfg);
    int cuda = backend == RL_BACKEND_CUDA, tied = cfg->tie_word_embeddings;
    int shards = zero >= 1 ? world : 1;
    /* a bf16 working copy beside sharded fp32 masters; in fp32 (the CPU, CUDA's fp32 mode) the
     * whole fp32 weights are the working weights on every rank */
    int bf16 = act == RL_BF16;
    *p = (rl_mem_plan){.cfg = *cfg, .world = world, .zero = zero, .cuda = cuda, .act = act, .max_tokens = max_tokens,
                       .with_reference = with_reference, .mode = mode, .n_params = psi};
    p->weights = bf16 ? (size_t)(2 * psi) : 0;
    p->master = (size_t)(4 * psi / (bf16 ? shards : 1));
    p->moments = (size_t)(8 * psi / shards);
    p->grads = (size_t)(4 * psi / (zero == 2 ? world : 1));
    if (zero == 2) {
        double embed = (double)cfg->vocab_size * cfg->hidden_size;
        double layer = (psi - embed * (tied ? 1 : 2) - cfg->hidden_size) / cfg->n_layers;
        double big = tied ? embed : embed + cfg->hidden_size, slot = tied && cfg->hidden_size > layer ? cfg->hidden_size : layer;
        p->buckets = (size_t)(4 * (big + 2 * slot));
    }
    p->acts = rl_acts_plan_bytes(cfg, act, max_tokens, mode);
    p->workspace = cuda ? WORKSPACE : 0;
    p->reference = with_reference ? (size_t)((bf16 ? 2 : 4) * psi) : 0; /* frozen: working weights only */
    p->zero_total = p->weights + p->master + p->moments + p->grads;
    p->total = p->zero_total + p->buckets + p->acts + p->workspace + p->reference;
}

void rl_mem_plan_add_value(rl_mem_plan *p, const rl_model_config *value_cfg)
{
    rl_mem_plan v;
    rl_mem_plan_make(&v, value_cfg, p->cuda ? RL_BACKEND_CUDA : RL_BACKEND_CPU, p->act, p->world, p->zero, p->max_tokens,
                     p->mode, 0); /* sharded over the same ranks as the policy */
    const rl_model_config *a = &p->cfg, *b = value_cfg;
    int shared = a->hidden_size == b->hidden_size && a->intermediate_size == b->intermediate_size &&
                 a->n_layers == b->n_layers && a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads &&
                 a->head_dim == b->head_dim; /* the trainer shares the activations (rl_acts_share) */
    /* on one rank the two models take turns with one gradient buffer (ppo.c share_grads): the
     * value model adds only what it has beyond the policy's */
    size_t grads = v.grads;
    if (p->world == 1) grads = v.grads > p->grads ? v.grads - p->grads : 0;
    p->value = v.zero_total - v.grads + grads + v.buckets + (shared ? 0 : v.acts);
    p->total += p->value;
}

void rl_mem_plan_add_engine(rl_mem_plan *p, const rl_engine_options *eng, size_t kv_bytes, int releases_pool)
{
    p->engine = rl_acts_plan_bytes(&p->cfg, p->act, eng->max_num_batched_tokens, RL_ACTS_INFER) +
                (size_t)eng->max_num_seqs * (size_t)p->cfg.vocab_size * sizeof(float);
    p->kv = releases_pool ? (kv_bytes > p->acts ? kv_bytes - p->acts : 0) : kv_bytes;
    p->total += p->engine + p->kv;
}

void rl_mem_plan_describe(const rl_mem_plan *p, char *out, size_t size)
{
    char ref[64] = "", val[64] = "", eng[96] = "";
    if (p->reference) snprintf(ref, sizeof ref, " + the KL reference %.1f", p->reference / GIB);
    if (p->value) snprintf(val, sizeof val, " + the value model %.1f", p->value / GIB);
    if (p->engine) snprintf(eng, sizeof eng, " + the engine's buffers %.1f and KV pool %.1f", p->engine / GIB, p->kv / GIB);
    snprintf(out, size,
             "%.1f GiB per %s for %.2fB parameters on %d rank%s with --zero %d: %.1f GiB as ZeRO counts (bf16 "
             "weights %.1f, fp32 %s %.1f, AdamW moments %.1f, fp32 gradients %.1f) + ZeRO-2 region buffers %.1f "
             "+ activations %.1f + workspace %.1f%s%s%s",
             p->total / GIB, p->cuda ? "GPU" : "CPU rank", p->n_params / 1e9, p->world, p->world > 1 ? "s" : "",
             p->zero, p->zero_total / GIB, p->weights / GIB, p->act == RL_BF16 ? "masters" : "weights", p->master / GIB, p->moments / GIB, p->grads / GIB,
             p->buckets / GIB, p->acts / GIB, p->workspace / GIB, ref, val, eng);
}

int rl_mem_plan_check(const rl_mem_plan *p, rl_ctx *ctx, rl_err *err)
{
    if (ctx->kind != RL_BACKEND_CUDA) return 0;
    size_t free_bytes, total;
    if (rl_mem_info(ctx, &free_bytes, &total)) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "memory plan: ");
    }
    if (p->total <= free_bytes) return 0;
    char what[800], fits[160] = "Even 64 GPUs with --zero 2 would not hold it";
    rl_mem_plan_describe(p, what, sizeof what);
    /* the same run spread wider: the smallest GPU count that fits with ZeRO 2 */
    for (int n = 2; n <= 64; n *= 2) {
        rl_mem_plan wider;
        rl_mem_plan_make(&wider, &p->cfg, RL_BACKEND_CUDA, p->act, n, 2, p->max_tokens, p->mode, p->with_reference);
        if (n > p->world && wider.total <= free_bytes) {
            snprintf(fits, sizeof fits, "With --gpus %d --zero 2 it needs about %.1f GiB per GPU", n,
                     (wider.total + p->value + p->engine + p->kv) / GIB);
            break;
        }
    }
    return rl_err_set(err, "not enough GPU memory: training needs about %s; GPU %d has %.1f GiB free of %.1f. %s",
                      what, ctx->device, free_bytes / GIB, total / GIB, fits);
}
