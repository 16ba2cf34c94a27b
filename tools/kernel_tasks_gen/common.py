"""Shared code fragments for the task generator (CUDA snippets and prompt pieces)."""

HEAD = '''#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"
'''

SM = '''
/* Multiprocessors of the current device, read once: grid-stride launches size to it. */
static int sm_count(void)
{
    static int n_sm;
    if (n_sm <= 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev);
        if (n_sm <= 0) n_sm = 1;
    }
    return n_sm;
}
'''

LAUNCH_OK = '''
static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }
'''

BLOCK_REDUCE = '''
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide sum (blockDim.x a multiple of 32); every thread gets the result. scratch: 32
 * floats of shared memory, reusable by the next call thanks to the leading barrier. */
__device__ float block_sum(float v, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_sum(lane < n_warps ? scratch[lane] : 0.0f);
}

__device__ float block_max(float v, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_max(lane < n_warps ? scratch[lane] : -INFINITY);
}
'''

CUBLAS = '''
/* One cuBLAS handle for the process, in pedantic math mode: fp32 products stay fp32 (no TF32
 * or other reduced-precision paths), which is what the task's tolerance assumes. */
static cublasHandle_t blas(void)
{
    static cublasHandle_t handle;
    if (!handle) {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return NULL;
        cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
    }
    cublasSetStream(handle, 0);
    return handle;
}
'''

WORKSPACE = '''
/* Device scratch kept across calls, grown on demand (cudaFree synchronizes, so growing is
 * safe while earlier work is in flight). */
static float *workspace(size_t n_floats)
{
    static float *buf;
    static size_t cap;
    if (n_floats > cap) {
        if (buf) cudaFree(buf);
        buf = NULL;
        cap = 0;
        if (cudaMalloc((void **)&buf, n_floats * sizeof(float)) != cudaSuccess) return NULL;
        cap = n_floats;
    }
    return buf;
}
'''

# Partial sums per block then one block for the total: deterministic, two launches.
MEAN_REDUCE = '''
#define PARTIAL_BLOCKS_MAX 1024

/* Sum of term(i) over [0, n) per block; one partial per block. */
__global__ void partial_sum_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                   int64_t n, float *__restrict__ partial)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        acc += term(a[i], b[i]);
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* One block: total of the partials times scale, into out[0]. */
__global__ void finish_sum_kernel(const float *__restrict__ partial, int n_partial, float scale,
                                  float *__restrict__ out)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) out[0] = acc * scale;
}
'''
