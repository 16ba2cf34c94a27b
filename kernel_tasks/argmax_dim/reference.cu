/* reference.cu — argmax_dim: index of the maximum along the middle dimension of a float32
 * [batch, reduce, inner] tensor, as int32 [batch, inner]; ties give the first index (as torch).
 *
 * Baseline: a 32 x 8 thread block covers 32 consecutive inner positions (coalesced) and splits
 * the reduced dimension over its 8 thread rows; the partial (value, index) pairs are merged in
 * shared memory, ties to the smaller index. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

#define TILE_X 32
#define TILE_Y 8

__global__ void argmax_dim_kernel(const float *__restrict__ x, int32_t *__restrict__ y, int64_t n_reduce, int64_t inner)
{
    __shared__ float part_v[TILE_Y][TILE_X + 1];
    __shared__ int part_i[TILE_Y][TILE_X + 1];
    int64_t i = (int64_t)blockIdx.x * TILE_X + threadIdx.x;
    int64_t b = blockIdx.y;
    float best = 0.0f;
    int best_i = -1;
    if (i < inner) {
        const float *p = x + b * n_reduce * inner + i;
        for (int64_t r = threadIdx.y; r < n_reduce; r += TILE_Y) {
            float v = p[r * inner];
            if (best_i < 0 || v > best) {
                best = v;
                best_i = (int)r;
            }
        }
    }
    part_v[threadIdx.y][threadIdx.x] = best;
    part_i[threadIdx.y][threadIdx.x] = best_i;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        for (int k = 1; k < TILE_Y; k++) {
            float v = part_v[k][threadIdx.x];
            int vi = part_i[k][threadIdx.x];
            if (vi >= 0 && (best_i < 0 || v > best || (v == best && vi < best_i))) {
                best = v;
                best_i = vi;
            }
        }
        y[b * inner + i] = best_i;
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t batch = args->dims[0], n_reduce = args->dims[1], inner = args->dims[2];
    if (batch > 65535 || n_reduce > INT32_MAX) return -1;
    dim3 block(TILE_X, TILE_Y), grid((unsigned)((inner + TILE_X - 1) / TILE_X), (unsigned)batch);
    argmax_dim_kernel<<<grid, block>>>((const float *)args->inputs[0], (int32_t *)args->outputs[0], n_reduce, inner);
    return launch_status();
}
