/* engine_pending.cu — placeholders for the CUDA side of the paged engine (issue 10): the new
 * ops of ops.h (paged KV write and attention, row gather, decode advance) and the backend calls
 * of ctx.h (pinned memory, asynchronous copies, events, graphs, memory info). They report that
 * this build has no CUDA version yet, so that the engine stops with a message on CUDA instead
 * of the build failing; the CUDA engine branch (i10-cuda) replaces this file with the kernels.
 * Graphs report "unsupported", so callers take the un-captured path. */
#include "backend/cuda/common.cuh"

static int pending(rl_ctx *ctx, const char *what)
{
    return rl_err_set(&ctx->err, "CUDA backend: %s has no CUDA version in this build (the paged engine's "
                                 "CUDA kernels are not merged yet); use --device cpu",
                      what);
}

extern "C" int rl_cuda_kv_cache_write(rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v,
                                      const int32_t *slots, int n_tokens, int n_kv_heads, int head_dim)
{
    return pending(ctx, "kv_cache_write");
}

extern "C" int rl_cuda_paged_attention_fwd(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv,
                                           const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs,
                                           int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads,
                                           int head_dim, float scale)
{
    return pending(ctx, "paged_attention_fwd");
}

extern "C" int rl_cuda_gather_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim)
{
    return pending(ctx, "gather_rows");
}

extern "C" int rl_cuda_decode_advance(rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k,
                                      int32_t *slots, rl_sample_row *rows, const int32_t *sampled,
                                      const int32_t *block_tables, int max_blocks, int block_size, int n_rows)
{
    return pending(ctx, "decode_advance");
}

extern "C" void *rl_cuda_alloc_host(rl_ctx *ctx, size_t bytes)
{
    pending(ctx, "pinned host memory");
    return NULL;
}

extern "C" void rl_cuda_free_host(rl_ctx *ctx, void *ptr) {}

extern "C" int rl_cuda_memcpy_async(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind)
{
    return pending(ctx, "asynchronous copy");
}

extern "C" int rl_cuda_event_create(rl_ctx *ctx, rl_event **ev) { return pending(ctx, "events"); }
extern "C" int rl_cuda_event_record(rl_ctx *ctx, rl_event *ev) { return pending(ctx, "events"); }
extern "C" int rl_cuda_event_wait_host(rl_ctx *ctx, rl_event *ev) { return pending(ctx, "events"); }
extern "C" void rl_cuda_event_free(rl_ctx *ctx, rl_event *ev) {}

extern "C" int rl_cuda_graph_supported(const rl_ctx *ctx) { return 0; }
extern "C" int rl_cuda_graph_capture_begin(rl_ctx *ctx) { return pending(ctx, "graph capture"); }
extern "C" int rl_cuda_graph_capture_end(rl_ctx *ctx, rl_graph **out) { return pending(ctx, "graph capture"); }
extern "C" int rl_cuda_graph_launch(rl_ctx *ctx, rl_graph *g) { return pending(ctx, "graph launch"); }
extern "C" void rl_cuda_graph_free(rl_ctx *ctx, rl_graph *g) {}

extern "C" int rl_cuda_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}
