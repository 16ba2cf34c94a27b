/* reference.cu — transpose_naive: y[c][r] = x[r][c].
 *
 * Honest but beatable baseline: one thread per element, reads coalesced, writes strided by
 * rows (every store of a warp lands in a different 32-byte sector). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void transpose_kernel(const float *x, float *y, int64_t rows, int64_t cols)
{
    int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t r = blockIdx.y;
    if (c < cols) y[c * rows + r] = x[r * cols + c];
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    if (rows > 65535) return -1;
    dim3 grid((unsigned)((cols + 255) / 256), (unsigned)rows);
    transpose_kernel<<<grid, 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
