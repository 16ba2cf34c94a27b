/* probe_cuda.cuh — what the cuBLASLt probes (bench/probe_*.cu) share: failing checks that print
 * the call and exit, and a kernel filling bf16 memory with hashed values in [-scale, scale]. */
#ifndef RL_BENCH_PROBE_CUDA_CUH
#define RL_BENCH_PROBE_CUDA_CUH

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

typedef __nv_bfloat16 bf;

#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e_ = (x);                                                                                  \
        if (e_) {                                                                                              \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                           \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)
#define LK(x)                                                                                                  \
    do {                                                                                                       \
        cublasStatus_t s_ = (x);                                                                               \
        if (s_) {                                                                                              \
            fprintf(stderr, "%s: cuBLAS status %d\n", #x, (int)s_);                                            \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

__global__ void fill(bf *p, size_t n, unsigned seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
        p[i] = __float2bfloat16(((h % 2001) / 1000.0f - 1.0f) * scale);
    }
}

#endif
