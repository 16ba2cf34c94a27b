/* ops.c — sends each op of ops.h to the backend the context names. */
#include "backend/ops.h"

#include "backend/cpu/cpu_ops.h"
#ifdef RL_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#define DISPATCH(op, ...) \
    return ctx->kind == RL_BACKEND_CUDA ? rl_cuda_##op(__VA_ARGS__) : rl_cpu_##op(__VA_ARGS__)
#else
#define DISPATCH(op, ...) return rl_cpu_##op(__VA_ARGS__)
#endif

int rl_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens, int dim)
{
    DISPATCH(embedding_fwd, ctx, out, ids, table, n_tokens, dim);
}

int rl_embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout, int n_tokens, int dim)
{
    DISPATCH(embedding_bwd, ctx, dtable, ids, dout, n_tokens, dim);
}

int rl_rmsnorm_fwd(rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight, int n_rows, int dim, float eps)
{
    DISPATCH(rmsnorm_fwd, ctx, out, rstd, x, weight, n_rows, dim, eps);
}

int rl_rmsnorm_bwd(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x, const void *weight, const float *rstd, int n_rows, int dim, int accumulate_dx)
{
    DISPATCH(rmsnorm_bwd, ctx, dx, dweight, dout, x, weight, rstd, n_rows, dim, accumulate_dx);
}

int rl_rope_fwd(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads, int head_dim)
{
    DISPATCH(rope_fwd, ctx, x, positions, inv_freq, n_tokens, n_heads, head_dim);
}

int rl_rope_bwd(rl_ctx *ctx, void *dx, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads, int head_dim)
{
    DISPATCH(rope_bwd, ctx, dx, positions, inv_freq, n_tokens, n_heads, head_dim);
}

int rl_attention_fwd(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v, const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, const int32_t *seqused_k, int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale, int causal)
{
    DISPATCH(attention_fwd, ctx, out, lse, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, n_seqs, max_seqlen_q, max_seqlen_k, n_heads, n_kv_heads, head_dim, scale, causal);
}

int rl_attention_bwd(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse, const void *q, const void *k, const void *v, const int32_t *cu_seqlens, int n_seqs, int max_seqlen, int n_heads, int n_kv_heads, int head_dim, float scale, int causal)
{
    DISPATCH(attention_bwd, ctx, dq, dk, dv, dout, out, lse, q, k, v, cu_seqlens, n_seqs, max_seqlen, n_heads, n_kv_heads, head_dim, scale, causal);
}

int rl_swiglu_fwd(rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows, int dim, int in_stride)
{
    DISPATCH(swiglu_fwd, ctx, out, gate, up, n_rows, dim, in_stride);
}

int rl_swiglu_bwd(rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate, const void *up, int n_rows, int dim, int in_stride)
{
    DISPATCH(swiglu_bwd, ctx, dgate, dup, dout, gate, up, n_rows, dim, in_stride);
}

int rl_matmul_fwd(rl_ctx *ctx, void *out, const void *in, const void *weight, const void *bias, int m, int n, int k, int accumulate)
{
    DISPATCH(matmul_fwd, ctx, out, in, weight, bias, m, n, k, accumulate);
}

int rl_matmul_residual_fwd(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight, int m, int n, int k)
{
    DISPATCH(matmul_residual_fwd, ctx, out, residual, in, weight, m, n, k);
}

int rl_matmul_bwd(rl_ctx *ctx, void *din, float *dweight, float *dbias, const void *dout, const void *in, const void *weight, int m, int n, int k, int accumulate_din)
{
    DISPATCH(matmul_bwd, ctx, din, dweight, dbias, dout, in, weight, m, n, k, accumulate_din);
}

int rl_add(rl_ctx *ctx, void *y, const void *x, size_t n)
{
    DISPATCH(add, ctx, y, x, n);
}

int rl_lm_head_logprobs_fwd(rl_ctx *ctx, float *logp, float *lse, float *entropy, const void *hidden, const void *weight, const int32_t *targets, int n_tokens, int dim, int vocab, float inv_temperature)
{
    DISPATCH(lm_head_logprobs_fwd, ctx, logp, lse, entropy, hidden, weight, targets, n_tokens, dim, vocab, inv_temperature);
}

int rl_lm_head_logprobs_bwd(rl_ctx *ctx, void *dhidden, float *dweight, const float *dlogp, const void *hidden, const void *weight, const int32_t *targets, const float *lse, int n_tokens, int dim, int vocab, float inv_temperature)
{
    DISPATCH(lm_head_logprobs_bwd, ctx, dhidden, dweight, dlogp, hidden, weight, targets, lse, n_tokens, dim, vocab, inv_temperature);
}

int rl_lm_head_logits(rl_ctx *ctx, float *logits, const void *hidden, const void *weight, int n_rows, int dim, int vocab)
{
    DISPATCH(lm_head_logits, ctx, logits, hidden, weight, n_rows, dim, vocab);
}

int rl_sample(rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab, const rl_sample_row *rows)
{
    DISPATCH(sample, ctx, tokens, logp, logits, n_rows, vocab, rows);
}

int rl_kv_cache_write(rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v, const int32_t *slots, int n_tokens, int n_kv_heads, int head_dim)
{
    DISPATCH(kv_cache_write, ctx, kv, k, v, slots, n_tokens, n_kv_heads, head_dim);
}

int rl_qk_norm_rope_cache_fwd(rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q, const void *k, const void *v, size_t q_stride, size_t kv_stride, const void *q_norm, const void *k_norm, float eps, const int32_t *positions, const float *inv_freq, const int32_t *slots, int n_tokens, int n_heads, int n_kv_heads, int head_dim)
{
    DISPATCH(qk_norm_rope_cache_fwd, ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions, inv_freq, slots, n_tokens, n_heads, n_kv_heads, head_dim);
}

int rl_paged_attention_fwd(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv, const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale)
{
    DISPATCH(paged_attention_fwd, ctx, out, q, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k, n_heads, n_kv_heads, head_dim, scale);
}

int rl_gather_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim)
{
    DISPATCH(gather_rows, ctx, out, in, rows, n_rows, dim);
}

int rl_decode_advance(rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k, int32_t *slots, rl_sample_row *rows, const int32_t *sampled, const int32_t *block_tables, int max_blocks, int block_size, int n_rows)
{
    DISPATCH(decode_advance, ctx, tokens, positions, seqlens_k, slots, rows, sampled, block_tables, max_blocks, block_size, n_rows);
}

int rl_adamw_step(rl_ctx *ctx, float *param, void *working, const float *grad, float *m, float *v, size_t n, const rl_adamw_params *params)
{
    DISPATCH(adamw_step, ctx, param, working, grad, m, v, n, params);
}

int rl_sumsq(rl_ctx *ctx, double *out, const float *x, size_t n)
{
    DISPATCH(sumsq, ctx, out, x, n);
}

int rl_scale(rl_ctx *ctx, float *x, float s, size_t n)
{
    DISPATCH(scale, ctx, x, s, n);
}

int rl_policy_loss(rl_ctx *ctx, float *dlogp, double *stats, const float *logp, const float *old_logp, const float *ref_logp, const float *advantage, const float *weight, int n_tokens, const rl_policy_loss_params *params)
{
    DISPATCH(policy_loss, ctx, dlogp, stats, logp, old_logp, ref_logp, advantage, weight, n_tokens, params);
}
