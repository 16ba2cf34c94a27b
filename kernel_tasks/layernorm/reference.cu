/* reference.cu — layernorm: LayerNorm over each row with weight and bias (eps 1e-5).
 *
 * Baseline: one 256-thread block per row; threads stride over the row (coalesced), block
 * reductions by warp shuffles plus one shared-memory step. The row is read again from L1/L2
 * for each pass. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide sum (blockDim.x a multiple of 32); every thread gets the result. scratch: 32
 * floats of shared memory, reusable by the next call thanks to the leading barrier. */
__device__ float block_sum(float v, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_sum(lane < n_warps ? scratch[lane] : 0.0f);
}

__device__ float block_max(float v, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_max(lane < n_warps ? scratch[lane] : -INFINITY);
}

__global__ void layernorm_kernel(const float *__restrict__ x, const float *__restrict__ p1, const float *__restrict__ p2, float *__restrict__ y, int64_t cols)
{
    __shared__ float scratch[32];
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    float mean0 = block_sum(s, scratch) / (float)cols;
    /* Second pass on x - mean0, with the mean corrected by the mean of those differences: the
     * rounding error of mean0 does not leak into the output (a constant row gives exactly bias). */
    float sd = 0.0f, q = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean0;
        sd += d;
        q += d * d;
    }
    float mean_d = block_sum(sd, scratch) / (float)cols;
    float mean = mean0 + mean_d;
    float var = fmaxf(block_sum(q, scratch) / (float)cols - mean_d * mean_d, 0.0f);
    float rstd = 1.0f / sqrtf(var + 1e-5f);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * rstd * p1[c] + p2[c];
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    if (rows > INT32_MAX) return -1;
    if (rows == 0) return 0;
    layernorm_kernel<<<(unsigned)rows, 256>>>((const float *)args->inputs[0], (const float *)args->inputs[1], (const float *)args->inputs[2], (float *)args->outputs[0], cols);
    return launch_status();
}
