/* reference.cu — log_softmax: log-softmax over each row (the last dimension) of a float32 [rows, cols] matrix.
 *
 * Baseline: one 256-thread block per row, two passes over the row: an online pass that keeps a
 * running (max, sum of exponentials) per thread, merged across the block with warp shuffles,
 * then the output pass (the row is re-read from L2). float4 loads and stores when the row
 * length is a multiple of 4 and the pointers are 16-byte aligned. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

/* (max, sum of exp(x - max)) pairs, merged as in online softmax (Milakov & Gimelshein 2018). */
__device__ __forceinline__ void merge(float &m, float &s, float m2, float s2)
{
    float mx = fmaxf(m, m2);
    if (mx == -INFINITY) return; /* both empty */
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}

__device__ __forceinline__ void add(float &m, float &s, float x)
{
    if (x > m) {
        s = s * expf(m - x) + 1.0f;
        m = x;
    } else {
        s += expf(x - m);
    }
}

/* Block-wide merge; every thread gets the row's (max, sum). */
__device__ void block_merge(float &m, float &s, float *sm, float *ss)
{
    for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    m = lane < n_warps ? sm[lane] : -INFINITY;
    s = lane < n_warps ? ss[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

__global__ void log_softmax_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t cols, int vec)
{
    __shared__ float sm[32], ss[32];
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    if (vec) {
        const float4 *x4 = (const float4 *)xr;
        for (int64_t c = threadIdx.x; c < cols / 4; c += blockDim.x) {
            float4 v = x4[c];
            add(m, s, v.x);
            add(m, s, v.y);
            add(m, s, v.z);
            add(m, s, v.w);
        }
    } else {
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) add(m, s, xr[c]);
    }
    block_merge(m, s, sm, ss);
    float shift = m + logf(s);
    if (vec) {
        const float4 *x4 = (const float4 *)xr;
        float4 *y4 = (float4 *)yr;
        for (int64_t c = threadIdx.x; c < cols / 4; c += blockDim.x) {
            float4 v = x4[c];
            v.x = v.x - shift;
            v.y = v.y - shift;
            v.z = v.z - shift;
            v.w = v.w - shift;
            y4[c] = v;
        }
    } else {
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] - shift;
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    if (rows > INT32_MAX) return -1;
    if (rows == 0) return 0;
    int vec = cols % 4 == 0 && (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    log_softmax_kernel<<<(unsigned)rows, 256>>>(x, y, cols, vec);
    return launch_status();
}
