/* reference.cu — matvec_naive: y = A x.
 *
 * Honest but beatable baseline: one thread per row, so a warp's loads of A are a row apart
 * (not coalesced). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void matvec_kernel(const float *a, const float *x, float *y, int64_t rows, int64_t cols)
{
    int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int64_t c = 0; c < cols; c++) s += a[r * cols + c] * x[c];
    y[r] = s;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    matvec_kernel<<<(unsigned)((rows + 127) / 128), 128>>>((const float *)args->inputs[0], (const float *)args->inputs[1],
                                                           (float *)args->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
