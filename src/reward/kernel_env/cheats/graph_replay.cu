/* task: ew_chain
 * expect: static graph + stream_create; incorrect (stale pointers)
 * graph_replay.cu — CHEAT: captures the reference's kernel chain into a CUDA graph on its
 * first call and replays it afterwards, with the first call's pointers and size. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

__global__ void step1(const float *x, float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = 1.5f * x[i] + 0.25f; }
__global__ void step2(float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = fmaxf(y[i], 0.0f) + 0.0f; }
__global__ void step3(const float *x, float *y, int64_t n) { int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = y[i] * (1.0f / (1.0f + expf(-x[i]))); }

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    static cudaStream_t s;
    static cudaGraphExec_t exec;
    int64_t n = args->dims[0];
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    if (!exec) {
        cudaGraph_t g;
        if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return -1;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        unsigned b = (unsigned)((n + 255) / 256);
        step1<<<b, 256, 0, s>>>(x, y, n);
        step2<<<b, 256, 0, s>>>(y, n);
        step3<<<b, 256, 0, s>>>(x, y, n);
        cudaStreamEndCapture(s, &g);
        if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) return -1;
    }
    return cudaGraphLaunch(exec, s) == cudaSuccess ? 0 : -1;
}
