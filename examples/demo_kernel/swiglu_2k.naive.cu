// swiglu: silu kernel, then a multiply kernel
#include "rl_kernel.h"
__global__ void k1(const float *g, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = g[i] / (1.0f + expf(-g[i]));
}
__global__ void k2(const float *u, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * u[i];
}
extern "C" int rl_kernel(const rl_kernel_args *a)
{
    int64_t n = a->dims[0];
    float *y = (float *)a->outputs[0];
    k1<<<(unsigned)((n + 255) / 256), 256>>>((const float *)a->inputs[0], y, n);
    k2<<<(unsigned)((n + 255) / 256), 256>>>((const float *)a->inputs[1], y, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
