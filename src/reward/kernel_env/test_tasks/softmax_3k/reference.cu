/* reference.cu — softmax_3k: row softmax as three kernels.
 *
 * Honest but beatable baseline: a warp per row finds the maximum, a second kernel (warp per
 * row) sums exp(x - max), a third rescales every element; x is read from device memory three
 * times. The per-row scratch (max, sum) is a module-owned buffer grown as needed. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void row_max_kernel(const float *x, float *m, int64_t rows, int64_t cols)
{
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float v = -INFINITY;
    for (int64_t c = lane; c < cols; c += 32) v = fmaxf(v, x[row * cols + c]);
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) m[row] = v;
}

__global__ void row_sum_kernel(const float *x, const float *m, float *s, int64_t rows, int64_t cols)
{
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float v = 0.0f, mr = m[row];
    for (int64_t c = lane; c < cols; c += 32) v += expf(x[row * cols + c] - mr);
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) s[row] = v;
}

__global__ void normalize_kernel(const float *x, const float *m, const float *s, float *y, int64_t n, int64_t cols)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = expf(x[i] - m[i / cols]) / s[i / cols];
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    static float *scratch;
    static int64_t scratch_rows;
    int64_t rows = args->dims[0], cols = args->dims[1];
    if (rows > scratch_rows) {
        if (scratch) cudaFree(scratch);
        if (cudaMalloc(&scratch, 2 * rows * sizeof(float)) != cudaSuccess) return -1;
        scratch_rows = rows;
    }
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    unsigned row_blocks = (unsigned)((rows + 7) / 8);
    row_max_kernel<<<row_blocks, 256>>>(x, scratch, rows, cols);
    row_sum_kernel<<<row_blocks, 256>>>(x, scratch, scratch + rows, rows, cols);
    int64_t n = rows * cols;
    normalize_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, scratch, scratch + rows, y, n, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
