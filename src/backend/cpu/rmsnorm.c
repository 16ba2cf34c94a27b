/* rmsnorm.c — RMSNorm forward and backward, as transformers' Qwen3RMSNorm computes it in fp32:
 * rstd = 1 / sqrt(mean(x^2) + eps), out = (x * rstd) * weight.
 *
 * Backward of y = x r w with r = (mean(x^2) + eps)^-1/2 per row:
 *   dx = r (w dy) - x r^3 / dim * sum_j (w dy x)_j,   dweight += sum_rows dy x r.
 * Rows are independent for dx (threads split rows); dweight is a sum over rows, so threads
 * split its columns instead (each owns a block, walks all rows; deterministic, no races).
 * The sums of squares and the row dot product are accumulated in double. */
#include <math.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_rmsnorm_fwd(rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight,
                       int n_rows, int dim, float eps)
{
    const float *xs = x, *w = weight;
    float *y = out;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_rows * dim)) schedule(static)
    for (int r = 0; r < n_rows; r++) {
        const float *xr = xs + (size_t)r * dim;
        float *yr = y + (size_t)r * dim;
        double ss = 0;
        for (int j = 0; j < dim; j++) ss += (double)xr[j] * xr[j];
        float rs = 1.0f / sqrtf((float)(ss / dim) + eps);
        rstd[r] = rs;
        for (int j = 0; j < dim; j++) yr[j] = (xr[j] * rs) * w[j];
    }
    return 0;
}

int rl_cpu_rmsnorm_bwd(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x,
                       const void *weight, const float *rstd, int n_rows, int dim,
                       int accumulate_dx)
{
    enum { BLOCK = 64 };
    const float *dy = dout, *xs = x, *w = weight;
    int n_threads = cpu_threads(ctx, (double)n_rows * dim);
    if (dx) {
        float *dxs = dx;
#pragma omp parallel for num_threads(n_threads) schedule(static)
        for (int r = 0; r < n_rows; r++) {
            const float *xr = xs + (size_t)r * dim, *dyr = dy + (size_t)r * dim;
            float *dxr = dxs + (size_t)r * dim;
            double dot = 0;
            for (int j = 0; j < dim; j++) dot += (double)w[j] * dyr[j] * xr[j];
            float rs = rstd[r];
            float coef = (float)(dot * rs * rs * rs / dim);
            for (int j = 0; j < dim; j++) {
                float g = rs * w[j] * dyr[j] - xr[j] * coef;
                dxr[j] = accumulate_dx ? dxr[j] + g : g;
            }
        }
    }
    if (dweight) {
        int n_blocks = (dim + BLOCK - 1) / BLOCK;
#pragma omp parallel for num_threads(n_threads) schedule(static)
        for (int blk = 0; blk < n_blocks; blk++) {
            int j0 = blk * BLOCK, width = dim - j0 < BLOCK ? dim - j0 : BLOCK;
            double acc[BLOCK] = {0};
            for (int r = 0; r < n_rows; r++) {
                const float *xr = xs + (size_t)r * dim + j0, *dyr = dy + (size_t)r * dim + j0;
                float rs = rstd[r];
                for (int j = 0; j < width; j++) acc[j] += dyr[j] * (xr[j] * rs);
            }
            for (int j = 0; j < width; j++) dweight[j0 + j] += (float)acc[j];
        }
    }
    return 0;
}
