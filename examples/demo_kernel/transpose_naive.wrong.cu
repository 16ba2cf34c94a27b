// transpose: 32x32 shared-memory tiles, padded, square bounds
#include "rl_kernel.h"
__global__ void k(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float t[32][33];
    int64_t c0 = (int64_t)blockIdx.x * 32, r0 = (int64_t)blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8)
        if (r0 + j < rows && c0 + threadIdx.x < cols) t[j][threadIdx.x] = x[(r0 + j) * cols + c0 + threadIdx.x];
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8)
        if (c0 + j < rows && r0 + threadIdx.x < cols) y[(c0 + j) * rows + r0 + threadIdx.x] = t[threadIdx.x][j];
}
extern "C" int rl_kernel(const rl_kernel_args *a)
{
    int64_t rows = a->dims[0], cols = a->dims[1];
    k<<<dim3((unsigned)((cols + 31) / 32), (unsigned)((rows + 31) / 32)), dim3(32, 8)>>>((const float *)a->inputs[0], (float *)a->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
