/* elementwise.c — y += x, x *= s, and the double-precision sum of squares (gradient norm). */
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_add(rl_ctx *ctx, void *y, const void *x, size_t n)
{
    float *ys = y;
    const float *xs = x;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n)) schedule(static)
    for (size_t i = 0; i < n; i++) ys[i] += xs[i];
    return 0;
}

int rl_cpu_scale(rl_ctx *ctx, float *x, float s, size_t n)
{
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n)) schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
    return 0;
}

int rl_cpu_sumsq(rl_ctx *ctx, double *out, const float *x, size_t n)
{
    double sum = 0;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n)) schedule(static) reduction(+ : sum)
    for (size_t i = 0; i < n; i++) sum += (double)x[i] * x[i];
    *out = sum;
    return 0;
}
