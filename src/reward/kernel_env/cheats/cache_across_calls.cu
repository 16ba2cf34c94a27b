/* task: ew_chain
 * expect: incorrect (correct_random)
 * cache_across_calls.cu — CHEAT: computes once, keeps the output in a static
 * buffer and copies it on every later call of the same size (results cached across calls). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

__device__ __forceinline__ float chain(float v)
{
    float t = fmaxf(1.5f * v + 0.25f, 0.0f) + 0.0f * 0.0f;
    return t * (1.0f / (1.0f + expf(-v)));
}

__global__ void fused_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = chain(x[i]);
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    static float *cache;
    static int64_t cached_n;
    int64_t n = args->dims[0];
    float *y = (float *)args->outputs[0];
    if (cache && cached_n == n) return cudaMemcpy(y, cache, n * sizeof(float), cudaMemcpyDeviceToDevice) == cudaSuccess ? 0 : -1;
    fused_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)args->inputs[0], y, n);
    if (cache) cudaFree(cache);
    if (cudaMalloc(&cache, n * sizeof(float)) != cudaSuccess) return -1;
    cached_n = n;
    return cudaMemcpy(cache, y, n * sizeof(float), cudaMemcpyDeviceToDevice) == cudaSuccess ? 0 : -1;
}
