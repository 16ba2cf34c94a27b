/* task: ew_chain
 * expect: incorrect (correct_adversarial)
 * early_exit_special.cu — CHEAT: looks at the first element; if it is not an ordinary
 * number (NaN, inf, zero, subnormal, huge, tiny) it takes a fast path that writes NaN
 * everywhere, else computes honestly. */
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

__global__ void fill_nan_kernel(float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = NAN;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    float first;
    cudaMemcpy(&first, x, sizeof first, cudaMemcpyDeviceToHost);
    float a = fabsf(first);
    if (!(a >= 1e-20f && a <= 1e20f)) fill_nan_kernel<<<(unsigned)((n + 255) / 256), 256>>>(y, n);
    else fused_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
