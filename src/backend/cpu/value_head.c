/* value_head.c — a value model's scalar head (ops.h): one dot product per row forward; the
 * backward spreads each row's gradient over the weight and sums the rows into the weight's.
 *
 * fp32 throughout (the CPU act dtype). The weight gradient is a sum over rows: each thread adds
 * a contiguous slice of the dimensions over every row in order, so the result does not depend
 * on the thread count. */
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_value_head_fwd(rl_ctx *ctx, float *values, const void *hidden, const void *weight, const void *bias,
                          int n_rows, int dim)
{
    const float *h = hidden, *w = weight, *b = bias;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_rows * dim)) schedule(static)
    for (int r = 0; r < n_rows; r++) {
        double acc = 0;
        for (int d = 0; d < dim; d++) acc += (double)h[(size_t)r * dim + d] * w[d];
        values[r] = (float)(acc + (b ? b[0] : 0.0f));
    }
    return 0;
}

int rl_cpu_value_head_bwd(rl_ctx *ctx, void *dhidden, float *dweight, float *dbias, const float *dvalues,
                          const void *hidden, const void *weight, int n_rows, int dim)
{
    const float *h = hidden, *w = weight;
    float *dh = dhidden;
    int threads = cpu_threads(ctx, (double)n_rows * dim);
    if (dh) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int r = 0; r < n_rows; r++)
            for (int d = 0; d < dim; d++) dh[(size_t)r * dim + d] = dvalues[r] * w[d];
    }
    if (dweight) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int d = 0; d < dim; d++) {
            double acc = 0;
            for (int r = 0; r < n_rows; r++) acc += (double)dvalues[r] * h[(size_t)r * dim + d];
            dweight[d] += (float)acc;
        }
    }
    if (dbias) {
        double acc = 0;
        for (int r = 0; r < n_rows; r++) acc += dvalues[r];
        dbias[0] += (float)acc;
    }
    return 0;
}
