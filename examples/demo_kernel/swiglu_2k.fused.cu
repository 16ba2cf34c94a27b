// swiglu: one fused kernel
#include "rl_kernel.h"
__global__ void k(const float *g, const float *u, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = g[i];
        y[i] = v / (1.0f + expf(-v)) * u[i];
    }
}
extern "C" int rl_kernel(const rl_kernel_args *a)
{
    int64_t n = a->dims[0];
    k<<<(unsigned)((n + 255) / 256), 256>>>((const float *)a->inputs[0], (const float *)a->inputs[1], (float *)a->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
