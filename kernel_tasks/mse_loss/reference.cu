/* reference.cu — mse_loss: mean squared error between two float32 [rows, cols] matrices, a scalar.
 *
 * Baseline: deterministic two-launch mean: per-block partial sums over a grid-stride range (at
 * most 1024 blocks, warp-shuffle block reduction), then one block sums the partials. */
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

/* Device scratch kept across calls, grown on demand (cudaFree synchronizes, so growing is
 * safe while earlier work is in flight). */
static float *workspace(size_t n_floats)
{
    static float *buf;
    static size_t cap;
    if (n_floats > cap) {
        if (buf) cudaFree(buf);
        buf = NULL;
        cap = 0;
        if (cudaMalloc((void **)&buf, n_floats * sizeof(float)) != cudaSuccess) return NULL;
        cap = n_floats;
    }
    return buf;
}

__device__ __forceinline__ float term(float p, float t) { return (p - t) * (p - t); }

#define PARTIAL_BLOCKS_MAX 1024

/* Sum of term(i) over [0, n) per block; one partial per block. */
__global__ void partial_sum_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                   int64_t n, float *__restrict__ partial)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        acc += term(a[i], b[i]);
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* One block: total of the partials times scale, into out[0]. */
__global__ void finish_sum_kernel(const float *__restrict__ partial, int n_partial, float scale,
                                  float *__restrict__ out)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) out[0] = acc * scale;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], n = rows * args->dims[1];
    float *partial = workspace(PARTIAL_BLOCKS_MAX);
    if (!partial) return -1;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > PARTIAL_BLOCKS_MAX) blocks = PARTIAL_BLOCKS_MAX;
    if (blocks < 1) blocks = 1;
    partial_sum_kernel<<<(int)blocks, threads>>>((const float *)args->inputs[0], (const float *)args->inputs[1], n, partial);
    finish_sum_kernel<<<1, 1024>>>(partial, (int)blocks, 1.0f / (float)n, (float *)args->outputs[0]);
    return launch_status();
}
