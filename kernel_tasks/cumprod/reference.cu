/* reference.cu — cumprod: inclusive prefix product along each row, float32.
 *
 * Baseline: one 512-thread block per row. The row is walked in chunks of 512 elements, one per
 * thread (coalesced); each chunk is scanned with warp shuffles (Hillis-Steele within a warp),
 * the warp totals are scanned by the first warp through shared memory, and a running carry
 * joins the chunks. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

#define SCAN_THREADS 512

__device__ __forceinline__ float combine(float a, float b) { return a * b; }

__global__ void cumprod_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t cols)
{
    __shared__ float warp_total[SCAN_THREADS / 32];
    __shared__ float carry_s;
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float carry = 1.0f;
    for (int64_t base = 0; base < cols; base += SCAN_THREADS) {
        int64_t c = base + threadIdx.x;
        float v = c < cols ? xr[c] : 1.0f;
        for (int o = 1; o < 32; o <<= 1) {
            float u = __shfl_up_sync(0xffffffffu, v, o);
            if (lane >= o) v = combine(u, v);
        }
        if (lane == 31) warp_total[warp] = v;
        __syncthreads();
        if (warp == 0) {
            float t = lane < SCAN_THREADS / 32 ? warp_total[lane] : 1.0f;
            for (int o = 1; o < 32; o <<= 1) {
                float u = __shfl_up_sync(0xffffffffu, t, o);
                if (lane >= o) t = combine(u, t);
            }
            if (lane < SCAN_THREADS / 32) warp_total[lane] = t;
        }
        __syncthreads();
        if (warp > 0) v = combine(warp_total[warp - 1], v);
        v = combine(carry, v);
        if (c < cols) yr[c] = v;
        if (threadIdx.x == SCAN_THREADS - 1) carry_s = v;
        __syncthreads();
        carry = carry_s;
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t rows = args->dims[0], cols = args->dims[1];
    if (rows > INT32_MAX) return -1;
    if (rows == 0) return 0;
    cumprod_kernel<<<(unsigned)rows, SCAN_THREADS>>>((const float *)args->inputs[0], (float *)args->outputs[0], cols);
    return launch_status();
}
