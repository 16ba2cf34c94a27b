/* ops.c — the one place that checks an op's arguments and sends it to its backend.
 *
 * Every rl_<name> of ops.h is made here from its list entry: check_<name> (below, one per op,
 * same parameters) applies the rules of the op's doc comment, then rl_cpu_<name> or
 * rl_cuda_<name> runs, as ctx->kind says. Whatever fails (a rule here, a backend's own limit, a
 * CUDA call) gets "rl_<name>: " in front, so every op error names its op, in one format:
 *     rl_attention_fwd: n_heads 12 is not a multiple of n_kv_heads 5
 * The checks read only scalars, host structs and pointer values, never backend memory (on CUDA
 * that would need a copy and a sync per op): values inside tensors (ids, cu_seqlens) are
 * checked where they are made, and by the CPU reference, which reads them anyway. */
#include "backend/ops.h"

#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#ifdef RL_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#define BACKEND(name, args) (ctx->kind == RL_BACKEND_CUDA ? rl_cuda_##name args : rl_cpu_##name args)
#else
#define BACKEND(name, args) rl_cpu_##name args
#endif

/* Each entry of ops.h becomes its public op: the check (declared here, written below: a missing
 * one fails the build), then the backend. */
#define RL_OPDEF(name, params, args)                                                         \
    static int check_##name params;                                                          \
    int rl_##name params                                                                     \
    {                                                                                        \
        if (check_##name args != 0 || BACKEND(name, args) != 0)                              \
            return rl_err_prefix(&ctx->err, "rl_" #name ": ");                               \
        return 0;                                                                            \
    }
#include "backend/ops.h"

/* ---- the rules, written as "<what> <value> <problem>" ------------------------------------- */
/* In a check (a function with rl_ctx *ctx), each returns -1 with the message in ctx->err when its
 * rule is broken; NEED and AT_LEAST take the names from the arguments as written. */
#define NEED(...) /* none of these pointers is NULL */                                       \
    do {                                                                                     \
        const void *need_[] = {__VA_ARGS__};                                                 \
        if (first_null(ctx, need_, sizeof need_ / sizeof *need_, #__VA_ARGS__)) return -1;   \
    } while (0)
#define AT_LEAST(x, min)                                                                     \
    do {                                                                                     \
        if ((x) < (min)) return below(ctx, #x, (x), (min));                                  \
    } while (0)
#define RULE(ok, ...)                                                                        \
    do {                                                                                     \
        if (!(ok)) return rl_err_set(&ctx->err, __VA_ARGS__);                                \
    } while (0)

/* names is NEED's argument list as text, "out, lse, q": its i-th item names ptrs[i]. */
static int first_null(rl_ctx *ctx, const void *const *ptrs, size_t n, const char *names)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(names, ",");
        if (!ptrs[i]) return rl_err_set(&ctx->err, "%.*s is NULL", (int)len, names);
        names += len;
        while (*names == ',' || *names == ' ') names++;
    }
    return 0;
}

static int below(rl_ctx *ctx, const char *what, long long value, long long min)
{
    if (min == 0) return rl_err_set(&ctx->err, "%s %lld is negative", what, value);
    return rl_err_set(&ctx->err, "%s %lld is less than %lld", what, value, min);
}

/* ---- embedding ------------------------------------------------------------------------------ */
static int check_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens, int dim)
{
    AT_LEAST(n_tokens, 0);
    AT_LEAST(dim, 1);
    if (n_tokens > 0) NEED(out, ids, table);
    return 0;
}

static int check_embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout, int n_tokens,
                               int dim)
{
    AT_LEAST(n_tokens, 0);
    AT_LEAST(dim, 1);
    if (n_tokens > 0) NEED(dtable, ids, dout);
    return 0;
}

/* ---- RMSNorm -------------------------------------------------------------------------------- */
static int check_rmsnorm_fwd(rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight, int n_rows,
                             int dim, float eps)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    RULE(eps >= 0.0f, "eps %g is outside [0, inf)", eps);
    if (n_rows > 0) NEED(out, rstd, x, weight);
    return 0;
}

static int check_rmsnorm_bwd(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x,
                             const void *weight, const float *rstd, int n_rows, int dim, int accumulate_dx)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    if (n_rows > 0) NEED(dout, x, rstd);
    if (n_rows > 0 && dx) NEED(weight);
    return 0;
}

/* ---- RoPE ------------------------------------------------------------------------------------ */
static int check_rope(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq, int n_tokens,
                      int n_heads, int head_dim)
{
    AT_LEAST(n_tokens, 0);
    AT_LEAST(n_heads, 1);
    AT_LEAST(head_dim, 2);
    RULE(head_dim % 2 == 0, "head_dim %d is not even", head_dim);
    if (n_tokens > 0) NEED(x, positions, inv_freq);
    return 0;
}

static int check_rope_fwd(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq, int n_tokens,
                          int n_heads, int head_dim)
{
    return check_rope(ctx, x, positions, inv_freq, n_tokens, n_heads, head_dim);
}

static int check_rope_bwd(rl_ctx *ctx, void *dx, const int32_t *positions, const float *inv_freq, int n_tokens,
                          int n_heads, int head_dim)
{
    return check_rope(ctx, dx, positions, inv_freq, n_tokens, n_heads, head_dim);
}

/* ---- attention ------------------------------------------------------------------------------ */
static int check_heads(rl_ctx *ctx, int n_seqs, int n_heads, int n_kv_heads, int head_dim)
{
    AT_LEAST(n_seqs, 0);
    AT_LEAST(n_heads, 1);
    AT_LEAST(n_kv_heads, 1);
    AT_LEAST(head_dim, 1);
    RULE(n_heads % n_kv_heads == 0, "n_heads %d is not a multiple of n_kv_heads %d", n_heads, n_kv_heads);
    return 0;
}

/* A batch of sequences with max_seqlen_q 0 has no queries: no tensor is touched. */
static int check_attention_fwd(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v,
                               const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, const int32_t *seqused_k,
                               int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads,
                               int head_dim, float scale, int causal)
{
    if (check_heads(ctx, n_seqs, n_heads, n_kv_heads, head_dim)) return -1;
    AT_LEAST(max_seqlen_q, 0);
    AT_LEAST(max_seqlen_k, 0);
    if (n_seqs > 0) NEED(cu_seqlens_q, cu_seqlens_k);
    if (n_seqs > 0 && max_seqlen_q > 0) NEED(out, lse, q, k, v);
    return 0;
}

static int check_attention_bwd(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const void *out,
                               const float *lse, const void *q, const void *k, const void *v,
                               const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, int n_seqs, int max_seqlen_q,
                               int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale, int causal)
{
    if (check_heads(ctx, n_seqs, n_heads, n_kv_heads, head_dim)) return -1;
    AT_LEAST(max_seqlen_q, 0);
    AT_LEAST(max_seqlen_k, 0);
    if (n_seqs > 0) NEED(cu_seqlens_q, cu_seqlens_k);
    if (n_seqs > 0 && max_seqlen_q > 0) NEED(dq, dk, dv, dout, out, lse, q, k, v);
    return 0;
}

/* ---- SwiGLU --------------------------------------------------------------------------------- */
static int check_swiglu_shape(rl_ctx *ctx, int n_rows, int dim, int in_stride)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    RULE(in_stride >= dim, "in_stride %d is less than dim %d", in_stride, dim);
    return 0;
}

static int check_swiglu_fwd(rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows, int dim,
                            int in_stride)
{
    if (check_swiglu_shape(ctx, n_rows, dim, in_stride)) return -1;
    if (n_rows > 0) NEED(out, gate, up);
    return 0;
}

static int check_swiglu_bwd(rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate, const void *up,
                            int n_rows, int dim, int in_stride)
{
    if (check_swiglu_shape(ctx, n_rows, dim, in_stride)) return -1;
    if (n_rows > 0) NEED(dgate, dup, dout, gate, up);
    return 0;
}

/* ---- linear layer --------------------------------------------------------------------------- */
static int check_mnk(rl_ctx *ctx, int m, int n, int k)
{
    AT_LEAST(m, 0);
    AT_LEAST(n, 1);
    AT_LEAST(k, 1);
    return 0;
}

static int check_matmul_fwd(rl_ctx *ctx, void *out, const void *in, const void *weight, const void *bias, int m,
                            int n, int k, int accumulate)
{
    if (check_mnk(ctx, m, n, k)) return -1;
    if (m > 0) NEED(out, in, weight);
    return 0;
}

static int check_matmul_residual_fwd(rl_ctx *ctx, void *out, const void *residual, const void *in,
                                     const void *weight, int m, int n, int k)
{
    if (check_mnk(ctx, m, n, k)) return -1;
    if (m > 0) NEED(out, residual, in, weight);
    return 0;
}

static int check_rmsnorm_matmul_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *x,
                                    const void *norm_weight, float eps, const void *weight, const void *bias, int m,
                                    int n, int k)
{
    if (check_mnk(ctx, m, n, k)) return -1;
    RULE(eps >= 0.0f, "eps %g is outside [0, inf)", eps);
    if (m > 0) NEED(out, xn, rstd, x, norm_weight, weight);
    return 0;
}

static int check_swiglu_matmul_residual_fwd(rl_ctx *ctx, void *out, void *act, const void *residual, const void *gate,
                                            const void *up, int in_stride, const void *weight, int m, int n, int k)
{
    if (check_mnk(ctx, m, n, k)) return -1;
    RULE(in_stride >= k, "in_stride %d is less than k %d", in_stride, k);
    if (m > 0) NEED(out, act, residual, gate, up, weight);
    return 0;
}

static int check_matmul_residual_rmsnorm_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *residual,
                                             const void *in, const void *weight, const void *norm_weight, float eps,
                                             int m, int n, int k)
{
    if (check_mnk(ctx, m, n, k)) return -1;
    RULE(eps >= 0.0f, "eps %g is outside [0, inf)", eps);
    if (m > 0) NEED(out, xn, rstd, residual, in, weight, norm_weight);
    return 0;
}

static int check_matmul_bwd(rl_ctx *ctx, void *din, float *dweight, float *dbias, const void *dout, const void *in,
                            const void *weight, int m, int n, int k, int accumulate_din)
{
    if (check_mnk(ctx, m, n, k)) return -1;
    if (m == 0) return 0;
    NEED(dout);
    if (din) NEED(weight);
    if (dweight) NEED(in);
    return 0;
}

/* ---- elementwise ---------------------------------------------------------------------------- */
static int check_add(rl_ctx *ctx, void *y, const void *x, size_t n)
{
    if (n > 0) NEED(y, x);
    return 0;
}

/* ---- lm_head -------------------------------------------------------------------------------- */
static int check_head_shape(rl_ctx *ctx, int n_tokens, int dim, int vocab)
{
    AT_LEAST(n_tokens, 0);
    AT_LEAST(dim, 1);
    AT_LEAST(vocab, 1);
    return 0;
}

static int check_lm_head_logprobs_fwd(rl_ctx *ctx, float *logp, float *lse, float *entropy, const void *hidden,
                                      const void *weight, const int32_t *targets, int n_tokens, int dim, int vocab,
                                      float inv_temperature)
{
    if (check_head_shape(ctx, n_tokens, dim, vocab)) return -1;
    if (n_tokens > 0) NEED(logp, lse, hidden, weight, targets);
    return 0;
}

static int check_lm_head_logprobs_bwd(rl_ctx *ctx, void *dhidden, float *dweight, const float *dlogp,
                                      const float *dentropy, const void *hidden, const void *weight,
                                      const int32_t *targets, const float *lse, const float *entropy, int n_tokens,
                                      int dim, int vocab, float inv_temperature)
{
    if (check_head_shape(ctx, n_tokens, dim, vocab)) return -1;
    if (n_tokens > 0) NEED(dhidden, dweight, dlogp, hidden, weight, targets, lse);
    if (n_tokens > 0 && dentropy) NEED(entropy);
    return 0;
}

static int check_lm_head_logits(rl_ctx *ctx, float *logits, const void *hidden, const void *weight, int n_rows,
                                int dim, int vocab)
{
    if (check_head_shape(ctx, n_rows, dim, vocab)) return -1;
    if (n_rows > 0) NEED(logits, hidden, weight);
    return 0;
}

/* ---- value head ---------------------------------------------------------------------------- */
static int check_value_head_fwd(rl_ctx *ctx, float *values, const void *hidden, const void *weight, const void *bias,
                                int n_rows, int dim)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    if (n_rows > 0) NEED(values, hidden, weight);
    return 0;
}

static int check_value_head_bwd(rl_ctx *ctx, void *dhidden, float *dweight, float *dbias, const float *dvalues,
                                const void *hidden, const void *weight, int n_rows, int dim)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    if (n_rows == 0) return 0;
    NEED(dvalues);
    if (dhidden) NEED(weight);
    if (dweight) NEED(hidden);
    return 0;
}

/* ---- sampling ------------------------------------------------------------------------------- */
/* The rows are backend memory: their values are checked by rl_sample_row_check where they are
 * filled (engine/generate.c) and by the CPU reference, which reads them. */
static int check_sample(rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab,
                        const rl_sample_row *rows)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(vocab, 1);
    if (n_rows > 0) NEED(tokens, logp, logits, rows);
    return 0;
}

int rl_sample_row_check(const rl_sample_row *row, rl_err *err)
{
    float t = row->temperature;
    /* 1/t must be finite too: the filters work on logits / t */
    if (!(t == 0.0f || (t > 0.0f && t < INFINITY && 1.0f / t < INFINITY)))
        return rl_err_set(err, "temperature %g is neither 0 nor finite with a finite inverse", t);
    if (row->top_k < 0) return rl_err_set(err, "top_k %d is negative", row->top_k);
    if (!(row->top_p > 0.0f && row->top_p <= 1.0f)) return rl_err_set(err, "top_p %g is outside (0, 1]", row->top_p);
    if (!(row->min_p >= 0.0f && row->min_p <= 1.0f))
        return rl_err_set(err, "min_p %g is outside [0, 1]", row->min_p);
    return 0;
}

/* ---- paged KV cache ------------------------------------------------------------------------- */
/* The view (a host struct) and the shape of one block's rows; block_tables is checked by the ops
 * that read it. */
static int check_kv_view(rl_ctx *ctx, const rl_paged_kv *kv, int n_kv_heads, int head_dim)
{
    NEED(kv);
    NEED(kv->k, kv->v);
    AT_LEAST(kv->block_size, 1);
    AT_LEAST(n_kv_heads, 1);
    AT_LEAST(head_dim, 1);
    RULE(kv->block_stride >= (size_t)kv->block_size * n_kv_heads * head_dim,
         "kv->block_stride %zu is less than a block's %d rows of %d x %d", kv->block_stride, kv->block_size,
         n_kv_heads, head_dim);
    return 0;
}

static int check_kv_cache_write(rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v,
                                const int32_t *slots, int n_tokens, int n_kv_heads, int head_dim)
{
    AT_LEAST(n_tokens, 0);
    if (check_kv_view(ctx, kv, n_kv_heads, head_dim)) return -1;
    if (n_tokens > 0) NEED(k, v, slots);
    return 0;
}

static int check_qk_norm_rope_cache_fwd(rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q,
                                        const void *k, const void *v, size_t q_stride, size_t kv_stride,
                                        const void *q_norm, const void *k_norm, float eps, const int32_t *positions,
                                        const float *inv_freq, const int32_t *slots, int n_tokens, int n_heads,
                                        int n_kv_heads, int head_dim)
{
    AT_LEAST(n_tokens, 0);
    AT_LEAST(n_heads, 1);
    if (check_kv_view(ctx, kv, n_kv_heads, head_dim)) return -1;
    RULE(head_dim % 2 == 0, "head_dim %d is not even", head_dim);
    RULE(n_heads % n_kv_heads == 0, "n_heads %d is not a multiple of n_kv_heads %d", n_heads, n_kv_heads);
    RULE(q_stride >= (size_t)n_heads * head_dim, "q_stride %zu is less than a row of %d x %d", q_stride, n_heads,
         head_dim);
    RULE(kv_stride >= (size_t)n_kv_heads * head_dim, "kv_stride %zu is less than a row of %d x %d", kv_stride,
         n_kv_heads, head_dim);
    RULE(!q_norm == !k_norm, "q_norm and k_norm must be both given or both NULL");
    RULE(eps >= 0.0f, "eps %g is outside [0, inf)", eps);
    if (n_tokens > 0) NEED(q_out, q, k, v, positions, inv_freq, slots);
    return 0;
}

/* A batch whose max_seqlen_q is 0 has no queries: out and q are not touched. */
static int check_paged_attention_fwd(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv,
                                     const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs,
                                     int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim,
                                     float scale)
{
    if (check_heads(ctx, n_seqs, n_heads, n_kv_heads, head_dim)) return -1;
    if (check_kv_view(ctx, kv, n_kv_heads, head_dim)) return -1;
    AT_LEAST(max_seqlen_q, 0);
    RULE(max_seqlen_k >= max_seqlen_q, "max_seqlen_k %d is less than max_seqlen_q %d (keys include the queries)",
         max_seqlen_k, max_seqlen_q);
    if (n_seqs == 0) return 0;
    NEED(cu_seqlens_q, seqlens_k, kv->block_tables);
    AT_LEAST(kv->max_blocks, 1);
    if (max_seqlen_q > 0) NEED(out, q);
    if (kv->share_lead || kv->share_len || kv->share_count) {
        NEED(kv->share_lead, kv->share_len, kv->share_count);
        AT_LEAST(kv->max_share, 1);
    }
    return 0;
}

static int check_qk_norm_rope_attention_fwd(rl_ctx *ctx, void *out, void *q_out, const rl_paged_kv *kv,
                                            const void *q, const void *k, const void *v, size_t q_stride,
                                            size_t kv_stride, const void *q_norm, const void *k_norm, float eps,
                                            const int32_t *positions, const float *inv_freq, const int32_t *slots,
                                            int n_tokens, const int32_t *cu_seqlens_q, const int32_t *seqlens_k,
                                            int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads,
                                            int n_kv_heads, int head_dim, float scale)
{
    if (check_qk_norm_rope_cache_fwd(ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions,
                                     inv_freq, slots, n_tokens, n_heads, n_kv_heads, head_dim))
        return -1;
    if (check_paged_attention_fwd(ctx, out, q_out, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k,
                                  n_heads, n_kv_heads, head_dim, scale))
        return -1;
    RULE(n_tokens <= (long long)n_seqs * max_seqlen_q, "n_tokens %d is more than n_seqs %d x max_seqlen_q %d",
         n_tokens, n_seqs, max_seqlen_q);
    return 0;
}

static int check_gather_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    if (n_rows > 0) NEED(out, in, rows);
    return 0;
}

static int check_sum_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *offsets, const int32_t *rows,
                          int n_rows, int dim)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(dim, 1);
    if (n_rows > 0) NEED(out, in, offsets, rows);
    return 0;
}

static int check_decode_advance(rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k,
                                int32_t *slots, rl_sample_row *rows, const int32_t *sampled,
                                const int32_t *block_tables, int max_blocks, int block_size, int n_rows)
{
    AT_LEAST(n_rows, 0);
    AT_LEAST(max_blocks, 1);
    AT_LEAST(block_size, 1);
    if (n_rows > 0) NEED(tokens, positions, seqlens_k, slots, rows, sampled, block_tables);
    return 0;
}

/* ---- optimizer and gradient norm ------------------------------------------------------------ */
static int check_adamw_step(rl_ctx *ctx, float *param, void *working, const float *grad, float *m, float *v,
                            size_t n, const rl_adamw_params *params)
{
    NEED(params);
    RULE(params->step >= 1, "step %d is less than 1 (steps count from 1)", params->step);
    RULE(params->beta1 >= 0.0f && params->beta1 < 1.0f, "beta1 %g is outside [0, 1)", params->beta1);
    RULE(params->beta2 >= 0.0f && params->beta2 < 1.0f, "beta2 %g is outside [0, 1)", params->beta2);
    if (n > 0) NEED(param, grad, m, v);
    return 0;
}

static int check_sumsq(rl_ctx *ctx, double *out, const float *x, size_t n)
{
    NEED(out);
    if (n > 0) NEED(x);
    return 0;
}

static int check_scale(rl_ctx *ctx, float *x, float s, size_t n)
{
    if (n > 0) NEED(x);
    return 0;
}

/* ---- policy loss ---------------------------------------------------------------------------- */
static int check_policy_loss(rl_ctx *ctx, float *dlogp, double *stats, const float *logp, const float *old_logp,
                             const float *ref_logp, const float *advantage, const float *weight, int n_tokens,
                             const rl_policy_loss_params *params)
{
    AT_LEAST(n_tokens, 0);
    NEED(params, stats);
    RULE(params->clip_low >= 0.0f && params->clip_low <= 1.0f, "clip_low %g is outside [0, 1]", params->clip_low);
    RULE(params->clip_high >= 0.0f, "clip_high %g is outside [0, inf)", params->clip_high);
    if (n_tokens == 0) return 0;
    RULE(ref_logp || params->kl_beta == 0.0f, "ref_logp is NULL, but kl_beta %g needs it", params->kl_beta);
    NEED(dlogp, logp, old_logp, advantage, weight);
    return 0;
}
