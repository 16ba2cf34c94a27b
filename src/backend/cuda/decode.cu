/* decode.cu — the small ops of the engine's decode step (as backend/cpu/decode.c):
 * rl_gather_rows picks the rows that need logits (and splits a fused q|k|v product; in training,
 * copies a shared prefix's keys into each continuation's slab, rl_sum_rows adding their
 * gradients back: one warp per output row, fp32 sums in list order), and
 * rl_decode_advance moves the device-resident decode state one token on after the sampler.
 * Both run inside the captured decode graph: they read every length and index on the device.
 *
 * gather: one thread per 16-byte piece of an output row when rows are 16-byte multiples and
 * aligned, else one per element (of the act dtype). advance: one thread per row; a row whose next
 * position falls outside its block table (the host allocates a step ahead, so only a bug gets
 * there) gets slot -1, so the next step writes its key nowhere instead of into another
 * sequence's block. */
#include "backend/cuda/common.cuh"

template <typename T>
__global__ void gather_rows_kernel(T *out, const T *in, const int32_t *rows, int n_rows, int row_units)
{
    rl_pdl_begin();
    size_t n = (size_t)n_rows * row_units;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / row_units), u = (int)(i % row_units);
        out[i] = in[(size_t)rows[r] * row_units + u];
    }
}

extern "C" int rl_cuda_gather_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim)
{
    if (n_rows == 0) return 0;
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    int per = 16 / (int)rl_dtype_size(ctx->act_dtype); /* elements per 16-byte piece */
    if (dim % per == 0 && (((uintptr_t)out | (uintptr_t)in) & 15) == 0) {
        int units = dim / per;
        unsigned blocks = rl_cuda_blocks((size_t)n_rows * units, 256, 4096);
        CUDA_CHECK(rl_launch_pdl(gather_rows_kernel<uint4>, dim3(blocks), dim3(256), 0, st, (uint4 *)out,
                                 (const uint4 *)in, rows, n_rows, units));
    } else if (rl_cuda_f32(ctx)) {
        unsigned blocks = rl_cuda_blocks((size_t)n_rows * dim, 256, 4096);
        gather_rows_kernel<float><<<blocks, 256, 0, st>>>((float *)out, (const float *)in, rows, n_rows, dim);
    } else {
        unsigned blocks = rl_cuda_blocks((size_t)n_rows * dim, 256, 4096);
        gather_rows_kernel<bf16><<<blocks, 256, 0, st>>>((bf16 *)out, (const bf16 *)in, rows, n_rows, dim);
    }
    LAUNCH_CHECK();
    return 0;
}

template <typename T>
__global__ void sum_rows_kernel(T *out, const T *in, const int32_t *offsets, const int32_t *rows, int n_rows, int dim)
{
    int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= n_rows) return;
    int j0 = offsets[i], j1 = offsets[i + 1];
    for (int d = lane; d < dim; d += 32) {
        float acc = 0.0f;
        for (int j = j0; j < j1; j++) acc += rl_tof(in[(size_t)rows[j] * dim + d]);
        out[(size_t)i * dim + d] = rl_fromf<T>(acc);
    }
}

extern "C" int rl_cuda_sum_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *offsets, const int32_t *rows,
                                int n_rows, int dim)
{
    if (n_rows == 0) return 0;
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    unsigned blocks = (unsigned)((n_rows + 7) / 8);
    if (rl_cuda_f32(ctx))
        sum_rows_kernel<float><<<blocks, 256, 0, st>>>((float *)out, (const float *)in, offsets, rows, n_rows, dim);
    else
        sum_rows_kernel<bf16><<<blocks, 256, 0, st>>>((bf16 *)out, (const bf16 *)in, offsets, rows, n_rows, dim);
    LAUNCH_CHECK();
    return 0;
}

__global__ void decode_advance_kernel(int32_t *tokens, int32_t *positions, int32_t *seqlens_k, int32_t *slots,
                                      rl_sample_row *rows, const int32_t *sampled, const int32_t *block_tables,
                                      int max_blocks, int block_size, int n_rows)
{
    rl_pdl_begin();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows || seqlens_k[i] <= 0) return;
    int p = positions[i] + 1, b = p / block_size;
    tokens[i] = sampled[i];
    positions[i] = p;
    seqlens_k[i] += 1;
    rows[i].step += 1;
    slots[i] = b < max_blocks ? block_tables[(size_t)i * max_blocks + b] * block_size + p % block_size : -1;
}

extern "C" int rl_cuda_decode_advance(rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k,
                                      int32_t *slots, rl_sample_row *rows, const int32_t *sampled,
                                      const int32_t *block_tables, int max_blocks, int block_size, int n_rows)
{
    if (n_rows == 0) return 0;
    CUDA_CHECK(rl_launch_pdl(decode_advance_kernel, dim3((unsigned)(n_rows + 127) / 128), dim3(128), 0,
                             rl_cuda_st(ctx)->stream, tokens, positions, seqlens_k, slots, rows, sampled, block_tables,
                             max_blocks, block_size, n_rows));
    LAUNCH_CHECK();
    return 0;
}
