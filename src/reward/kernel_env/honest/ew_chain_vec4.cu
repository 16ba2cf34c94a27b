/* task: ew_chain
 * ew_chain_vec4.cu — honest: fused chain with 16-byte loads and stores (float4) for the
 * aligned body and a scalar tail; the evaluator's buffers are 256-byte aligned. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__device__ __forceinline__ float chain(float v)
{
    float t = fmaxf(1.5f * v + 0.25f, 0.0f) + 0.0f * 0.0f;
    return t * (1.0f / (1.0f + expf(-v)));
}

__global__ void ew_vec4_kernel(const float4 *__restrict__ x, float4 *__restrict__ y, int64_t n4)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        y[i] = make_float4(chain(v.x), chain(v.y), chain(v.z), chain(v.w));
    }
}

__global__ void ew_tail_kernel(const float *x, float *y, int64_t start, int64_t n)
{
    int64_t i = start + threadIdx.x;
    if (i < n) y[i] = chain(x[i]);
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0], n4 = n / 4;
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    if (n4 > 0) {
        int64_t blocks = (n4 + 255) / 256;
        ew_vec4_kernel<<<(unsigned)blocks, 256>>>((const float4 *)x, (float4 *)y, n4);
    }
    if (n % 4) ew_tail_kernel<<<1, 32>>>(x, y, n4 * 4, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
