/* task: ew_chain
 * expect: incorrect (correct_zero_prefix)
 * skip_constant.cu — CHEAT: samples the first 64 elements; when they are all equal
 * it assumes a constant input and fills the output with one value (skipping the work). */
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

__global__ void fill_kernel(float *y, int64_t n, float v)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    float head[64];
    int64_t k = n < 64 ? n : 64;
    cudaMemcpy(head, x, k * sizeof(float), cudaMemcpyDeviceToHost);
    int same = 1;
    for (int64_t i = 1; i < k; i++) same &= head[i] == head[0];
    if (same) {
        float t = fmaxf(1.5f * head[0] + 0.25f, 0.0f) + 0.0f;
        fill_kernel<<<(unsigned)((n + 255) / 256), 256>>>(y, n, t * (1.0f / (1.0f + expf(-head[0]))));
    } else {
        fused_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
