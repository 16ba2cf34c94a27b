/* task: softmax_3k
 * softmax_online_block.cu — honest: one block per row; each thread keeps its share of the row
 * in registers (up to 8 per thread for 256 threads, rows up to 2048 wide), so x is read from
 * device memory once; rows wider than that fall back to an online (running max and rescaled
 * sum, Milakov & Gimelshein 2018) pass plus a write pass. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

#define THREADS 256
#define PER_THREAD 8

__device__ __forceinline__ void block_max_sum(float &m, float &s, float *sm, float *ss)
{
    for (int o = 16; o; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
        float nm = fmaxf(m, om);
        s = (m == -INFINITY ? 0.0f : s * expf(m - nm)) + (om == -INFINITY ? 0.0f : os * expf(om - nm));
        m = nm;
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    m = -INFINITY;
    s = 0.0f;
    for (int w = 0; w < THREADS / 32; w++) {
        float om = sm[w], os = ss[w], nm = fmaxf(m, om);
        s = (m == -INFINITY ? 0.0f : s * expf(m - nm)) + (om == -INFINITY ? 0.0f : os * expf(om - nm));
        m = nm;
    }
}

__global__ void softmax_online_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t cols)
{
    __shared__ float sm[THREADS / 32], ss[THREADS / 32];
    const float *xr = x + blockIdx.x * cols;
    float *yr = y + blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    if (cols <= THREADS * PER_THREAD) {
        float v[PER_THREAD];
#pragma unroll
        for (int k = 0; k < PER_THREAD; k++) {
            int64_t c = threadIdx.x + (int64_t)k * THREADS;
            v[k] = c < cols ? xr[c] : -INFINITY;
            m = fmaxf(m, v[k]);
        }
#pragma unroll
        for (int k = 0; k < PER_THREAD; k++) s += v[k] == -INFINITY ? 0.0f : expf(v[k] - m);
        block_max_sum(m, s, sm, ss);
#pragma unroll
        for (int k = 0; k < PER_THREAD; k++) {
            int64_t c = threadIdx.x + (int64_t)k * THREADS;
            if (c < cols) yr[c] = expf(v[k] - m) / s;
        }
        return;
    }
    for (int64_t c = threadIdx.x; c < cols; c += THREADS) {
        float v = xr[c], nm = fmaxf(m, v);
        s = (m == -INFINITY ? 0.0f : s * expf(m - nm)) + expf(v - nm);
        m = nm;
    }
    block_max_sum(m, s, sm, ss);
    for (int64_t c = threadIdx.x; c < cols; c += THREADS) yr[c] = expf(xr[c] - m) / s;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    softmax_online_kernel<<<(unsigned)rows, THREADS>>>((const float *)args->inputs[0], (float *)args->outputs[0], cols);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
