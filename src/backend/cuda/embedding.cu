/* embedding.cu — token embedding lookup and its backward.
 *
 * Forward copies one row per token (16-byte vectors when the row allows), in the act dtype T
 * (bf16, or fp32 in the fp32 mode). Backward adds the dout rows of each id into the fp32 table
 * gradient in token order, so repeated ids give the same bits every run: the token indices are
 * sorted by id (CUB's stable radix sort), and the block at the start of each id's run sums the
 * run's rows in order and adds the sum to the id's row (float atomics, as before, would add them
 * in whatever order the blocks ran). Ids outside [0, vocab) cannot be reported from the device:
 * the caller validates ids (the tokenizer and dataset loaders do); here a negative id yields a
 * zero row and is skipped in the backward. */
#include "backend/cuda/common.cuh"

#include <cub/device/device_radix_sort.cuh>

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

__global__ void iota_kernel(uint32_t *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = (uint32_t)i;
}

/* Block i starts a run when sorted id i differs from id i - 1; it adds the rows of its run's tokens
 * (token order, the sort being stable) into the id's gradient row. Negative ids sort last (as
 * unsigned keys) and are skipped. */
template <typename T>
__global__ void embedding_bwd_runs_kernel(float *dtable, const uint32_t *ids, const uint32_t *tokens, const T *dout,
                                          int n_tokens, int dim)
{
    int i = blockIdx.x;
    uint32_t key = ids[i];
    if ((int32_t)key < 0 || (i > 0 && ids[i - 1] == key)) return;
    int end = i + 1;
    while (end < n_tokens && ids[end] == key) end++;
    float *row = dtable + (size_t)key * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        float acc = 0.0f;
#pragma unroll 4
        for (int j = i; j < end; j++) acc += rl_tof(dout[(size_t)tokens[j] * dim + c]);
        row[c] += acc;
    }
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
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    size_t temp = 0, n = (size_t)n_tokens;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, temp, (const uint32_t *)ids, (uint32_t *)NULL,
                                               (const uint32_t *)NULL, (uint32_t *)NULL, n_tokens, 0, 32, st));
    size_t arrays = (3 * n * sizeof(uint32_t) + 255) & ~(size_t)255;
    char *buf = (char *)rl_cuda_scratch(ctx, arrays + temp);
    if (!buf) return -1;
    uint32_t *sorted_ids = (uint32_t *)buf, *order = sorted_ids + n, *sorted_tokens = order + n;
    iota_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(order, n_tokens);
    LAUNCH_CHECK();
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(buf + arrays, temp, (const uint32_t *)ids, sorted_ids, order,
                                               sorted_tokens, n_tokens, 0, 32, st));
    embedding_bwd_runs_kernel<T><<<n_tokens, 128, 0, st>>>(dtable, sorted_ids, sorted_tokens, (const T *)dout,
                                                           n_tokens, dim);
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
