/* task: rowsum_naive
 * rowsum_warp.cu — honest: one warp per row, lanes read consecutive elements (coalesced),
 * shuffle reduction. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void rowsum_warp_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols)
{
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float s = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) s += x[row * cols + c];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) y[row] = s;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    rowsum_warp_kernel<<<(unsigned)((rows + 7) / 8), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
