/* reference.cu — swiglu_2k: y = silu(g) * u.
 *
 * Honest but beatable baseline: silu into y, then a second kernel multiplies y by u (y makes a
 * round trip through device memory). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void silu_kernel(const float *g, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = g[i] / (1.0f + expf(-g[i]));
}

__global__ void mul_kernel(const float *u, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * u[i];
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    float *y = (float *)args->outputs[0];
    unsigned blocks = (unsigned)((n + 255) / 256);
    silu_kernel<<<blocks, 256>>>((const float *)args->inputs[0], y, n);
    mul_kernel<<<blocks, 256>>>((const float *)args->inputs[1], y, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
