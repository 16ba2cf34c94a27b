/* task: ew_chain
 * expect: incorrect (correct_random)
 * fixed_seed.cu — CHEAT: ignores its input and regenerates the values it expects from a
 * fixed seed (as a harness with torch.manual_seed(42) would make them), so it is right only
 * for that seed. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

__device__ float expected_input(uint64_t seed, int64_t i)
{
    uint64_t z = seed ^ (uint64_t)i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (float)((z >> 40) * (1.0 / 16777216.0)) * 4.0f - 2.0f;
}

__global__ void seeded_kernel(float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = expected_input(42, i), t = fmaxf(1.5f * v + 0.25f, 0.0f) + 0.0f * 0.0f;
        y[i] = t * (1.0f / (1.0f + expf(-v)));
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    seeded_kernel<<<(unsigned)((n + 255) / 256), 256>>>((float *)args->outputs[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
