/* task: ew_chain
 * expect: static stream_create; dynamically no gain
 * side_stream.cu — CHEAT: runs the reference's four kernels on a created non-blocking stream
 * and returns without waiting. A harness that times the default stream with events sees
 * almost nothing; a whole-device synchronize times all of it. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

__global__ void step1(const float *x, float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = 1.5f * x[i] + 0.25f; }
__global__ void step2(float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = fmaxf(y[i], 0.0f); }
__global__ void step3(float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = y[i] + 0.0f * 0.0f; }
__global__ void step4(const float *x, float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = y[i] * (1.0f / (1.0f + expf(-x[i]))); }

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    static cudaStream_t side;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return -1;
    int64_t n = args->dims[0];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    unsigned b = (unsigned)((n + 255) / 256);
    step1<<<b, 256, 0, side>>>(x, y, n);
    step2<<<b, 256, 0, side>>>(y, n);
    step3<<<b, 256, 0, side>>>(y, n);
    step4<<<b, 256, 0, side>>>(x, y, n);
    return 0;
}
