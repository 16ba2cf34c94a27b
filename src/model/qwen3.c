/* qwen3.c — the transformer's forward, backward and KV-cached forward in terms of ops.h: Qwen3
 * (q/k RMSNorm per head before RoPE), Qwen2 (q/k/v biases) and Llama (neither) by config flags.
 *
 * One layer, pre-norm with a residual stream x:
 *   xn1 = rmsnorm(x) ; q, k, v = xn1 Wq^T (+bq), xn1 Wk^T (+bk), xn1 Wv^T (+bv)
 *   q, k = rmsnorm_head(q), rmsnorm_head(k)      (qk_norm)
 *   q, k = rope(q), rope(k) ; attn = causal GQA attention(q, k, v) with scale 1/sqrt(head_dim)
 *   h = x + attn Wo^T ; xn2 = rmsnorm(h) ; x' = h + (silu(xn2 Wg^T) * xn2 Wu^T) Wd^T
 * then logits = rmsnorm(x_L) W_lm^T, log-softmax, picked at the next token. A value model
 * (config.h's head) scores rmsnorm(x_L) with its one-label head instead (rl_value_head_fwd),
 * through the same rows and the same shift: model.h's "values". A causal LM may carry such a head
 * beside its lm_head (rl_value_head: PPO's shared-trunk critic): its values come from the same
 * rmsnorm(x_L), and its backward adds the head's dhidden to the lm_head's before the final norm.
 *
 * The residual additions are matmuls that read the stream as their residual input
 * (rl_matmul_residual_fwd: out = stream + in W^T), so no separate add or copy runs. The backward walks the same steps in reverse with one gradient
 * buffer for the residual stream (dres), into which each RMSNorm backward adds its dx. In TRAIN
 * mode it first remakes, with the forward's own ops, what the layers do not keep (the norm
 * outputs, q and k after QK-norm + RoPE, silu(gate) * up; see acts_internal.h).
 * The lm_head op scores row t against token t + 1 (targets = -1 at each sequence's last row);
 * forward/backward shift by one to give the token-aligned log-probs model.h documents.
 * The paged forward (generation) runs the same layer, but writes the new keys and values into
 * the engine's block pool and attends over the pool (rl_paged_attention_fwd); it touches no
 * host copy of its batch, so the engine can capture a decode step as a graph. In inference,
 * projections whose weights are adjacent run as one product (gate|up read by SwiGLU with a row
 * stride; q|k|v read in place by the paged step's fused q/k norm + RoPE + cache write, or split
 * into q, k, v by row gathers for the forward of log-probs and in deterministic mode), and the
 * RMSNorms and SwiGLU run inside the products that follow them (rl_rmsnorm_matmul_fwd,
 * rl_swiglu_matmul_residual_fwd: the same values, fewer kernels in a decode step) up to
 * rl_fold_rows rows; past them each RMSNorm is made with the product before it instead
 * (rl_matmul_residual_rmsnorm_fwd: the MLP's norm with o, the next layer's input norm with
 * down, which the CUDA backend folds into the product's split-k sum). Not with
 * ctx->deterministic, where the norms, q/k norm, RoPE and cache write run as the training
 * forward's ops. The adjacent products stay one product there too: a batch-invariant product
 * computes each output element alone (ctx.h, deterministic), so its columns' bits do not
 * depend on how many columns share the call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "model/acts_internal.h"

/* A batch as the attention of one layer sees it. Training: q and k share cu_q, or with shared
 * prefixes (kmap set) the keys and values are first copied into slabs (cu_k; acts_internal.h).
 * Generation: keys and values go to the block pool and come from it (pool and paged set). */
typedef struct attn_batch {
    int n_tokens, n_seqs, max_seqlen_q, max_seqlen_k, n_kx;
    const int32_t *positions, *cu_q, *cu_k;    /* backend */
    const int32_t *kmap, *kinv_off, *kinv_rows; /* backend, shared prefixes only */
    const rl_kv_pool_view *pool;       /* NULL when training */
    const rl_paged_batch *paged;       /* with pool */
} attn_batch;

static const void *weight(const rl_model *m, size_t offset)
{
    if (offset == SIZE_MAX) return NULL;
    return (const char *)m->working + offset * rl_dtype_size(m->ctx->act_dtype);
}

static float *grad(const rl_model *m, size_t offset)
{
    if (offset == SIZE_MAX) return NULL;
    const rl_grad_hooks *h = m->grad_hooks;
    return h && h->at ? h->at(h->user, offset) : m->grads + offset;
}

/* Tells the gradient hooks (if any) that region r begins or ends (model.h). */
static int region_hook(const rl_model *m, int begin, int r, rl_err *err)
{
    const rl_grad_hooks *h = m->grad_hooks;
    if (!h) return 0;
    return begin ? h->begin(h->user, r, err) : h->end(h->user, r, err);
}

/* Row `row` of a [*, width] activation buffer. */
static void *act_row(const rl_model *m, void *base, size_t row, size_t width)
{
    return (char *)base + row * width * rl_dtype_size(m->ctx->act_dtype);
}

/* The steps whose outputs TRAIN mode does not keep per layer (acts_internal.h): the forward
 * runs them, and the backward runs them again, the same ops on the same inputs, so the
 * recomputed values are bit-identical to the forward's. */
static int attn_norm_fwd(rl_model *m, rl_acts *a, int l, int T, rl_err *err)
{
    const rl_model_config *c = &m->config;
    rl_layer_acts *s = &a->layers[l];
    RL_TRY_OP(m->ctx, err, rl_rmsnorm_fwd(m->ctx, s->xn1, s->rstd1, a->x[l], weight(m, m->layers[l].attn_norm), T,
                                          c->hidden_size, (float)c->rms_norm_eps));
    return 0;
}

/* QK-norm (from q_raw, k_raw) then RoPE; without QK-norm RoPE rotates the projections in place,
 * so only the QK-norm form can be recomputed. */
static int qk_fwd(rl_model *m, rl_acts *a, int l, const attn_batch *b, rl_err *err)
{
    const rl_model_config *c = &m->config;
    const rl_layer_offsets *W = &m->layers[l];
    rl_layer_acts *s = &a->layers[l];
    int T = b->n_tokens, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    float eps = (float)c->rms_norm_eps;
    if (c->qk_norm) {
        RL_TRY_OP(m->ctx, err, rl_rmsnorm_fwd(m->ctx, s->q, s->q_rstd, s->q_raw, weight(m, W->q_norm), T * H, hd, eps));
        RL_TRY_OP(m->ctx, err, rl_rmsnorm_fwd(m->ctx, s->k, s->k_rstd, s->k_raw, weight(m, W->k_norm), T * KV, hd,
                                              eps));
    }
    RL_TRY_OP(m->ctx, err, rl_rope_fwd(m->ctx, s->q, b->positions, m->inv_freq, T, H, hd));
    RL_TRY_OP(m->ctx, err, rl_rope_fwd(m->ctx, s->k, b->positions, m->inv_freq, T, KV, hd));
    return 0;
}

static int mlp_norm_fwd(rl_model *m, rl_acts *a, int l, int T, rl_err *err)
{
    const rl_model_config *c = &m->config;
    rl_layer_acts *s = &a->layers[l];
    RL_TRY_OP(m->ctx, err, rl_rmsnorm_fwd(m->ctx, s->xn2, s->rstd2, s->h, weight(m, m->layers[l].mlp_norm), T,
                                          c->hidden_size, (float)c->rms_norm_eps));
    return 0;
}

static int swiglu_fwd(rl_model *m, rl_acts *a, int l, int T, rl_err *err)
{
    int I = m->config.intermediate_size;
    rl_layer_acts *s = &a->layers[l];
    RL_TRY_OP(m->ctx, err, rl_swiglu_fwd(m->ctx, s->act, s->gate, s->up, T, I, I));
    return 0;
}

/* out = rmsnorm(x) W^T (+ bias), the norm's output in xn and rstd (the layer's xn1/rstd1 or
 * xn2/rstd2): one op when fold (inference, where the CUDA backend folds the norm into a
 * few-row product), else the norm and the product as the training forward runs them, so the
 * backward's recompute of the norm (attn_norm_fwd, mlp_norm_fwd) gives the same values. With
 * made, xn already holds the norm (made with the product before it): only the product runs. */
static int norm_product(rl_model *m, int fold, int made, void *out, void *xn, float *rstd, const void *x, size_t norm,
                        size_t w, size_t bias, int T, int n, rl_err *err)
{
    const rl_model_config *c = &m->config;
    int D = c->hidden_size;
    float eps = (float)c->rms_norm_eps;
    if (made) {
        RL_TRY_OP(m->ctx, err, rl_matmul_fwd(m->ctx, out, xn, weight(m, w), weight(m, bias), T, n, D, 0));
        return 0;
    }
    if (fold) {
        RL_TRY_OP(m->ctx, err, rl_rmsnorm_matmul_fwd(m->ctx, out, xn, rstd, x, weight(m, norm), eps, weight(m, w),
                                                     weight(m, bias), T, n, D));
        return 0;
    }
    RL_TRY_OP(m->ctx, err, rl_rmsnorm_fwd(m->ctx, xn, rstd, x, weight(m, norm), T, D, eps));
    RL_TRY_OP(m->ctx, err, rl_matmul_fwd(m->ctx, out, xn, weight(m, w), weight(m, bias), T, n, D, 0));
    return 0;
}

/* The fused q|k|v product's rows apart, into q, k (before QK-norm when the model has it) and v. */
static int split_qkv(rl_model *m, rl_acts *a, rl_layer_acts *s, void *q, void *k, int T, rl_err *err)
{
    int H = m->config.n_heads, KV = m->config.n_kv_heads, hd = m->config.head_dim;
    RL_TRY_OP(m->ctx, err, rl_gather_rows(m->ctx, q, a->qkv, a->split_q, T * H, hd));
    RL_TRY_OP(m->ctx, err, rl_gather_rows(m->ctx, k, a->qkv, a->split_k, T * KV, hd));
    RL_TRY_OP(m->ctx, err, rl_gather_rows(m->ctx, s->v, a->qkv, a->split_v, T * KV, hd));
    return 0;
}

/* Shared prefixes: each sequence's key slab, its prefix's keys and values then its own (k after
 * QK-norm and RoPE), in a->kx, a->vx. */
static int prefix_slabs(rl_model *m, rl_acts *a, const rl_layer_acts *s, const attn_batch *b, rl_err *err)
{
    int kd = m->config.n_kv_heads * m->config.head_dim;
    RL_TRY_OP(m->ctx, err, rl_gather_rows(m->ctx, a->kx, s->k, b->kmap, b->n_kx, kd));
    RL_TRY_OP(m->ctx, err, rl_gather_rows(m->ctx, a->vx, s->v, b->kmap, b->n_kx, kd));
    return 0;
}

/* Layer l from a->x[l] into a->layers[l]; the output a->x[l + 1] only when write_output (the
 * checkpoint recompute needs the layer's insides, not its output). */
static int layer_fwd(rl_model *m, rl_acts *a, int l, const attn_batch *b, int write_output, rl_err *err)
{
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    const rl_layer_offsets *W = &m->layers[l];
    rl_layer_acts *s = &a->layers[l];
    int T = b->n_tokens, D = c->hidden_size, I = c->intermediate_size;
    int H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    const void *x = a->x[l];
    int fold = a->mode == RL_ACTS_INFER && !ctx->deterministic;
    /* past the backend's few-row folds each RMSNorm is made with the product before it: the
     * MLP's with o, the next layer's input norm with down (so from layer 1 on, xn1 is made: an
     * inference forward writes every layer's output) */
    int in_sum = fold && T > rl_fold_rows(ctx), xn1_made = in_sum && l > 0;
    float eps = (float)c->rms_norm_eps;

    void *q = c->qk_norm ? s->q_raw : s->q;
    void *k = c->qk_norm ? s->k_raw : s->k;
    int fused = a->qkv != NULL;
    if (fused) {
        if (norm_product(m, fold, xn1_made, a->qkv, s->xn1, s->rstd1, x, W->attn_norm, W->q, SIZE_MAX, T,
                         (H + 2 * KV) * hd, err))
            return -1;
    } else {
        if (norm_product(m, fold, xn1_made, q, s->xn1, s->rstd1, x, W->attn_norm, W->q, W->q_bias, T, H * hd, err))
            return -1;
        RL_TRY_OP(ctx, err, rl_matmul_fwd(ctx, k, s->xn1, weight(m, W->k), weight(m, W->k_bias), T, KV * hd, D, 0));
        RL_TRY_OP(ctx, err, rl_matmul_fwd(ctx, s->v, s->xn1, weight(m, W->v), weight(m, W->v_bias), T, KV * hd, D, 0));
    }

    float scale = 1.0f / sqrtf((float)hd);
    if (b->pool) {
        const rl_paged_batch *pb = b->paged;
        size_t esize = rl_dtype_size(ctx->act_dtype), plane = (size_t)b->pool->block_size * KV * hd * esize;
        rl_paged_kv kv = {.k = (char *)b->pool->base + (size_t)(2 * l) * plane,
                          .v = (char *)b->pool->base + (size_t)(2 * l + 1) * plane,
                          .block_stride = b->pool->block_stride, .block_size = b->pool->block_size,
                          .block_tables = pb->block_tables, .max_blocks = pb->max_blocks,
                          .share_lead = pb->share_lead, .share_len = pb->share_len,
                          .share_count = pb->share_count, .max_share = pb->max_share};
        if (ctx->deterministic) {
            if (fused && split_qkv(m, a, s, q, k, T, err)) return -1;
            if (qk_fwd(m, a, l, b, err)) return -1;
            RL_TRY_OP(ctx, err, rl_kv_cache_write(ctx, &kv, s->k, s->v, pb->slots, T, KV, hd));
            RL_TRY_OP(ctx, err, rl_paged_attention_fwd(ctx, s->attn, s->q, &kv, pb->cu_seqlens_q, pb->seqlens_k,
                                                       pb->n_seqs, pb->max_seqlen_q, pb->max_seqlen_k, H, KV, hd, scale));
        } else { /* q/k norm + RoPE + cache write, then the attention: one kernel in a small decode step */
            size_t row = fused ? (size_t)(H + 2 * KV) * hd : 0;
            const char *qs = fused ? a->qkv : q;
            RL_TRY_OP(ctx, err, rl_qk_norm_rope_attention_fwd(ctx, s->attn, s->q, &kv, qs,
                                         fused ? qs + (size_t)H * hd * esize : k,
                                         fused ? qs + (size_t)(H + KV) * hd * esize : s->v,
                                         fused ? row : (size_t)H * hd, fused ? row : (size_t)KV * hd,
                                         c->qk_norm ? weight(m, W->q_norm) : NULL,
                                         c->qk_norm ? weight(m, W->k_norm) : NULL, eps,
                                         b->positions, m->inv_freq, pb->slots, T, pb->cu_seqlens_q, pb->seqlens_k,
                                         pb->n_seqs, pb->max_seqlen_q, pb->max_seqlen_k, H, KV, hd, scale));
        }
    } else {
        if (fused && split_qkv(m, a, s, q, k, T, err)) return -1;
        if (qk_fwd(m, a, l, b, err)) return -1;
        const void *k_att = s->k, *v_att = s->v;
        if (b->kmap && prefix_slabs(m, a, s, b, err)) return -1;
        if (b->kmap) k_att = a->kx, v_att = a->vx;
        RL_TRY_OP(ctx, err, rl_attention_fwd(ctx, s->attn, s->lse, s->q, k_att, v_att, b->cu_q, b->cu_k, NULL,
                            b->n_seqs, b->max_seqlen_q, b->max_seqlen_k, H, KV, hd, scale, 1));
    }

    if (in_sum)
        RL_TRY_OP(ctx, err, rl_matmul_residual_rmsnorm_fwd(ctx, s->h, s->xn2, s->rstd2, x, s->attn, weight(m, W->o),
                                                           weight(m, W->mlp_norm), eps, T, D, H * hd));
    else
        RL_TRY_OP(ctx, err, rl_matmul_residual_fwd(ctx, s->h, x, s->attn, weight(m, W->o), T, D, H * hd));
    const void *gate = s->gate, *up = s->up;
    int stride = I;
    if (a->gate_up && m->fused_gate_up) {
        if (norm_product(m, fold, in_sum, a->gate_up, s->xn2, s->rstd2, s->h, W->mlp_norm, W->gate, SIZE_MAX, T, 2 * I,
                         err))
            return -1;
        gate = a->gate_up;
        up = act_row(m, a->gate_up, 1, (size_t)I);
        stride = 2 * I;
    } else {
        if (norm_product(m, fold, in_sum, s->gate, s->xn2, s->rstd2, s->h, W->mlp_norm, W->gate, SIZE_MAX, T, I, err))
            return -1;
        RL_TRY_OP(ctx, err, rl_matmul_fwd(ctx, s->up, s->xn2, weight(m, W->up), NULL, T, I, D, 0));
    }
    if (in_sum && write_output && l + 1 < c->n_layers) { /* the next layer's input norm with down */
        rl_layer_acts *next = &a->layers[l + 1];
        RL_TRY_OP(ctx, err, rl_swiglu_fwd(ctx, s->act, gate, up, T, I, stride));
        RL_TRY_OP(ctx, err, rl_matmul_residual_rmsnorm_fwd(ctx, a->x[l + 1], next->xn1, next->rstd1, s->h, s->act,
                                                           weight(m, W->down), weight(m, m->layers[l + 1].attn_norm),
                                                           eps, T, D, I));
        return 0;
    }
    if (fold && write_output) {
        RL_TRY_OP(ctx, err, rl_swiglu_matmul_residual_fwd(ctx, a->x[l + 1], s->act, s->h, gate, up, stride,
                                                          weight(m, W->down), T, D, I));
        return 0;
    }
    RL_TRY_OP(ctx, err, rl_swiglu_fwd(ctx, s->act, gate, up, T, I, stride));
    if (!write_output) return 0;
    RL_TRY_OP(ctx, err, rl_matmul_residual_fwd(ctx, a->x[l + 1], s->h, s->act, weight(m, W->down), T, D, I));
    return 0;
}

/* On entry a->dres holds d loss / d(layer l output); on return d loss / d(layer l input).
 * In TRAIN mode the norm outputs, q and k and act live in one set shared by all layers, so each
 * is remade just before its first use here (CHECKPOINT mode has re-run the whole layer). */
static int layer_bwd(rl_model *m, rl_acts *a, int l, const attn_batch *b, rl_err *err)
{
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    const rl_layer_offsets *W = &m->layers[l];
    const rl_layer_acts *s = &a->layers[l];
    int T = b->n_tokens, D = c->hidden_size, I = c->intermediate_size;
    int H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    int remake = a->mode == RL_ACTS_TRAIN;

    /* MLP: x' = h + act Wd^T; the residual passes dres through to h unchanged. */
    if (remake && swiglu_fwd(m, a, l, T, err)) return -1;
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dact, grad(m, W->down), NULL, a->dres, s->act, weight(m, W->down), T,
                                      D, I, 0));
    RL_TRY_OP(ctx, err, rl_swiglu_bwd(ctx, a->dgate, a->dup, a->dact, s->gate, s->up, T, I, I));
    if (remake && mlp_norm_fwd(m, a, l, T, err)) return -1;
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dxn, grad(m, W->gate), NULL, a->dgate, s->xn2, weight(m, W->gate), T,
                                      I, D, 0));
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dxn, grad(m, W->up), NULL, a->dup, s->xn2, weight(m, W->up), T, I, D, 1));
    RL_TRY_OP(ctx, err, rl_rmsnorm_bwd(ctx, a->dres, grad(m, W->mlp_norm), a->dxn, s->h, weight(m, W->mlp_norm),
                                       s->rstd2, T, D, 1));

    /* Attention: h = x + attn Wo^T. */
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dattn, grad(m, W->o), NULL, a->dres, s->attn, weight(m, W->o), T, D,
                                      H * hd, 0));
    if (remake && c->qk_norm && qk_fwd(m, a, l, b, err)) return -1;
    float scale = 1.0f / sqrtf((float)hd);
    if (!b->kmap) {
        RL_TRY_OP(ctx, err, rl_attention_bwd(ctx, a->dq, a->dk, a->dv, a->dattn, s->attn, s->lse, s->q, s->k, s->v,
                                             b->cu_q, b->cu_q, b->n_seqs, b->max_seqlen_q, b->max_seqlen_q, H, KV, hd,
                                             scale, 1));
    } else { /* through the key slabs; a prefix row's dk, dv add up over the slabs that copy it */
        if (prefix_slabs(m, a, s, b, err)) return -1;
        RL_TRY_OP(ctx, err, rl_attention_bwd(ctx, a->dq, a->dkx, a->dvx, a->dattn, s->attn, s->lse, s->q, a->kx,
                                             a->vx, b->cu_q, b->cu_k, b->n_seqs, b->max_seqlen_q, b->max_seqlen_k, H,
                                             KV, hd, scale, 1));
        RL_TRY_OP(ctx, err, rl_sum_rows(ctx, a->dk, a->dkx, b->kinv_off, b->kinv_rows, T, KV * hd));
        RL_TRY_OP(ctx, err, rl_sum_rows(ctx, a->dv, a->dvx, b->kinv_off, b->kinv_rows, T, KV * hd));
    }
    RL_TRY_OP(ctx, err, rl_rope_bwd(ctx, a->dq, b->positions, m->inv_freq, T, H, hd));
    RL_TRY_OP(ctx, err, rl_rope_bwd(ctx, a->dk, b->positions, m->inv_freq, T, KV, hd));
    void *dq = a->dq, *dk = a->dk;
    if (c->qk_norm) {
        RL_TRY_OP(ctx, err, rl_rmsnorm_bwd(ctx, a->dq_raw, grad(m, W->q_norm), a->dq, s->q_raw, weight(m, W->q_norm),
                                           s->q_rstd, T * H, hd, 0));
        RL_TRY_OP(ctx, err, rl_rmsnorm_bwd(ctx, a->dk_raw, grad(m, W->k_norm), a->dk, s->k_raw, weight(m, W->k_norm),
                                           s->k_rstd, T * KV, hd, 0));
        dq = a->dq_raw;
        dk = a->dk_raw;
    }
    if (remake && attn_norm_fwd(m, a, l, T, err)) return -1;
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dxn, grad(m, W->q), grad(m, W->q_bias), dq, s->xn1, weight(m, W->q), T,
                                      H * hd, D, 0));
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dxn, grad(m, W->k), grad(m, W->k_bias), dk, s->xn1, weight(m, W->k), T,
                                      KV * hd, D, 1));
    RL_TRY_OP(ctx, err, rl_matmul_bwd(ctx, a->dxn, grad(m, W->v), grad(m, W->v_bias), a->dv, s->xn1, weight(m, W->v),
                                      T, KV * hd, D, 1));
    RL_TRY_OP(ctx, err, rl_rmsnorm_bwd(ctx, a->dres, grad(m, W->attn_norm), a->dxn, a->x[l], weight(m, W->attn_norm),
                                       s->rstd1, T, D, 1));
    return 0;
}

/* Validates a packed batch against the acts and the vocabulary (prefix_of as
 * rl_model_forward_shared's, or NULL); returns the longest sequence through *max_len. */
static int check_batch(const rl_model *m, const rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens,
                       const int32_t *prefix_of, int n_seqs, int *max_len, rl_err *err)
{
    if (a->model != m) return rl_err_set(err, "model: the activations were planned for another model");
    if (n_seqs < 1) return rl_err_set(err, "model: batch has %d sequences, need at least 1", n_seqs);
    if (cu_seqlens[0] != 0) return rl_err_set(err, "model: cu_seqlens[0] = %d, must be 0", cu_seqlens[0]);
    int longest = 0;
    for (int s = 0; s < n_seqs; s++) {
        int len = cu_seqlens[s + 1] - cu_seqlens[s], p = prefix_of ? prefix_of[s] : -1, whole = len;
        if (len < 1)
            return rl_err_set(err, "model: sequence %d has length %d (cu_seqlens must increase)", s, len);
        if (cu_seqlens[s + 1] > a->max_tokens)
            return rl_err_set(err, "model: batch has more than %d tokens (the activations' plan)", a->max_tokens);
        if (p != -1 && (p < 0 || p >= s || prefix_of[p] != -1))
            return rl_err_set(err, "model: prefix_of[%d] = %d is neither -1 nor an earlier sequence without a prefix",
                              s, p);
        if (p >= 0) whole += cu_seqlens[p + 1] - cu_seqlens[p];
        if (whole > m->config.max_position_embeddings)
            return rl_err_set(err, "model: sequence %d has %d tokens%s, more than max_position_embeddings = %d", s,
                              whole, p >= 0 ? " with its prefix" : "", m->config.max_position_embeddings);
        if (len > longest) longest = len;
    }
    int n_tokens = cu_seqlens[n_seqs];
    for (int t = 0; t < n_tokens; t++)
        if (tokens[t] < 0 || tokens[t] >= m->config.vocab_size)
            return rl_err_set(err, "model: token %d at position %d is outside the vocabulary [0, %d)",
                              tokens[t], t, m->config.vocab_size);
    *max_len = longest;
    return 0;
}

/* The key slabs of a batch with shared prefixes (acts_internal.h), made on the host and
 * uploaded: slab s is its prefix's rows then its own; kinv lists each row's copies in slab order.
 * Sets a->n_kx (the slab rows) and *max_k (the longest slab). */
static int plan_slabs(rl_model *m, rl_acts *a, const int32_t *cu, const int32_t *prefix_of, int n_seqs, int *max_k,
                      rl_err *err)
{
    rl_ctx *ctx = m->ctx;
    int T = cu[n_seqs], n = 0;
    for (int s = 0; s < n_seqs; s++) {
        int p = prefix_of[s], from[2] = {p >= 0 ? cu[p] : 0, cu[s]}, to[2] = {p >= 0 ? cu[p + 1] : 0, cu[s + 1]};
        if (n + (to[0] - from[0]) + (to[1] - from[1]) > a->max_tokens)
            return rl_err_set(err, "model: the key slabs of the shared prefixes need more than %d rows (the "
                                   "activations' plan)", a->max_tokens);
        a->host_cu_k[s] = n;
        for (int part = 0; part < 2; part++)
            for (int r = from[part]; r < to[part]; r++) a->host_kmap[n++] = r;
        if (n - a->host_cu_k[s] > *max_k) *max_k = n - a->host_cu_k[s];
    }
    a->host_cu_k[n_seqs] = n;
    int32_t *off = a->host_kinv_off, *cursor = malloc((size_t)T * sizeof *cursor);
    if (!cursor) return rl_err_oom(err, "key slab lists", (size_t)T * sizeof *cursor);
    memset(off, 0, (size_t)(T + 1) * sizeof *off);
    for (int e = 0; e < n; e++) off[a->host_kmap[e] + 1]++;
    for (int r = 0; r < T; r++) off[r + 1] += off[r];
    memcpy(cursor, off, (size_t)T * sizeof *cursor);
    for (int e = 0; e < n; e++) a->host_kinv_rows[cursor[a->host_kmap[e]]++] = e;
    free(cursor);
    a->n_kx = n;
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->kmap, a->host_kmap, (size_t)n * sizeof(int32_t), RL_H2D));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->cu_k, a->host_cu_k, (size_t)(n_seqs + 1) * sizeof(int32_t), RL_H2D));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->kinv_off, off, (size_t)(T + 1) * sizeof(int32_t), RL_H2D));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->kinv_rows, a->host_kinv_rows, (size_t)n * sizeof(int32_t), RL_H2D));
    return 0;
}

/* The attention's view of the acts' current batch (training forward and backward). */
static attn_batch acts_batch(const rl_acts *a)
{
    int shared = a->n_kx > 0;
    return (attn_batch){.n_tokens = a->n_tokens, .n_seqs = a->n_seqs, .max_seqlen_q = a->max_seqlen,
                        .max_seqlen_k = a->max_seqlen_k, .n_kx = a->n_kx, .positions = a->positions, .cu_q = a->cu_q,
                        .cu_k = shared ? a->cu_k : a->cu_q, .kmap = shared ? a->kmap : NULL,
                        .kinv_off = shared ? a->kinv_off : NULL, .kinv_rows = shared ? a->kinv_rows : NULL};
}

/* From the lm_head's next-token rows to token-aligned values (logp, entropy):
 * dst[t + 1] = src[t], and dst = 0 at the first token of each sequence. */
static int shift_to_tokens(rl_model *m, float *dst, const float *src, const int32_t *cu, int n_seqs,
                           rl_err *err)
{
    int n_tokens = cu[n_seqs];
    if (n_tokens > 1) RL_TRY_OP(m->ctx, err, rl_memcpy(m->ctx, dst + 1, src, (size_t)(n_tokens - 1) * sizeof(float),
                                                       RL_D2D));
    for (int s = 0; s < n_seqs; s++) RL_TRY_OP(m->ctx, err, rl_memzero(m->ctx, dst + cu[s], sizeof(float)));
    return 0;
}

/* The training forward of every rl_model_forward* (prefix_of and head may be NULL). */
static int forward_batch(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens,
                         const int32_t *prefix_of, int n_seqs, float inv_temperature, float *logp, float *entropy,
                         const rl_value_head *head, float *values, rl_err *err)
{
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    int max_len = 0;
    a->have_batch = 0;
    if (check_batch(m, a, tokens, cu_seqlens, prefix_of, n_seqs, &max_len, err)) return -1;
    int T = cu_seqlens[n_seqs], D = c->hidden_size, shared = 0;
    for (int s = 0; prefix_of && s < n_seqs; s++) shared |= prefix_of[s] >= 0;
    a->n_kx = 0;
    a->max_seqlen_k = max_len;
    if (shared && plan_slabs(m, a, cu_seqlens, prefix_of, n_seqs, &a->max_seqlen_k, err)) return -1;
    for (int s = 0; s < n_seqs; s++) {
        int p = shared ? prefix_of[s] : -1, start = p >= 0 ? cu_seqlens[p + 1] - cu_seqlens[p] : 0;
        for (int t = cu_seqlens[s]; t < cu_seqlens[s + 1]; t++) {
            a->host_positions[t] = start + t - cu_seqlens[s];
            a->host_targets[t] = t + 1 < cu_seqlens[s + 1] ? tokens[t + 1] : -1;
        }
    }
    memcpy(a->host_cu, cu_seqlens, (size_t)(n_seqs + 1) * sizeof(int32_t));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->tokens, tokens, (size_t)T * sizeof(int32_t), RL_H2D));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->positions, a->host_positions, (size_t)T * sizeof(int32_t), RL_H2D));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->targets, a->host_targets, (size_t)T * sizeof(int32_t), RL_H2D));
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->cu_q, cu_seqlens, (size_t)(n_seqs + 1) * sizeof(int32_t), RL_H2D));

    a->n_tokens = T;
    a->n_seqs = n_seqs;
    a->max_seqlen = max_len;
    attn_batch b = acts_batch(a);
    RL_TRY_OP(ctx, err, rl_embedding_fwd(ctx, a->x[0], a->tokens, weight(m, m->embed), T, D));
    for (int l = 0; l < c->n_layers; l++)
        if (layer_fwd(m, a, l, &b, 1, err)) return rl_err_prefix(err, "layer %d: ", l);
    RL_TRY_OP(ctx, err, rl_rmsnorm_fwd(ctx, a->xf, a->rstd_f, a->x[c->n_layers], weight(m, m->final_norm), T, D,
                                       (float)c->rms_norm_eps));
    if (head) { /* values[t + 1] = head(xf[t]): the shift of the log-probs, written in place */
        if (c->head != RL_HEAD_LM) return rl_err_set(err, "model: a value head on a value model (%s)", c->architecture);
        if (T > 1) RL_TRY_OP(ctx, err, rl_value_head_fwd(ctx, values + 1, a->xf, head->weight, head->bias, T - 1, D));
        for (int s = 0; s < n_seqs; s++) RL_TRY_OP(ctx, err, rl_memzero(ctx, values + cu_seqlens[s], sizeof(float)));
    }
    if (!logp) { /* values only: the lm_head is not run, nothing to differentiate */
        if (!head || entropy) return rl_err_set(err, "model: a forward without log-probs gives values only");
        return 0;
    }
    if (c->head != RL_HEAD_LM) {
        if (entropy) return rl_err_set(err, "model: a value model has no token distribution (entropy must be NULL)");
        RL_TRY_OP(ctx, err, rl_value_head_fwd(ctx, a->logp_next, a->xf, weight(m, m->score), weight(m, m->score_bias),
                                              T, D));
    } else {
        RL_TRY_OP(ctx, err, rl_lm_head_logprobs_fwd(ctx, a->logp_next, a->head_lse, entropy ? a->entropy_next : NULL,
                                                    a->xf, weight(m, m->lm_head), a->targets, T, D, c->vocab_size,
                                                    inv_temperature));
    }
    if (shift_to_tokens(m, logp, a->logp_next, cu_seqlens, n_seqs, err)) return -1;
    if (entropy && shift_to_tokens(m, entropy, a->entropy_next, cu_seqlens, n_seqs, err)) return -1;

    a->inv_temperature = inv_temperature;
    a->have_batch = a->mode != RL_ACTS_INFER;
    a->have_entropy = entropy != NULL;
    return 0;
}

int rl_model_forward(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens,
                     int n_seqs, float inv_temperature, float *logp, float *entropy, rl_err *err)
{
    return forward_batch(m, a, tokens, cu_seqlens, NULL, n_seqs, inv_temperature, logp, entropy, NULL, NULL, err);
}

int rl_model_forward_shared(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens,
                            const int32_t *prefix_of, int n_seqs, float inv_temperature, float *logp, float *entropy,
                            rl_err *err)
{
    return forward_batch(m, a, tokens, cu_seqlens, prefix_of, n_seqs, inv_temperature, logp, entropy, NULL, NULL,
                         err);
}

int rl_model_forward_value(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens, int n_seqs,
                           float inv_temperature, float *logp, float *entropy, const rl_value_head *head,
                           float *values, rl_err *err)
{
    return forward_batch(m, a, tokens, cu_seqlens, NULL, n_seqs, inv_temperature, logp, entropy, head, values, err);
}

int rl_model_backward(rl_model *m, rl_acts *a, const float *dlogp, rl_err *err)
{
    return rl_model_backward_entropy(m, a, dlogp, NULL, err);
}

int rl_model_backward_entropy(rl_model *m, rl_acts *a, const float *dlogp, const float *dentropy, rl_err *err)
{
    return rl_model_backward_value(m, a, dlogp, dentropy, NULL, NULL, err);
}

int rl_model_backward_value(rl_model *m, rl_acts *a, const float *dlogp, const float *dentropy,
                            const rl_value_head *head, const float *dvalues, rl_err *err)
{
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    if (a->model != m) return rl_err_set(err, "model backward: the activations belong to another model");
    if (!m->grads && !(m->grad_hooks && m->grad_hooks->at))
        return rl_err_set(err, "model backward: gradients are not enabled");
    if (a->mode == RL_ACTS_INFER) return rl_err_set(err, "model backward: the activations were planned for inference only");
    if (!a->have_batch) return rl_err_set(err, "model backward: no forward batch to differentiate");
    int T = a->n_tokens, D = c->hidden_size, n_seqs = a->n_seqs;
    const int32_t *cu = a->host_cu;

    /* Row t of the lm_head scores token t + 1: dlogp_next[t] = dlogp[t + 1], 0 on each
     * sequence's last row (its target is the next sequence's first token, or nothing). */
    if (T > 1) RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->dlogp_next, dlogp + 1, (size_t)(T - 1) * sizeof(float), RL_D2D));
    for (int s = 0; s < n_seqs; s++) RL_TRY_OP(ctx, err, rl_memzero(ctx, a->dlogp_next + cu[s + 1] - 1, sizeof(float)));
    if (dentropy) { /* the same shift (the lm_head ignores rows without a target) */
        if (c->head != RL_HEAD_LM) return rl_err_set(err, "model backward: a value model has no entropy to differentiate");
        if (!a->have_entropy) return rl_err_set(err, "model backward: the forward computed no entropy (entropy was NULL)");
        if (T > 1)
            RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->dentropy_next, dentropy + 1, (size_t)(T - 1) * sizeof(float), RL_D2D));
    }

    attn_batch b = acts_batch(a);
    int L = c->n_layers, tied = m->lm_head == m->embed;
    if ((tied && region_hook(m, 1, L + 1, err)) || region_hook(m, 1, 0, err)) return -1;
    if (c->head != RL_HEAD_LM)
        RL_TRY_OP(ctx, err, rl_value_head_bwd(ctx, a->dxn, grad(m, m->score), grad(m, m->score_bias), a->dlogp_next,
                                              a->xf, weight(m, m->score), T, D));
    else
        RL_TRY_OP(ctx, err, rl_lm_head_logprobs_bwd(ctx, a->dxn, grad(m, m->lm_head), a->dlogp_next,
                                                    dentropy ? a->dentropy_next : NULL, a->xf,
                                                    weight(m, m->lm_head), a->targets, a->head_lse, a->entropy_next,
                                                    T, D, c->vocab_size, a->inv_temperature));
    if (head && dvalues) { /* the head's share of dxn, made in dres (free until the norm's backward) */
        if (c->head != RL_HEAD_LM) return rl_err_set(err, "model backward: a value head on a value model");
        if (T > 1)
            RL_TRY_OP(ctx, err, rl_memcpy(ctx, a->dvalues_next, dvalues + 1, (size_t)(T - 1) * sizeof(float), RL_D2D));
        for (int s = 0; s < n_seqs; s++)
            RL_TRY_OP(ctx, err, rl_memzero(ctx, a->dvalues_next + cu[s + 1] - 1, sizeof(float)));
        RL_TRY_OP(ctx, err, rl_value_head_bwd(ctx, a->dres, head->dweight, head->dbias, a->dvalues_next, a->xf,
                                              head->weight, T, D));
        RL_TRY_OP(ctx, err, rl_add(ctx, a->dxn, a->dres, (size_t)T * D));
    }
    RL_TRY_OP(ctx, err, rl_rmsnorm_bwd(ctx, a->dres, grad(m, m->final_norm), a->dxn, a->x[L],
                                       weight(m, m->final_norm), a->rstd_f, T, D, 0));
    if (region_hook(m, 0, 0, err)) return -1;
    for (int l = L - 1; l >= 0; l--) {
        if (a->mode == RL_ACTS_TRAIN_CHECKPOINT && layer_fwd(m, a, l, &b, 0, err))
            return rl_err_prefix(err, "layer %d (recompute): ", l);
        if (region_hook(m, 1, L - l, err)) return -1;
        if (layer_bwd(m, a, l, &b, err)) return rl_err_prefix(err, "layer %d backward: ", l);
        if (region_hook(m, 0, L - l, err)) return -1;
    }
    if (!tied && region_hook(m, 1, L + 1, err)) return -1;
    RL_TRY_OP(ctx, err, rl_embedding_bwd(ctx, grad(m, m->embed), a->tokens, a->dres, T, D));
    return region_hook(m, 0, L + 1, err);
}

int rl_model_forward_paged(rl_model *m, rl_acts *a, const rl_kv_pool_view *pool,
                           const rl_paged_batch *b, float *logits, rl_err *err)
{
    if (m->config.head != RL_HEAD_LM) return rl_err_set(err, "model: a value model (%s) does not generate", m->config.architecture);
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    a->have_batch = 0;
    a->n_logits = 0;
    if (a->model != m) return rl_err_set(err, "model: the activations were planned for another model");
    if (a->mode != RL_ACTS_INFER) return rl_err_set(err, "model: the paged forward needs inference-mode activations");
    if (b->n_tokens < 1 || b->n_tokens > a->max_tokens || b->n_seqs < 1 || b->n_seqs > b->n_tokens)
        return rl_err_set(err, "model: paged batch of %d tokens in %d sequences (the activations hold %d tokens)",
                          b->n_tokens, b->n_seqs, a->max_tokens);
    if (b->n_logits < 0 || b->n_logits > a->max_tokens)
        return rl_err_set(err, "model: %d logit rows, the activations hold %d", b->n_logits, a->max_tokens);
    if (pool->block_size < 1 || b->max_blocks < 1 || b->max_seqlen_q < 1 || b->max_seqlen_k < b->max_seqlen_q)
        return rl_err_set(err, "model: paged batch with block size %d, %d blocks per sequence, max lengths %d / %d",
                          pool->block_size, b->max_blocks, b->max_seqlen_q, b->max_seqlen_k);
    int T = b->n_tokens, D = c->hidden_size;
    attn_batch ab = {.n_tokens = T, .n_seqs = b->n_seqs, .max_seqlen_q = b->max_seqlen_q,
                     .max_seqlen_k = b->max_seqlen_k, .positions = b->positions, .cu_q = b->cu_seqlens_q,
                     .pool = pool, .paged = b};
    RL_TRY_OP(ctx, err, rl_embedding_fwd(ctx, a->x[0], b->tokens, weight(m, m->embed), T, D));
    for (int l = 0; l < c->n_layers; l++)
        if (layer_fwd(m, a, l, &ab, 1, err)) return rl_err_prefix(err, "layer %d: ", l);
    if (b->n_logits == 0) return 0;
    RL_TRY_OP(ctx, err, rl_gather_rows(ctx, a->gather, a->x[c->n_layers], b->logit_rows, b->n_logits, D));
    RL_TRY_OP(ctx, err, rl_rmsnorm_fwd(ctx, a->xf, a->rstd_f, a->gather, weight(m, m->final_norm), b->n_logits, D,
                                       (float)c->rms_norm_eps));
    RL_TRY_OP(ctx, err, rl_lm_head_logits(ctx, logits, a->xf, weight(m, m->lm_head), b->n_logits, D, c->vocab_size));
    a->n_logits = b->n_logits;
    return 0;
}

int rl_model_paged_logprobs(rl_model *m, rl_acts *a, const int32_t *targets, int n_rows,
                            float inv_temperature, float *logp, rl_err *err)
{
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    if (a->model != m || n_rows < 0 || n_rows > a->n_logits)
        return rl_err_set(err, "model: log-probs of %d rows asked, the last paged forward gave %d", n_rows, a->n_logits);
    RL_TRY_OP(ctx, err, rl_lm_head_logprobs_fwd(ctx, logp, a->head_lse, NULL, a->xf, weight(m, m->lm_head), targets,
                                                n_rows, c->hidden_size, c->vocab_size, inv_temperature));
    return 0;
}
