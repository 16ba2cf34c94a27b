// rowsum: one block per row, shared-memory tree
#include "rl_kernel.h"
__global__ void k(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float sm[256];
    int64_t r = blockIdx.x;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += 256) s += x[r * cols + c];
    sm[threadIdx.x] = s;
    __syncthreads();
    for (int h = 128; h; h >>= 1) {
        if (threadIdx.x < h) sm[threadIdx.x] += sm[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[r] = sm[0];
}
extern "C" int rl_kernel(const rl_kernel_args *a)
{
    int64_t rows = a->dims[0], cols = a->dims[1];
    k<<<(unsigned)rows, 256>>>((const float *)a->inputs[0], (float *)a->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
