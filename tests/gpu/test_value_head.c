/* test_value_head.c — CUDA value head (ops.h: value_head_fwd / _bwd) against the CPU op on
 * bf16-rounded random inputs, with and without the bias. Tolerances: fp32 values 1e-2 (a bf16
 * dot product of dim terms accumulated in fp32), bf16 dhidden 2e-2, fp32 dweight / dbias 1e-2
 * relative to their scale. */
#include "gpu_util.h"

static void run(int n_rows, int dim, int with_bias, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    size_t n = (size_t)n_rows * dim;
    float *hidden = gu_rand(&g, n, -2, 2, seed), *w = gu_rand(&g, (size_t)dim, -1, 1, seed + 1);
    float *b = gu_rand(&g, 1, -1, 1, seed + 2);
    void *d_hidden = gu_up_bf16(&g, hidden, n), *d_w = gu_up_bf16(&g, w, (size_t)dim);
    void *d_b = with_bias ? gu_up_bf16(&g, b, 1) : NULL;
    float *d_values = gu_nan_f32(&g, (size_t)n_rows);
    GU_OK(&g, rl_value_head_fwd(&g.gpu, d_values, d_hidden, d_w, d_b, n_rows, dim));
    float *values = gu_host(&g, (size_t)n_rows * sizeof(float));
    GU_CPU_OK(&g, rl_cpu_value_head_fwd(&g.cpu, values, hidden, w, with_bias ? b : NULL, n_rows, dim));
    char what[96];
    snprintf(what, sizeof what, "value_head_fwd R%d D%d bias%d", n_rows, dim, with_bias);
    gu_check(what, gu_get_f32(&g, d_values, (size_t)n_rows), values, (size_t)n_rows, 1e-2);

    float *dv = gu_rand(&g, (size_t)n_rows, -1, 1, seed + 3);
    float *dw0 = gu_rand(&g, (size_t)dim, -1, 1, seed + 4), db0 = 0.5f; /* gradients add */
    float *d_dw = gu_up_f32(&g, dw0, (size_t)dim), *d_db = gu_up_f32(&g, &db0, 1);
    void *d_dh = gu_nan_bf16(&g, n);
    GU_OK(&g, rl_value_head_bwd(&g.gpu, d_dh, d_dw, d_db, gu_up_f32(&g, dv, (size_t)n_rows), d_hidden, d_w, n_rows,
                                dim));
    float *dh = gu_host(&g, n * sizeof(float)), *dw = gu_copy(&g, dw0, (size_t)dim), db = db0;
    GU_CPU_OK(&g, rl_cpu_value_head_bwd(&g.cpu, dh, dw, &db, dv, hidden, w, n_rows, dim));
    snprintf(what, sizeof what, "value_head_bwd dhidden R%d D%d", n_rows, dim);
    gu_check(what, gu_get_bf16(&g, d_dh, n), dh, n, 2e-2);
    snprintf(what, sizeof what, "value_head_bwd dweight R%d D%d", n_rows, dim);
    gu_check(what, gu_get_f32(&g, d_dw, (size_t)dim), dw, (size_t)dim, 1e-2);
    snprintf(what, sizeof what, "value_head_bwd dbias R%d", n_rows);
    gu_check(what, gu_get_f32(&g, d_db, 1), &db, 1, 1e-2);
    gu_end(&g);
}

Test(gpu_value_head, odd) { run(37, 101, 1, 51); }
Test(gpu_value_head, no_bias) { run(333, 1024, 0, 52); }
Test(gpu_value_head, many_rows) { run(4099, 1024, 1, 53); }
