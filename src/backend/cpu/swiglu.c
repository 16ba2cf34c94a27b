/* swiglu.c — out = silu(gate) * up, silu(g) = g sigmoid(g), and its backward:
 *   dup = dout silu(g),  dgate = dout up sigmoid(g) (1 + g (1 - sigmoid(g))).
 * gate/up (and dgate/dup) rows are in_stride elements apart, so the two halves of one fused
 * gate_up buffer work without a copy. */
#include <math.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

static inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

int rl_cpu_swiglu_fwd(rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows, int dim,
                      int in_stride)
{
    const float *g = gate, *u = up;
    float *y = out;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_rows * dim)) schedule(static)
    for (int r = 0; r < n_rows; r++) {
        const float *gr = g + (size_t)r * in_stride, *ur = u + (size_t)r * in_stride;
        float *yr = y + (size_t)r * dim;
        for (int j = 0; j < dim; j++) yr[j] = gr[j] * sigmoid(gr[j]) * ur[j];
    }
    return 0;
}

int rl_cpu_swiglu_bwd(rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate,
                      const void *up, int n_rows, int dim, int in_stride)
{
    const float *dy = dout, *g = gate, *u = up;
    float *dg = dgate, *du = dup;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_rows * dim)) schedule(static)
    for (int r = 0; r < n_rows; r++) {
        size_t in = (size_t)r * in_stride, o = (size_t)r * dim;
        for (int j = 0; j < dim; j++) {
            float gj = g[in + j], s = sigmoid(gj), d = dy[o + j];
            float uj = u[in + j];
            du[in + j] = d * gj * s;
            dg[in + j] = d * uj * s * (1.0f + gj * (1.0f - s));
        }
    }
    return 0;
}
