/* cuda_ops.h — the CUDA backend seen from C: one function per op in ops.h, same arguments and
 * meaning (bf16 activations, fp32 accumulation, device memory), plus the context and memory
 * functions backend/ctx.c calls. Implemented in the .cu files of backend/cuda with C linkage; this header
 * includes no CUDA header, so C code may include it. */
#ifndef RL_BACKEND_CUDA_OPS_H
#define RL_BACKEND_CUDA_OPS_H

#include "backend/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

int rl_cuda_device_count(void);
int rl_cuda_ctx_create(rl_ctx *ctx, int device, rl_err *err);
void rl_cuda_ctx_free(rl_ctx *ctx);
void *rl_cuda_alloc(rl_ctx *ctx, size_t bytes);
void rl_cuda_free(rl_ctx *ctx, void *ptr);
int rl_cuda_memcpy(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind);
int rl_cuda_memzero(rl_ctx *ctx, void *ptr, size_t bytes);
int rl_cuda_sync(rl_ctx *ctx);
void *rl_cuda_alloc_host(rl_ctx *ctx, size_t bytes);
void rl_cuda_free_host(rl_ctx *ctx, void *ptr);
int rl_cuda_memcpy_async(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind);
int rl_cuda_event_create(rl_ctx *ctx, rl_event **ev);
int rl_cuda_event_record(rl_ctx *ctx, rl_event *ev);
int rl_cuda_event_wait_host(rl_ctx *ctx, rl_event *ev);
void rl_cuda_event_free(rl_ctx *ctx, rl_event *ev);
int rl_cuda_graph_supported(const rl_ctx *ctx);
int rl_cuda_graph_capture_begin(rl_ctx *ctx);
int rl_cuda_graph_capture_end(rl_ctx *ctx, rl_graph **out);
int rl_cuda_graph_launch(rl_ctx *ctx, rl_graph *g);
void rl_cuda_graph_free(rl_ctx *ctx, rl_graph *g);
int rl_cuda_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes);

int rl_cuda_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens, int dim);
int rl_cuda_embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout, int n_tokens, int dim);
int rl_cuda_rmsnorm_fwd(rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight, int n_rows, int dim, float eps);
int rl_cuda_rmsnorm_bwd(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x, const void *weight, const float *rstd, int n_rows, int dim, int accumulate_dx);
int rl_cuda_rope_fwd(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads, int head_dim);
int rl_cuda_rope_bwd(rl_ctx *ctx, void *dx, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads, int head_dim);
int rl_cuda_attention_fwd(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v, const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, const int32_t *seqused_k, int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale, int causal);
int rl_cuda_attention_bwd(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse, const void *q, const void *k, const void *v, const int32_t *cu_seqlens, int n_seqs, int max_seqlen, int n_heads, int n_kv_heads, int head_dim, float scale, int causal);
int rl_cuda_swiglu_fwd(rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows, int dim, int in_stride);
int rl_cuda_swiglu_bwd(rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate, const void *up, int n_rows, int dim, int in_stride);
int rl_cuda_matmul_fwd(rl_ctx *ctx, void *out, const void *in, const void *weight, const void *bias, int m, int n, int k, int accumulate);
int rl_cuda_matmul_residual_fwd(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight, int m, int n, int k);
int rl_cuda_matmul_bwd(rl_ctx *ctx, void *din, float *dweight, float *dbias, const void *dout, const void *in, const void *weight, int m, int n, int k, int accumulate_din);
int rl_cuda_add(rl_ctx *ctx, void *y, const void *x, size_t n);
int rl_cuda_lm_head_logprobs_fwd(rl_ctx *ctx, float *logp, float *lse, float *entropy, const void *hidden, const void *weight, const int32_t *targets, int n_tokens, int dim, int vocab, float inv_temperature);
int rl_cuda_lm_head_logprobs_bwd(rl_ctx *ctx, void *dhidden, float *dweight, const float *dlogp, const void *hidden, const void *weight, const int32_t *targets, const float *lse, int n_tokens, int dim, int vocab, float inv_temperature);
int rl_cuda_lm_head_logits(rl_ctx *ctx, float *logits, const void *hidden, const void *weight, int n_rows, int dim, int vocab);
int rl_cuda_sample(rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab, const rl_sample_row *rows);
int rl_cuda_kv_cache_write(rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v, const int32_t *slots, int n_tokens, int n_kv_heads, int head_dim);
int rl_cuda_qk_norm_rope_cache_fwd(rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q, const void *k, const void *v, size_t q_stride, size_t kv_stride, const void *q_norm, const void *k_norm, float eps, const int32_t *positions, const float *inv_freq, const int32_t *slots, int n_tokens, int n_heads, int n_kv_heads, int head_dim);
int rl_cuda_paged_attention_fwd(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv, const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale);
int rl_cuda_gather_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim);
int rl_cuda_decode_advance(rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k, int32_t *slots, rl_sample_row *rows, const int32_t *sampled, const int32_t *block_tables, int max_blocks, int block_size, int n_rows);
int rl_cuda_adamw_step(rl_ctx *ctx, float *param, void *working, const float *grad, float *m, float *v, size_t n, const rl_adamw_params *params);
int rl_cuda_sumsq(rl_ctx *ctx, double *out, const float *x, size_t n);
int rl_cuda_scale(rl_ctx *ctx, float *x, float s, size_t n);
int rl_cuda_policy_loss(rl_ctx *ctx, float *dlogp, double *stats, const float *logp, const float *old_logp, const float *ref_logp, const float *advantage, const float *weight, int n_tokens, const rl_policy_loss_params *params);

#ifdef __cplusplus
}
#endif

#endif
