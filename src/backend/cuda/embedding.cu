/* embedding.cu — token embedding lookup and its backward.
 *
 * Forward copies one bf16 row per token (16-byte vectors when dim allows). Backward adds dout
 * rows into the fp32 table gradient with atomicAdd, so repeated ids accumulate; the order of
 * those adds is not fixed (fp32 rounding may differ run to run at the last bit). Ids outside
 * [0, vocab) cannot be reported from the device: the caller validates ids (the tokenizer and
 * dataset loaders do); here a negative id yields a zero row and is skipped in the backward. */
#include "backend/cuda/common.cuh"

__global__ void embedding_fwd_kernel(bf16 *out, const int32_t *ids, const bf16 *table, int dim)
{
    rl_pdl_begin();
    int t = blockIdx.x;
    int id = ids[t];
    bf16 *o = out + (size_t)t * dim;
    if (id < 0) {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = rl_f2b(0.0f);
        return;
    }
    const bf16 *row = table + (size_t)id * dim;
    if ((dim & 7) == 0) {
        const uint4 *src = (const uint4 *)row;
        uint4 *dst = (uint4 *)o;
        for (int i = threadIdx.x; i < dim / 8; i += blockDim.x) dst[i] = src[i];
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = row[i];
    }
}

__global__ void embedding_bwd_kernel(float *dtable, const int32_t *ids, const bf16 *dout, int dim)
{
    int t = blockIdx.x;
    int id = ids[t];
    if (id < 0) return;
    const bf16 *g = dout + (size_t)t * dim;
    float *row = dtable + (size_t)id * dim;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) atomicAdd(row + i, rl_b2f(g[i]));
}

extern "C" int rl_cuda_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table,
                                     int n_tokens, int dim)
{
    if (n_tokens == 0) return 0;
    CUDA_CHECK(rl_launch_pdl(embedding_fwd_kernel, dim3((unsigned)n_tokens), dim3(128), 0, rl_cuda_st(ctx)->stream,
                             (bf16 *)out, ids, (const bf16 *)table, dim));
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout,
                                     int n_tokens, int dim)
{
    if (n_tokens == 0) return 0;
    embedding_bwd_kernel<<<n_tokens, 256, 0, rl_cuda_st(ctx)->stream>>>(dtable, ids, (const bf16 *)dout, dim);
    LAUNCH_CHECK();
    return 0;
}
