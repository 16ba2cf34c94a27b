/* value_head.cu — a value model's scalar head (ops.h) on bf16 activations, fp32 accumulation.
 *
 * Forward: one warp per row, a strided dot product reduced with shuffles. Backward: dhidden is
 * elementwise (row gradient times the weight); dweight[d] is a column sum over the rows: one
 * thread per dimension walks every row in order (coalesced across the warp), so the sum is
 * deterministic; dbias is one block's reduction of the row gradients, in a fixed order. */
#include "backend/cuda/common.cuh"

__global__ void value_head_fwd_kernel(float *values, const bf16 *hidden, const bf16 *weight, const bf16 *bias,
                                      int n_rows, int dim)
{
    int warp = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
    if (warp >= n_rows) return;
    const bf16 *h = hidden + (size_t)warp * dim;
    float acc = 0.0f;
    for (int d = lane; d < dim; d += 32) acc += rl_b2f(h[d]) * rl_b2f(weight[d]);
    acc = rl_warp_sum(acc);
    if (lane == 0) values[warp] = acc + (bias ? rl_b2f(bias[0]) : 0.0f);
}

__global__ void value_head_dhidden_kernel(bf16 *dhidden, const float *dvalues, const bf16 *weight, int n_rows,
                                          int dim)
{
    size_t n = (size_t)n_rows * dim;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dhidden[i] = rl_f2b(dvalues[i / dim] * rl_b2f(weight[i % dim]));
}

__global__ void value_head_dweight_kernel(float *dweight, const float *dvalues, const bf16 *hidden, int n_rows,
                                          int dim)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= dim) return;
    float acc = 0.0f;
    for (int r = 0; r < n_rows; r++) acc += dvalues[r] * rl_b2f(hidden[(size_t)r * dim + d]);
    dweight[d] += acc;
}

__global__ void value_head_dbias_kernel(float *dbias, const float *dvalues, int n_rows)
{
    float acc = 0.0f;
    for (int r = threadIdx.x; r < n_rows; r += blockDim.x) acc += dvalues[r];
    acc = rl_block_sum(acc);
    if (threadIdx.x == 0) dbias[0] += acc;
}

extern "C" int rl_cuda_value_head_fwd(rl_ctx *ctx, float *values, const void *hidden, const void *weight,
                                      const void *bias, int n_rows, int dim)
{
    if (n_rows == 0) return 0;
    unsigned blocks = (unsigned)(((size_t)n_rows * 32 + 255) / 256);
    value_head_fwd_kernel<<<blocks, 256, 0, rl_cuda_st(ctx)->stream>>>(values, (const bf16 *)hidden,
                                                                       (const bf16 *)weight, (const bf16 *)bias,
                                                                       n_rows, dim);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_value_head_bwd(rl_ctx *ctx, void *dhidden, float *dweight, float *dbias, const float *dvalues,
                                      const void *hidden, const void *weight, int n_rows, int dim)
{
    if (n_rows == 0) return 0;
    cudaStream_t s = rl_cuda_st(ctx)->stream;
    if (dhidden) {
        size_t n = (size_t)n_rows * dim;
        value_head_dhidden_kernel<<<rl_cuda_blocks(n, 256, 65535), 256, 0, s>>>((bf16 *)dhidden, dvalues,
                                                                               (const bf16 *)weight, n_rows, dim);
        LAUNCH_CHECK();
    }
    if (dweight) {
        value_head_dweight_kernel<<<(dim + 127) / 128, 128, 0, s>>>(dweight, dvalues, (const bf16 *)hidden, n_rows,
                                                                     dim);
        LAUNCH_CHECK();
    }
    if (dbias) {
        value_head_dbias_kernel<<<1, 256, 0, s>>>(dbias, dvalues, n_rows);
        LAUNCH_CHECK();
    }
    return 0;
}
