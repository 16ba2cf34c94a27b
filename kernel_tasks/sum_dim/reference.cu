/* reference.cu — sum_dim: sum of a float32 [batch, reduce, inner] tensor over its middle
 * dimension, giving [batch, inner].
 *
 * Baseline: a 32 x 8 thread block covers 32 consecutive inner positions (coalesced 128-byte
 * rows) and splits the reduced dimension over its 8 thread rows; the 8 partial results are
 * combined in shared memory. One block per (32 inner positions, batch). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

#define TILE_X 32
#define TILE_Y 8

__global__ void sum_dim_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n_reduce, int64_t inner)
{
    __shared__ float part[TILE_Y][TILE_X + 1];
    int64_t i = (int64_t)blockIdx.x * TILE_X + threadIdx.x;
    int64_t b = blockIdx.y;
    float acc = 0.0f;
    if (i < inner) {
        const float *p = x + b * n_reduce * inner + i;
#pragma unroll 4
        for (int64_t r = threadIdx.y; r < n_reduce; r += TILE_Y) {
            float v = p[r * inner];
            acc += v;
        }
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        acc = part[0][threadIdx.x];
        for (int k = 1; k < TILE_Y; k++) {
            float v = part[k][threadIdx.x];
            acc += v;
        }
        y[b * inner + i] = acc;
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t batch = args->dims[0], n_reduce = args->dims[1], inner = args->dims[2];
    if (batch > 65535) return -1;
    dim3 block(TILE_X, TILE_Y), grid((unsigned)((inner + TILE_X - 1) / TILE_X), (unsigned)batch);
    sum_dim_kernel<<<grid, block>>>((const float *)args->inputs[0], (float *)args->outputs[0], n_reduce, inner);
    return launch_status();
}
