/* reference.cu — sigmoid: logistic sigmoid, elementwise over a float32 tensor.
 *
 * Baseline: one grid-stride kernel, 16-byte (float4) loads and stores when both pointers are
 * 16-byte aligned, a scalar tail for the last n % 4 elements; the grid is sized to the
 * multiprocessor count. Memory-bound: about one read and one write per element. */
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

__device__ __forceinline__ float op(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void sigmoid_vec4_kernel(const float4 *__restrict__ x, float4 *__restrict__ y, int64_t n4)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = op(v.x);
        v.y = op(v.y);
        v.z = op(v.z);
        v.w = op(v.w);
        y[i] = v;
    }
}

__global__ void sigmoid_scalar_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t start, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = start + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = op(x[i]);
}

static int grid_for(int64_t work, int threads)
{
    int64_t blocks = (work + threads - 1) / threads, cap = (int64_t)sm_count() * 16;
    if (blocks > cap) blocks = cap;
    return blocks < 1 ? 1 : (int)blocks;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    int64_t n = args->dims[0] * args->dims[1];
    const int threads = 256;
    int aligned = (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) sigmoid_vec4_kernel<<<grid_for(n4, threads), threads>>>((const float4 *)x, (float4 *)y, n4);
    if (n - n4 * 4 > 0) sigmoid_scalar_kernel<<<grid_for(n - n4 * 4, threads), threads>>>(x, y, n4 * 4, n);
    return launch_status();
}
