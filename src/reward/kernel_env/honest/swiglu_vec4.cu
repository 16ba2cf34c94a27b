/* task: swiglu_2k
 * swiglu_vec4.cu — honest: fused silu * u with 16-byte loads and stores for the aligned body
 * and a scalar tail (the evaluator's buffers are 256-byte aligned). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__device__ __forceinline__ float swiglu(float g, float u)
{
    return g / (1.0f + expf(-g)) * u;
}

__global__ void swiglu_vec4_kernel(const float4 *__restrict__ g, const float4 *__restrict__ u, float4 *__restrict__ y, int64_t n4)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 a = g[i], b = u[i];
        y[i] = make_float4(swiglu(a.x, b.x), swiglu(a.y, b.y), swiglu(a.z, b.z), swiglu(a.w, b.w));
    }
}

__global__ void swiglu_tail_kernel(const float *g, const float *u, float *y, int64_t start, int64_t n)
{
    int64_t i = start + threadIdx.x;
    if (i < n) y[i] = swiglu(g[i], u[i]);
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0], n4 = n / 4;
    const float *g = (const float *)args->inputs[0], *u = (const float *)args->inputs[1];
    float *y = (float *)args->outputs[0];
    if (n4 > 0) {
        int64_t blocks = (n4 + 255) / 256;
        swiglu_vec4_kernel<<<(unsigned)blocks, 256>>>((const float4 *)g, (const float4 *)u, (float4 *)y, n4);
    }
    if (n % 4) swiglu_tail_kernel<<<1, 32>>>(g, u, y, n4 * 4, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
