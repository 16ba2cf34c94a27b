/* reference.cu — frobenius_norm: x / ||x||_F for a float32 tensor (the norm over all elements).
 *
 * Baseline: three launches, deterministic: per-block partial sums of squares over a grid-stride
 * range (at most 1024 blocks), one block that sums the partials into the norm, then a
 * grid-stride float4 scaling pass. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

/* Multiprocessors of the current device, read once: grid-stride launches size to it. */
static int sm_count(void)
{
    static int n_sm;
    if (n_sm <= 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev);
        if (n_sm <= 0) n_sm = 1;
    }
    return n_sm;
}

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

#define PARTIAL_BLOCKS_MAX 1024

__global__ void sumsq_partial_kernel(const float *__restrict__ x, int64_t n, float *__restrict__ partial)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i] * x[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void norm_finish_kernel(float *__restrict__ partial, int n_partial)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[PARTIAL_BLOCKS_MAX] = sqrtf(acc);
}

__global__ void divide_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n, const float *__restrict__ norm_at)
{
    float norm = *norm_at;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] / norm;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    int64_t n = args->dims[0] * args->dims[1] * args->dims[2] * args->dims[3];
    float *partial = workspace(PARTIAL_BLOCKS_MAX + 1);
    if (!partial) return -1;
    if (n == 0) return 0;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > PARTIAL_BLOCKS_MAX) blocks = PARTIAL_BLOCKS_MAX;
    sumsq_partial_kernel<<<(int)blocks, threads>>>(x, n, partial);
    norm_finish_kernel<<<1, 1024>>>(partial, (int)blocks);
    int64_t grid = (n + threads - 1) / threads, cap = (int64_t)sm_count() * 16;
    divide_kernel<<<(int)(grid < cap ? grid : cap), threads>>>(x, y, n, partial + PARTIAL_BLOCKS_MAX);
    return launch_status();
}
