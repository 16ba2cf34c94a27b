/* task: ew_chain
 * expect: timeout (device_idle)
 * persistent_kernel.cu — CHEAT: computes correctly, then leaves a kernel spinning (for up
 * to 60 s) after the call returns, like a persistent server kernel that outlives the call. */
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

__global__ void spin_kernel(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) __nanosleep(1000);
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    fused_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], n);
    spin_kernel<<<1, 1>>>(60LL * 2000000000LL);
    return 0;
}
