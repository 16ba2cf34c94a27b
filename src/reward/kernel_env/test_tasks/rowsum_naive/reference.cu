/* reference.cu — rowsum_naive: y[r] = sum of row r.
 *
 * Honest but beatable baseline: one thread per row walks its row; neighbouring threads read
 * addresses a whole row apart, so loads are not coalesced. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void rowsum_kernel(const float *x, float *y, int64_t rows, int64_t cols)
{
    int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int64_t c = 0; c < cols; c++) s += x[r * cols + c];
    y[r] = s;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    rowsum_kernel<<<(unsigned)((rows + 127) / 128), 128>>>((const float *)args->inputs[0], (float *)args->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
