/* rmsnorm.cu — RMSNorm forward and backward, statistics in fp32.
 *
 * Forward: one block per row; sum of squares reduced over the block, rstd saved.
 * Backward, with r = rstd and g = dout * weight:
 *   dx = r * g - x * r^3 * mean(g * x)      dweight += sum over rows of dout * x * r
 * Each block handles a run of rows and keeps its dweight partial sums in shared memory (one
 * column per thread slot, no races), then adds them to dweight with one atomicAdd per column:
 * n_rows / ROWS_PER_BLOCK atomics per column instead of n_rows. */
#include "backend/cuda/common.cuh"

#define THREADS 256
#define ROWS_PER_BLOCK 32

__global__ void rmsnorm_fwd_kernel(bf16 *out, float *rstd, const bf16 *x, const bf16 *weight, int dim,
                                   float eps)
{
    size_t row = blockIdx.x;
    const bf16 *xr = x + row * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = rl_b2f(xr[i]);
        ss += v * v;
    }
    ss = rl_block_sum(ss);
    float r = rsqrtf(ss / dim + eps);
    if (threadIdx.x == 0) rstd[row] = r;
    bf16 *o = out + row * dim;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = rl_f2b(rl_b2f(xr[i]) * r * rl_b2f(weight[i]));
}

__global__ void rmsnorm_bwd_kernel(bf16 *dx, float *dweight, const bf16 *dout, const bf16 *x,
                                   const bf16 *weight, const float *rstd, int n_rows, int dim,
                                   int accumulate_dx)
{
    extern __shared__ float dw_part[];
    for (int i = threadIdx.x; i < dim; i += blockDim.x) dw_part[i] = 0.0f;
    int row0 = blockIdx.x * ROWS_PER_BLOCK;
    int row1 = min(row0 + ROWS_PER_BLOCK, n_rows);
    for (int row = row0; row < row1; row++) {
        const bf16 *xr = x + (size_t)row * dim, *gr = dout + (size_t)row * dim;
        float r = rstd[row];
        float dot = 0.0f;
        for (int i = threadIdx.x; i < dim; i += blockDim.x) dot += rl_b2f(gr[i]) * rl_b2f(weight[i]) * rl_b2f(xr[i]);
        dot = rl_block_sum(dot);
        float c = dot / dim * r * r * r;
        bf16 *dxr = dx + (size_t)row * dim;
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            float xv = rl_b2f(xr[i]), gv = rl_b2f(gr[i]);
            float d = r * gv * rl_b2f(weight[i]) - xv * c;
            if (accumulate_dx) d += rl_b2f(dxr[i]);
            dxr[i] = rl_f2b(d);
            dw_part[i] += gv * xv * r;
        }
    }
    for (int i = threadIdx.x; i < dim; i += blockDim.x) atomicAdd(dweight + i, dw_part[i]);
}

extern "C" int rl_cuda_rmsnorm_fwd(rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight,
                                   int n_rows, int dim, float eps)
{
    ARG_CHECK(n_rows >= 0 && dim > 0, "rl_cuda_rmsnorm_fwd: bad shape n_rows=%d dim=%d", n_rows, dim);
    if (n_rows == 0) return 0;
    rmsnorm_fwd_kernel<<<n_rows, THREADS, 0, rl_cuda_st(ctx)->stream>>>((bf16 *)out, rstd, (const bf16 *)x,
                                                                     (const bf16 *)weight, dim, eps);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_rmsnorm_bwd(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x,
                                   const void *weight, const float *rstd, int n_rows, int dim,
                                   int accumulate_dx)
{
    ARG_CHECK(n_rows >= 0 && dim > 0, "rl_cuda_rmsnorm_bwd: bad shape n_rows=%d dim=%d", n_rows, dim);
    size_t smem = (size_t)dim * sizeof(float);
    ARG_CHECK(smem <= 200 * 1024, "rl_cuda_rmsnorm_bwd: dim=%d is larger than this kernel supports (51200)", dim);
    if (n_rows == 0) return 0;
    if (smem > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(rmsnorm_bwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int blocks = (n_rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    rmsnorm_bwd_kernel<<<blocks, THREADS, smem, rl_cuda_st(ctx)->stream>>>(
        (bf16 *)dx, dweight, (const bf16 *)dout, (const bf16 *)x, (const bf16 *)weight, rstd, n_rows, dim,
        accumulate_dx);
    LAUNCH_CHECK();
    return 0;
}
