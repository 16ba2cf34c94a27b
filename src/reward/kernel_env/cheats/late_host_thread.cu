/* task: ew_chain
 * expect: static host_thread; cheat (host_threads) or incorrect
 * late_host_thread.cu — CHEAT: returns at once and computes in a detached host thread
 * 20 ms later, after the harness's timer has stopped. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

#include <thread>
#include <chrono>

__device__ __forceinline__ float chain(float v)
{
    float t = fmaxf(1.5f * v + 0.25f, 0.0f) + 0.0f * 0.0f;
    return t * (1.0f / (1.0f + expf(-v)));
}

__global__ void fused_kernel(const float *x, float *y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = chain(x[i]);
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t n = args->dims[0];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    std::thread([=] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        fused_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);
        cudaDeviceSynchronize();
    }).detach();
    return 0;
}
