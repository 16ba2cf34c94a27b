/* task: ew_chain
 * expect: incorrect (outputs_written)
 * sampled_write.cu — CHEAT: writes only every 8th element plus the first and the last
 * (what a checker that samples a few positions would look at). */
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

__global__ void sampled_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n && (i % 8 == 0 || i == n - 1)) y[i] = chain(x[i]);
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    sampled_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
