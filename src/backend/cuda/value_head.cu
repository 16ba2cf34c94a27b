/* value_head.cu — a value model's scalar head (ops.h) on act-dtype activations (bf16, or fp32 in
 * the fp32 mode), fp32 accumulation; kernels templated over that dtype.
 *
 * Forward: one warp per row, a strided dot product reduced with shuffles. Backward: dhidden is
 * elementwise (row gradient times the weight); dweight[d] is a column sum over the rows: one
 * thread per dimension walks every row in order (coalesced across the warp), so the sum is
 * deterministic; dbias is one block's reduction of the row gradients, in a fixed order. */
#include "backend/cuda/common.cuh"

template <typename T>
__global__ void value_head_fwd_kernel(float *values, const T *hidden, const T *weight, const T *bias, int n_rows,
                                      int dim)
{
    int warp = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
    if (warp >= n_rows) return;
    const T *h = hidden + (size_t)warp * dim;
    float acc = 0.0f;
    for (int d = lane; d < dim; d += 32) acc += rl_tof(h[d]) * rl_tof(weight[d]);
    acc = rl_warp_sum(acc);
    if (lane == 0) values[warp] = acc + (bias ? rl_tof(bias[0]) : 0.0f);
}

template <typename T>
__global__ void value_head_dhidden_kernel(T *dhidden, const float *dvalues, const T *weight, int n_rows, int dim)
{
    size_t n = (size_t)n_rows * dim;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dhidden[i] = rl_fromf<T>(dvalues[i / dim] * rl_tof(weight[i % dim]));
}

template <typename T>
__global__ void value_head_dweight_kernel(float *dweight, const float *dvalues, const T *hidden, int n_rows, int dim)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= dim) return;
    float acc = 0.0f;
    for (int r = 0; r < n_rows; r++) acc += dvalues[r] * rl_tof(hidden[(size_t)r * dim + d]);
    dweight[d] += acc;
}

__global__ void value_head_dbias_kernel(float *dbias, const float *dvalues, int n_rows)
{
    float acc = 0.0f;
    for (int r = threadIdx.x; r < n_rows; r += blockDim.x) acc += dvalues[r];
    acc = rl_block_sum(acc);
    if (threadIdx.x == 0) dbias[0] += acc;
}

template <typename T>
static int value_head_fwd(rl_ctx *ctx, float *values, const void *hidden, const void *weight, const void *bias,
                          int n_rows, int dim)
{
    unsigned blocks = (unsigned)(((size_t)n_rows * 32 + 255) / 256);
    value_head_fwd_kernel<T><<<blocks, 256, 0, rl_cuda_st(ctx)->stream>>>(values, (const T *)hidden, (const T *)weight,
                                                                          (const T *)bias, n_rows, dim);
    LAUNCH_CHECK();
    return 0;
}

template <typename T>
static int value_head_bwd(rl_ctx *ctx, void *dhidden, float *dweight, float *dbias, const float *dvalues,
                          const void *hidden, const void *weight, int n_rows, int dim)
{
    cudaStream_t s = rl_cuda_st(ctx)->stream;
    if (dhidden) {
        size_t n = (size_t)n_rows * dim;
        value_head_dhidden_kernel<T><<<rl_cuda_blocks(n, 256, 65535), 256, 0, s>>>((T *)dhidden, dvalues,
                                                                                  (const T *)weight, n_rows, dim);
        LAUNCH_CHECK();
    }
    if (dweight) {
        value_head_dweight_kernel<T><<<(dim + 127) / 128, 128, 0, s>>>(dweight, dvalues, (const T *)hidden, n_rows,
                                                                        dim);
        LAUNCH_CHECK();
    }
    if (dbias) {
        value_head_dbias_kernel<<<1, 256, 0, s>>>(dbias, dvalues, n_rows);
        LAUNCH_CHECK();
    }
    return 0;
}

extern "C" int rl_cuda_value_head_fwd(rl_ctx *ctx, float *values, const void *hidden, const void *weight,
                                      const void *bias, int n_rows, int dim)
{
    if (n_rows == 0) return 0;
    return RL_ACT_CALL(ctx, value_head_fwd, (ctx, values, hidden, weight, bias, n_rows, dim));
}

extern "C" int rl_cuda_value_head_bwd(rl_ctx *ctx, void *dhidden, float *dweight, float *dbias, const float *dvalues,
                                      const void *hidden, const void *weight, int n_rows, int dim)
{
    if (n_rows == 0) return 0;
    return RL_ACT_CALL(ctx, value_head_bwd, (ctx, dhidden, dweight, dbias, dvalues, hidden, weight, n_rows, dim));
}
