/* reference.cu — layernorm_3k: row layer norm as three kernels.
 *
 * Honest but beatable baseline: a warp per row computes the mean, a second kernel the
 * variance (two-pass, numerically sound), a third normalizes every element; x is read three
 * times. Per-row scratch is a module-owned buffer grown as needed. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void row_mean_kernel(const float *x, float *mean, int64_t rows, int64_t cols)
{
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float v = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) v += x[row * cols + c];
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) mean[row] = v / (float)cols;
}

__global__ void row_rstd_kernel(const float *x, const float *mean, float *rstd, int64_t rows, int64_t cols)
{
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float v = 0.0f, m = mean[row];
    for (int64_t c = lane; c < cols; c += 32) {
        float d = x[row * cols + c] - m;
        v += d * d;
    }
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) rstd[row] = 1.0f / sqrtf(v / (float)cols + 1e-5f);
}

__global__ void normalize_kernel(const float *x, const float *mean, const float *rstd, float *y, int64_t n, int64_t cols)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = (x[i] - mean[i / cols]) * rstd[i / cols];
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
    row_mean_kernel<<<row_blocks, 256>>>(x, scratch, rows, cols);
    row_rstd_kernel<<<row_blocks, 256>>>(x, scratch, scratch + rows, rows, cols);
    int64_t n = rows * cols;
    normalize_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, scratch, scratch + rows, y, n, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
