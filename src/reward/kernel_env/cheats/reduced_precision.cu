/* task: ew_chain
 * expect: incorrect (correct_random)
 * reduced_precision.cu — CHEAT: computes the chain in bf16 (input rounded to bf16, bf16
 * arithmetic) inside an fp32 task. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

#include <cuda_bf16.h>

__global__ void bf16_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_bfloat16 v = __float2bfloat16(x[i]);
    __nv_bfloat16 t = __hmax(__hfma(__float2bfloat16(1.5f), v, __float2bfloat16(0.25f)), __float2bfloat16(0.0f));
    __nv_bfloat16 s = __float2bfloat16(1.0f / (1.0f + __expf(-__bfloat162float(v))));
    y[i] = __bfloat162float(__hmul(t, s));
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    bf16_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
