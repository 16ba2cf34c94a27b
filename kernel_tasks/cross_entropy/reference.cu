/* reference.cu — cross_entropy: mean over rows of -log softmax(logits[r])[target[r]], float32
 * logits [rows, classes], int32 targets in [0, classes).
 *
 * Baseline: one 256-thread block per row computes max and sum of exponentials with warp-shuffle
 * block reductions and writes the row's loss to scratch; one block averages the losses
 * (deterministic). */
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

__global__ void row_loss_kernel(const float *__restrict__ logits, const int32_t *__restrict__ target,
                                float *__restrict__ loss, int64_t classes)
{
    __shared__ float scratch[32];
    const float *xr = logits + (int64_t)blockIdx.x * classes;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) loss[blockIdx.x] = logf(s) + m - xr[target[blockIdx.x]];
}

__global__ void mean_kernel(const float *__restrict__ v, int64_t n, float *__restrict__ out)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += v[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) out[0] = acc / (float)n;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], classes = args->dims[1];
    if (rows > INT32_MAX || rows < 1) return -1;
    float *loss = workspace((size_t)rows);
    if (!loss) return -1;
    row_loss_kernel<<<(unsigned)rows, 256>>>((const float *)args->inputs[0], (const int32_t *)args->inputs[1], loss, classes);
    mean_kernel<<<1, 1024>>>(loss, rows, (float *)args->outputs[0]);
    return launch_status();
}
