/* task: ew_chain
 * expect: incorrect (guards)
 * oob_write.cu — CHEAT: computes correctly but writes 17 elements past the end of its
 * output (a rounded-up tail without a bounds check). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

__global__ void oob_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i], t = fmaxf(1.5f * v + 0.25f, 0.0f) + 0.0f * 0.0f;
        y[i] = t * (1.0f / (1.0f + expf(-v)));
    } else if (i < n + 17) {
        y[i] = 0.0f;
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    oob_kernel<<<(unsigned)((n + 17 + 255) / 256), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
