// rowsum: one warp per row, shuffle reduction
#include "rl_kernel.h"
__global__ void k(const float *x, float *y, int64_t rows, int64_t cols)
{
    int64_t r = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    float s = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) s += x[r * cols + c];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) y[r] = s;
}
extern "C" int rl_kernel(const rl_kernel_args *a)
{
    int64_t rows = a->dims[0], cols = a->dims[1];
    k<<<(unsigned)((rows + 7) / 8), 256>>>((const float *)a->inputs[0], (float *)a->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
