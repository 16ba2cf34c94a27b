/* task: softmax_3k
 * softmax_online_warp.cu — honest: one warp per row, online softmax (running max with the sum
 * rescaled, Milakov & Gimelshein 2018) in one read pass, then one pass that writes y: two
 * reads of x instead of three, one kernel instead of three. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void softmax_warp_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols)
{
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float *xr = x + row * cols;
    float m = -INFINITY, s = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) {
        float v = xr[c], nm = fmaxf(m, v);
        s = (m == -INFINITY ? 0.0f : s * expf(m - nm)) + expf(v - nm);
        m = nm;
    }
    for (int o = 16; o; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
        float nm = fmaxf(m, om);
        s = (m == -INFINITY ? 0.0f : s * expf(m - nm)) + (om == -INFINITY ? 0.0f : os * expf(om - nm));
        m = nm;
    }
    float *yr = y + row * cols;
    for (int64_t c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) / s;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    softmax_warp_kernel<<<(unsigned)((rows + 7) / 8), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
