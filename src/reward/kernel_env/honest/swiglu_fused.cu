/* task: swiglu_2k
 * swiglu_fused.cu — honest: silu and the product in one kernel, so y is written once and
 * never read back. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void swiglu_kernel(const float *__restrict__ g, const float *__restrict__ u, float *__restrict__ y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float gv = g[i];
        y[i] = gv / (1.0f + expf(-gv)) * u[i];
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    swiglu_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)args->inputs[0], (const float *)args->inputs[1],
                                                        (float *)args->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
