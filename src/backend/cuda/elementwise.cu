/* elementwise.cu — y += x (act dtype: bf16 or fp32), x *= s (fp32), the sum of squares used by gradient
 * clipping, and the ordered sum of per-block partials (rl_cuda_add_partials, common.cuh).
 *
 * Both sums are deterministic. sumsq: a fixed grid of blocks each reduces a grid-stride slice in
 * double, writes one partial, and a single block adds the partials in a fixed order; the result
 * is copied to the host. add_partials: a block takes 32 columns; its 8 warps' lane c sums the
 * partials p = w, w + 8, ... of column c in order, and the 8 sums are added in warp order. */
#include "backend/cuda/common.cuh"

#define SUMSQ_BLOCKS 1024
#define SUMSQ_THREADS 256
#define PARTS_WARPS 8

template <typename T>
__global__ void add_kernel(T *y, const T *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = rl_fromf<T>(rl_tof(y[i]) + rl_tof(x[i]));
}

template <typename T>
static int add(rl_ctx *ctx, void *y, const void *x, size_t n)
{
    add_kernel<T><<<rl_cuda_blocks(n, 256, 65535), 256, 0, rl_cuda_st(ctx)->stream>>>((T *)y, (const T *)x, n);
    LAUNCH_CHECK();
    return 0;
}

__global__ void scale_kernel(float *x, float s, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

__global__ void sumsq_partial_kernel(double *partial, const float *x, size_t n)
{
    double acc = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double v = x[i];
        acc += v * v;
    }
    acc = rl_block_sum_d(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void sumsq_final_kernel(double *out, const double *partial, int n_partial)
{
    double acc = 0.0;
    for (int i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = rl_block_sum_d(acc);
    if (threadIdx.x == 0) *out = acc;
}

extern "C" int rl_cuda_add(rl_ctx *ctx, void *y, const void *x, size_t n)
{
    if (n == 0) return 0;
    return RL_ACT_CALL(ctx, add, (ctx, y, x, n));
}

extern "C" int rl_cuda_scale(rl_ctx *ctx, float *x, float s, size_t n)
{
    if (n == 0) return 0;
    scale_kernel<<<rl_cuda_blocks(n, 256, 65535), 256, 0, rl_cuda_st(ctx)->stream>>>(x, s, n);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_sumsq(rl_ctx *ctx, double *out, const float *x, size_t n)
{
    rl_cuda_state *st = rl_cuda_st(ctx);
    unsigned blocks = rl_cuda_blocks(n, SUMSQ_THREADS, SUMSQ_BLOCKS);
    double *partial = st->reduce + 1;
    sumsq_partial_kernel<<<blocks, SUMSQ_THREADS, 0, st->stream>>>(partial, x, n);
    LAUNCH_CHECK();
    sumsq_final_kernel<<<1, SUMSQ_THREADS, 0, st->stream>>>(st->reduce, partial, (int)blocks);
    LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpyAsync(st->reduce_host, st->reduce, sizeof(double), cudaMemcpyDeviceToHost, st->stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
    *out = st->reduce_host[0];
    return 0;
}

__global__ void add_partials_kernel(float *out, const float *partials, int n_parts, int n)
{
    __shared__ float sums[PARTS_WARPS][32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, c = blockIdx.x * 32 + lane;
    float acc = 0.0f;
    if (c < n)
        for (int p = w; p < n_parts; p += PARTS_WARPS) acc += partials[(size_t)p * n + c];
    sums[w][lane] = acc;
    __syncthreads();
    if (w == 0 && c < n) {
        float total = sums[0][lane];
        for (int i = 1; i < PARTS_WARPS; i++) total += sums[i][lane];
        out[c] += total;
    }
}

int rl_cuda_add_partials(rl_ctx *ctx, float *out, const float *partials, int n_parts, int n)
{
    if (n == 0 || n_parts == 0) return 0;
    add_partials_kernel<<<(unsigned)((n + 31) / 32), 32 * PARTS_WARPS, 0, rl_cuda_st(ctx)->stream>>>(out, partials,
                                                                                                    n_parts, n);
    LAUNCH_CHECK();
    return 0;
}
