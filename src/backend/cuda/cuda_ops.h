/* cuda_ops.h — the CUDA backend seen from C: the context and memory functions backend/ctx.c
 * calls, and rl_cuda_<name> for every op of ops.h (same parameters and meaning: activations in
 * ctx->act_dtype, bf16 or fp32, fp32 accumulation, device memory), declared from ops.h's list. Implemented in the
 * .cu files of backend/cuda with C linkage; this header includes no CUDA header, so C code may
 * include it. */
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
int rl_cuda_fold_rows(const rl_ctx *ctx); /* gemm_rows.cu */
int rl_cuda_graph_capture_begin(rl_ctx *ctx);
int rl_cuda_graph_capture_end(rl_ctx *ctx, rl_graph **out);
int rl_cuda_graph_launch(rl_ctx *ctx, rl_graph *g);
void rl_cuda_graph_free(rl_ctx *ctx, rl_graph *g);
int rl_cuda_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes);

#define RL_OPDEF(name, params, args) int rl_cuda_##name params;
#include "backend/ops.h"

#ifdef __cplusplus
}
#endif

#endif
