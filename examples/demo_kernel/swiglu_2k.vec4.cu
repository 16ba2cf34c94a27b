// swiglu: one fused kernel, float4 loads
#include "rl_kernel.h"
__device__ float f(float v, float w) { return v / (1.0f + expf(-v)) * w; }
__global__ void k(const float *g, const float *u, float *y, int64_t n)
{
    int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n && ((uintptr_t)g & 15) == 0 && ((uintptr_t)u & 15) == 0 && ((uintptr_t)y & 15) == 0) {
        float4 a = *(const float4 *)(g + i), b = *(const float4 *)(u + i);
        *(float4 *)(y + i) = make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
    } else {
        for (int64_t j = i; j < n && j < i + 4; j++) y[j] = f(g[j], u[j]);
    }
}
extern "C" int rl_kernel(const rl_kernel_args *a)
{
    int64_t n = a->dims[0];
    k<<<(unsigned)((n + 1023) / 1024), 256>>>((const float *)a->inputs[0], (const float *)a->inputs[1], (float *)a->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
