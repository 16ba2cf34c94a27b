/* kv_cache.cu — rl_kv_cache_write: scatters the keys and values of new tokens into the paged
 * KV pool (layout: ops.h rl_paged_kv; token t goes to block slots[t] / block_size, row
 * slots[t] % block_size; slots[t] < 0 is a padding row and writes nothing).
 *
 * One thread per 16-byte piece (8 bf16 or 4 fp32 elements: the act dtype) of a token's
 * [n_kv_heads * head_dim] row, keys and values in the same thread; when the row length or a
 * pointer is not a multiple of 16 bytes, one thread per element. Slots are read on the device, so a captured decode step writes
 * wherever the advanced state points. */
#include "backend/cuda/common.cuh"

template <typename T>
__global__ void kv_cache_write_kernel(T *kd, T *vd, const T *ks, const T *vs, const int32_t *slots, int n_tokens,
                                      int row_units, int block_size, size_t stride_units)
{
    size_t n = (size_t)n_tokens * row_units;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int t = (int)(i / row_units), u = (int)(i % row_units);
        int slot = slots[t];
        if (slot < 0) continue;
        size_t at = (size_t)(slot / block_size) * stride_units + (size_t)(slot % block_size) * row_units + u;
        kd[at] = ks[i];
        vd[at] = vs[i];
    }
}

extern "C" int rl_cuda_kv_cache_write(rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v,
                                      const int32_t *slots, int n_tokens, int n_kv_heads, int head_dim)
{
    if (n_tokens == 0) return 0;
    size_t row = (size_t)n_kv_heads * head_dim;
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    uintptr_t align = (uintptr_t)kv->k | (uintptr_t)kv->v | (uintptr_t)k | (uintptr_t)v;
    size_t per = 16 / rl_dtype_size(ctx->act_dtype); /* elements per 16-byte piece */
    if (row % per == 0 && kv->block_stride % per == 0 && (align & 15) == 0) {
        int units = (int)(row / per);
        unsigned blocks = rl_cuda_blocks((size_t)n_tokens * units, 256, 4096);
        kv_cache_write_kernel<uint4><<<blocks, 256, 0, st>>>((uint4 *)kv->k, (uint4 *)kv->v, (const uint4 *)k,
                                                             (const uint4 *)v, slots, n_tokens, units,
                                                             kv->block_size, kv->block_stride / per);
    } else if (rl_cuda_f32(ctx)) {
        unsigned blocks = rl_cuda_blocks((size_t)n_tokens * row, 256, 4096);
        kv_cache_write_kernel<float><<<blocks, 256, 0, st>>>((float *)kv->k, (float *)kv->v, (const float *)k,
                                                             (const float *)v, slots, n_tokens, (int)row,
                                                             kv->block_size, kv->block_stride);
    } else {
        unsigned blocks = rl_cuda_blocks((size_t)n_tokens * row, 256, 4096);
        kv_cache_write_kernel<bf16><<<blocks, 256, 0, st>>>((bf16 *)kv->k, (bf16 *)kv->v, (const bf16 *)k,
                                                            (const bf16 *)v, slots, n_tokens, (int)row,
                                                            kv->block_size, kv->block_stride);
    }
    LAUNCH_CHECK();
    return 0;
}
