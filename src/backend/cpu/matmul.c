/* matmul.c — the linear layer in torch.nn.Linear layout, forward and both backward products.
 *
 * out[m, n] = in[m, k] weight[n, k]^T (+ bias): the three products are one strided cpu_gemm
 * each (gemm.c): x W^T reads W as a transposed view, din = dY W reads W as is, and
 * dW += dY^T X reads dY as a transposed view; dW and dbias are accumulated (+=) as ops.h says.
 * The bias column sums are split by columns over threads so that no two threads write one
 * element and the order of the sum does not depend on the thread count. The residual form
 * copies the residual stream into out and accumulates into it, as the model did before it
 * had the op. The fused forms (RMSNorm then product, SwiGLU then residual product) run the
 * two reference ops one after the other. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_matmul_fwd(rl_ctx *ctx, void *out, const void *in, const void *weight, const void *bias,
                      int m, int n, int k, int accumulate)
{
    float *y = out;
    cpu_gemm_args g = {.m = m, .n = n, .k = k, .a = in, .a_rs = k, .a_cs = 1,
                       .b = weight, .b_rs = 1, .b_cs = k, .c = y, .ldc = n, .accumulate = accumulate};
    if (cpu_gemm(&g, cpu_threads(ctx, (double)m * n * k / 32), &ctx->err)) return -1;
    if (bias) {
        const float *b = bias;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)m * n)) schedule(static)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) y[(size_t)i * n + j] += b[j];
    }
    return 0;
}

int rl_cpu_matmul_residual_fwd(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight,
                               int m, int n, int k)
{
    if (out != residual) memcpy(out, residual, (size_t)m * n * sizeof(float));
    return rl_cpu_matmul_fwd(ctx, out, in, weight, NULL, m, n, k, 1);
}

/* dbias[j] += sum_i dout[i, j]; threads own blocks of columns. */
static void column_sums(float *dbias, const float *dout, int m, int n, int n_threads)
{
    enum { BLOCK = 64 };
    int n_blocks = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (int blk = 0; blk < n_blocks; blk++) {
        int j0 = blk * BLOCK, width = n - j0 < BLOCK ? n - j0 : BLOCK;
        double acc[BLOCK] = {0};
        for (int i = 0; i < m; i++) {
            const float *row = dout + (size_t)i * n + j0;
            for (int j = 0; j < width; j++) acc[j] += row[j];
        }
        for (int j = 0; j < width; j++) dbias[j0 + j] += (float)acc[j];
    }
}

int rl_cpu_matmul_bwd(rl_ctx *ctx, void *din, float *dweight, float *dbias, const void *dout,
                      const void *in, const void *weight, int m, int n, int k, int accumulate_din)
{
    int n_threads = cpu_threads(ctx, (double)m * n * k / 32);
    if (din) {
        cpu_gemm_args g = {.m = m, .n = k, .k = n, .a = dout, .a_rs = n, .a_cs = 1,
                           .b = weight, .b_rs = k, .b_cs = 1, .c = din, .ldc = k,
                           .accumulate = accumulate_din};
        if (cpu_gemm(&g, n_threads, &ctx->err)) return -1;
    }
    if (dweight) {
        cpu_gemm_args g = {.m = n, .n = k, .k = m, .a = dout, .a_rs = 1, .a_cs = n,
                           .b = in, .b_rs = k, .b_cs = 1, .c = dweight, .ldc = k, .accumulate = 1};
        if (cpu_gemm(&g, n_threads, &ctx->err)) return -1;
    }
    if (dbias) column_sums(dbias, dout, m, n, n_threads);
    return 0;
}

int rl_cpu_rmsnorm_matmul_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *x, const void *norm_weight,
                              float eps, const void *weight, const void *bias, int m, int n, int k)
{
    if (rl_cpu_rmsnorm_fwd(ctx, xn, rstd, x, norm_weight, m, k, eps)) return -1;
    return rl_cpu_matmul_fwd(ctx, out, xn, weight, bias, m, n, k, 0);
}

int rl_cpu_swiglu_matmul_residual_fwd(rl_ctx *ctx, void *out, void *act, const void *residual, const void *gate,
                                      const void *up, int in_stride, const void *weight, int m, int n, int k)
{
    if (rl_cpu_swiglu_fwd(ctx, act, gate, up, m, k, in_stride)) return -1;
    return rl_cpu_matmul_residual_fwd(ctx, out, residual, act, weight, m, n, k);
}

int rl_cpu_matmul_residual_rmsnorm_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *residual,
                                       const void *in, const void *weight, const void *norm_weight, float eps, int m,
                                       int n, int k)
{
    if (rl_cpu_matmul_residual_fwd(ctx, out, residual, in, weight, m, n, k)) return -1;
    return rl_cpu_rmsnorm_fwd(ctx, xn, rstd, out, norm_weight, m, n, eps);
}
