/* reference.cu — avgpool2d: 3x3 average pooling, stride 1, padding 1, count_include_pad, NCHW fp32.
 *
 * Baseline: one thread per output element, consecutive threads on consecutive output columns
 * (coalesced stores, neighbouring loads), grid-stride. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

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

static int launch_status(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

__global__ void avgpool2d_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t planes, int64_t h, int64_t w,
                              int64_t oh, int64_t ow)
{
    int64_t total = planes * oh * ow, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
        int64_t ox = o % ow, oy = (o / ow) % oh, plane = o / (ow * oh);
        const float *xp = x + plane * h * w;
        float s = 0.0f;
        for (int64_t dy = 0; dy < 3; dy++) {
            int64_t iy = oy - 1 + dy;
            if (iy < 0 || iy >= h) continue;
            for (int64_t dx = 0; dx < 3; dx++) {
                int64_t ix = ox - 1 + dx;
                if (ix < 0 || ix >= w) continue;
                s += xp[iy * w + ix];
            }
        }
        y[o] = s / 9.0f;
    }
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int64_t planes = args->dims[0] * args->dims[1], h = args->dims[2], w = args->dims[3];
    int64_t oh = h, ow = w;
    int64_t total = planes * oh * ow;
    if (total == 0) return 0;
    int64_t blocks = (total + 255) / 256, cap = (int64_t)sm_count() * 16;
    avgpool2d_kernel<<<(int)(blocks < cap ? blocks : cap), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], planes, h, w, oh, ow);
    return launch_status();
}
