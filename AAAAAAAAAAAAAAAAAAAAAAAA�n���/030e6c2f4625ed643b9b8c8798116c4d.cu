/* reference.cu — ew_chain: y = max(1.5 x + 0.25, 0) * sigmoid(x).
 *
 * Honest but beatable baseline: the chain runs as four elementwise kernels, each reading and
 * writing y in device memory (as an unfused framework would). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void scale_shift_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.5f * x[i] + 0.25f;
}

__global__ void relu_kernel(float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(y[i], 0.0f);
}

__global__ void sigmoid_mul_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * (1.0f / (1.0f + expf(-x[i])));
}

__global__ void copy_kernel(float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] + 0.0f * 0.0f;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    unsigned blocks = (unsigned)((n + 255) / 256);
    scale_shift_kernel<<<blocks, 256>>>(x, y, n);
    relu_kernel<<<blocks, 256>>>(y, n);
    copy_kernel<<<blocks, 256>>>(y, n);
    sigmoid_mul_kernel<<<blocks, 256>>>(x, y, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
