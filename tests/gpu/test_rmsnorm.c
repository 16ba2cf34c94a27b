/* test_rmsnorm.c — CUDA RMSNorm forward (out, rstd) and backward (dx overwrite and add forms,
 * dweight accumulation) against the CPU op, and the backward's dweight bit-identical over two
 * identical calls. Tolerances: bf16 outputs 2e-2, fp32 rstd 1e-4,
 * fp32 dweight 2e-3 (sums over rows of bf16-rounded products). */
#include "gpu_util.h"

static void run(int n_rows, int dim, int accumulate_dx, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    size_t n = (size_t)n_rows * dim;
    float *x = gu_rand(&g, n, -2, 2, seed), *w = gu_rand(&g, dim, 0.5f, 1.5f, seed + 1);
    void *d_x = gu_up_bf16(&g, x, n), *d_w = gu_up_bf16(&g, w, dim);
    void *d_out = gu_nan_bf16(&g, n);
    float *d_rstd = gu_nan_f32(&g, n_rows);
    GU_OK(&g, rl_rmsnorm_fwd(&g.gpu, d_out, d_rstd, d_x, d_w, n_rows, dim, 1e-6f));
    float *out = gu_host(&g, n * sizeof(float)), *rstd = gu_host(&g, n_rows * sizeof(float));
    GU_CPU_OK(&g, rl_cpu_rmsnorm_fwd(&g.cpu, out, rstd, x, w, n_rows, dim, 1e-6f));
    char what[96];
    snprintf(what, sizeof what, "rmsnorm_fwd out R%d D%d", n_rows, dim);
    gu_check(what, gu_get_bf16(&g, d_out, n), out, n, 2e-2);
    snprintf(what, sizeof what, "rmsnorm_fwd rstd R%d D%d (fp32)", n_rows, dim);
    gu_check(what, gu_get_f32(&g, d_rstd, n_rows), rstd, n_rows, 1e-4);

    float *dout = gu_rand(&g, n, -1, 1, seed + 2);
    float *dx = gu_rand(&g, n, -1, 1, seed + 3), *dw = gu_rand(&g, dim, -1, 1, seed + 4);
    void *d_dx = accumulate_dx ? gu_up_bf16(&g, dx, n) : gu_nan_bf16(&g, n);
    float *d_dw = gu_up_f32(&g, dw, dim);
    void *d_dout = gu_up_bf16(&g, dout, n);
    float *d_rstd_cpu = gu_up_f32(&g, rstd, n_rows), *d_dw2 = gu_up_f32(&g, dw, dim);
    GU_OK(&g, rl_rmsnorm_bwd(&g.gpu, d_dx, d_dw, d_dout, d_x, d_w, d_rstd_cpu, n_rows, dim, accumulate_dx));
    /* the same call again: the same dweight bits (partials added in block order, no atomics) */
    void *d_dx2 = accumulate_dx ? gu_up_bf16(&g, dx, n) : gu_nan_bf16(&g, n);
    GU_OK(&g, rl_rmsnorm_bwd(&g.gpu, d_dx2, d_dw2, d_dout, d_x, d_w, d_rstd_cpu, n_rows, dim, accumulate_dx));
    float *dw_a = gu_get_f32(&g, d_dw, dim), *dw_b = gu_get_f32(&g, d_dw2, dim);
    cr_expect(!memcmp(dw_a, dw_b, (size_t)dim * sizeof(float)), "rmsnorm_bwd R%d D%d: dweight differs between two "
              "identical calls", n_rows, dim);
    GU_CPU_OK(&g, rl_cpu_rmsnorm_bwd(&g.cpu, dx, dw, dout, x, w, rstd, n_rows, dim, accumulate_dx));
    snprintf(what, sizeof what, "rmsnorm_bwd dx R%d D%d acc%d", n_rows, dim, accumulate_dx);
    gu_check(what, gu_get_bf16(&g, d_dx, n), dx, n, 3e-2);
    snprintf(what, sizeof what, "rmsnorm_bwd dweight R%d D%d (fp32)", n_rows, dim);
    gu_check(what, gu_get_f32(&g, d_dw, dim), dw, dim, 2e-3);
    gu_end(&g);
}

Test(gpu_rmsnorm, one_row) { run(1, 64, 0, 21); }
Test(gpu_rmsnorm, odd_dim_add) { run(37, 1000, 1, 22); }
Test(gpu_rmsnorm, many_rows) { run(300, 2048, 0, 23); }
Test(gpu_rmsnorm, wide) { run(65, 15000, 1, 24); }
/* The warp-per-row path: head-dim rows (q/k norms), more rows than the backward grid has warps
 * (each warp strides over several rows), and a dim that leaves some lanes without a chunk. */
Test(gpu_rmsnorm, head_dim_rows) { run(5003, 128, 0, 25); }
Test(gpu_rmsnorm, hidden_rows_add) { run(4099, 1024, 1, 26); }
Test(gpu_rmsnorm, partial_lanes) { run(77, 1544, 1, 27); }

/* The CUDA backward's own limit (its partial sums of a row live in shared memory); the buffers
 * are never read, the launcher refuses first. */
Test(gpu_rmsnorm, too_wide_is_refused)
{
    gu g;
    gu_begin(&g);
    void *d = gu_dev(&g, 256);
    cr_assert_eq(rl_rmsnorm_bwd(&g.gpu, d, d, d, d, d, d, 4, 60000, 0), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_rmsnorm_bwd: dim 60000 is more than 51200, the most the CUDA RMSNorm backward takes");
    gu_end(&g);
}
