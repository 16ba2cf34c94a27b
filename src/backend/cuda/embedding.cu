/* embedding.cu — token embedding lookup and its backward.
 *
 * Forward copies one row per token (16-byte vectors when the row allows), in the act dtype T
 * (bf16, or fp32 in the fp32 mode). Backward adds dout rows into the fp32 table gradient with
 * atomicAdd, so repeated ids accumulate; the order of those adds is not fixed (fp32 rounding may
 * differ run to run at the last bit). Ids outside [0, vocab) cannot be reported from the device:
 * the caller validates ids (the tokenizer and dataset loaders do); here a negative id yields a
 * zero row and is skipped in the backward. */
#include "backend/cuda/common.cuh"

template <typename T>
__global__ void embedding_fwd_kernel(T *out, const int32_t *ids, const T *table, int dim)
{
    rl_pdl_begin();
    int t = blockIdx.x;
    int id = ids[t];
    T *o = out + (size_t)t * dim;
    if (id < 0) {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = rl_fromf<T>(0.0f);
        return;
    }
    const T *row = table + (size_t)id * dim;
    const int per_vec = 16 / sizeof(T);
    if (dim % per_vec == 0) {
        const uint4 *src = (const uint4 *)row;
        uint4 *dst = (uint4 *)o;
        for (int i = threadIdx.x; i < dim / per_vec; i += blockDim.x) dst[i] = src[i];
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = row[i];
    }
}

template <typename T>
__global__ void embedding_bwd_kernel(float *dtable, const int32_t *ids, const T *dout, int dim)
{
    int t = blockIdx.x;
    int id = ids[t];
    if (id < 0) return;
    const T *g = dout + (size_t)t * dim;
    float *row = dtable + (size_t)id * dim;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) atomicAdd(row + i, rl_tof(g[i]));
}

template <typename T>
static int embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens, int dim)
{
    CUDA_CHECK(rl_launch_pdl(embedding_fwd_kernel<T>, dim3((unsigned)n_tokens), dim3(128), 0,
                             rl_cuda_st(ctx)->stream, (T *)out, ids, (const T *)table, dim));
    LAUNCH_CHECK();
    return 0;
}

template <typename T>
static int embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout, int n_tokens, int dim)
{
    embedding_bwd_kernel<T><<<n_tokens, 256, 0, rl_cuda_st(ctx)->stream>>>(dtable, ids, (const T *)dout, dim);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table,
                                     int n_tokens, int dim)
{
    if (n_tokens == 0) return 0;
    return RL_ACT_CALL(ctx, embedding_fwd, (ctx, out, ids, table, n_tokens, dim));
}

extern "C" int rl_cuda_embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout,
                                     int n_tokens, int dim)
{
    if (n_tokens == 0) return 0;
    return RL_ACT_CALL(ctx, embedding_bwd, (ctx, dtable, ids, dout, n_tokens, dim));
}
