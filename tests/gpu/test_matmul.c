/* test_matmul.c — CUDA linear layer through cuBLASLt, and the few-row product kernel (at most
 * 8 rows) (forward with bias and accumulate; the residual form, apart and in place; backward
 * din with accumulate, fp32 dweight and dbias accumulation) against the CPU op, at
 * shapes that are not multiples of tile sizes. Tolerances: bf16 outputs 2e-2, fp32 weight and
 * bias gradients 1e-3 (fp32 accumulation in a different order). */
#include "gpu_util.h"

static void run(int m, int n, int k, int with_bias, int accumulate, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    float *in = gu_rand(&g, (size_t)m * k, -1, 1, seed), *w = gu_rand(&g, (size_t)n * k, -0.5f, 0.5f, seed + 1);
    float *bias = with_bias ? gu_rand(&g, n, -1, 1, seed + 2) : NULL;
    float *out = gu_rand(&g, (size_t)m * n, -1, 1, seed + 3);
    void *d_in = gu_up_bf16(&g, in, (size_t)m * k), *d_w = gu_up_bf16(&g, w, (size_t)n * k);
    void *d_out = accumulate ? gu_up_bf16(&g, out, (size_t)m * n) : gu_nan_bf16(&g, (size_t)m * n);
    GU_OK(&g, rl_matmul_fwd(&g.gpu, d_out, d_in, d_w, bias ? gu_up_bf16(&g, bias, n) : NULL, m, n, k, accumulate));
    GU_CPU_OK(&g, rl_cpu_matmul_fwd(&g.cpu, out, in, w, bias, m, n, k, accumulate));
    char what[96];
    snprintf(what, sizeof what, "matmul_fwd %dx%dx%d bias%d acc%d", m, n, k, with_bias, accumulate);
    gu_check(what, gu_get_bf16(&g, d_out, (size_t)m * n), out, (size_t)m * n, 2e-2);

    float *dout = gu_rand(&g, (size_t)m * n, -1, 1, seed + 4);
    float *din = gu_rand(&g, (size_t)m * k, -1, 1, seed + 5);
    float *dw = gu_rand(&g, (size_t)n * k, -1, 1, seed + 6), *db = gu_rand(&g, n, -1, 1, seed + 7);
    void *d_din = accumulate ? gu_up_bf16(&g, din, (size_t)m * k) : gu_nan_bf16(&g, (size_t)m * k);
    float *d_dw = gu_up_f32(&g, dw, (size_t)n * k), *d_db = with_bias ? gu_up_f32(&g, db, n) : NULL;
    GU_OK(&g, rl_matmul_bwd(&g.gpu, d_din, d_dw, d_db, gu_up_bf16(&g, dout, (size_t)m * n), d_in, d_w, m, n, k,
                            accumulate));
    GU_CPU_OK(&g, rl_cpu_matmul_bwd(&g.cpu, din, dw, with_bias ? db : NULL, dout, in, w, m, n, k, accumulate));
    snprintf(what, sizeof what, "matmul_bwd din %dx%dx%d acc%d", m, n, k, accumulate);
    gu_check(what, gu_get_bf16(&g, d_din, (size_t)m * k), din, (size_t)m * k, 2e-2);
    snprintf(what, sizeof what, "matmul_bwd dweight %dx%dx%d (fp32)", m, n, k);
    gu_check(what, gu_get_f32(&g, d_dw, (size_t)n * k), dw, (size_t)n * k, 1e-3);
    if (with_bias) {
        snprintf(what, sizeof what, "matmul_bwd dbias %dx%dx%d (fp32)", m, n, k);
        gu_check(what, gu_get_f32(&g, d_db, n), db, n, 1e-3);
    }
    gu_end(&g);
}

Test(gpu_matmul, tiny_odd) { run(3, 5, 7, 1, 0, 81); }
Test(gpu_matmul, odd_accumulate) { run(37, 75, 129, 1, 1, 82); }
Test(gpu_matmul, medium) { run(257, 1000, 512, 0, 0, 83); }
Test(gpu_matmul, tall) { run(2048, 384, 256, 1, 1, 84); }
Test(gpu_matmul, few_rows)
{
    run(1, 1000, 1024, 1, 0, 89);
    run(4, 517, 3072, 0, 1, 90);
    run(8, 64, 64, 1, 1, 94);
}

Test(gpu_matmul, only_dweight)
{
    /* din and dbias NULL: only the weight gradient is formed (LoRA-free frozen input). */
    gu g;
    gu_begin(&g);
    int m = 64, n = 48, k = 80;
    float *in = gu_rand(&g, (size_t)m * k, -1, 1, 85), *dout = gu_rand(&g, (size_t)m * n, -1, 1, 86);
    float *w = gu_rand(&g, (size_t)n * k, -1, 1, 87), *dw = gu_rand(&g, (size_t)n * k, -1, 1, 88);
    float *d_dw = gu_up_f32(&g, dw, (size_t)n * k);
    GU_OK(&g, rl_matmul_bwd(&g.gpu, NULL, d_dw, NULL, gu_up_bf16(&g, dout, (size_t)m * n),
                            gu_up_bf16(&g, in, (size_t)m * k), gu_up_bf16(&g, w, (size_t)n * k), m, n, k, 0));
    GU_CPU_OK(&g, rl_cpu_matmul_bwd(&g.cpu, NULL, dw, NULL, dout, in, w, m, n, k, 0));
    gu_check("matmul_bwd dweight only (fp32)", gu_get_f32(&g, d_dw, (size_t)n * k), dw, (size_t)n * k, 1e-3);
    gu_end(&g);
}

Test(gpu_matmul, bad_shape)
{
    gu g;
    gu_begin(&g);
    cr_assert_eq(rl_matmul_fwd(&g.gpu, NULL, NULL, NULL, NULL, -1, 4, 4, 0), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_matmul_fwd: m -1 is negative");
    gu_end(&g);
}

/* out = residual + in W^T, into a separate buffer (residual left alone) and in place. */
static void run_residual(int m, int n, int k)
{
    gu g;
    gu_begin(&g);
    float *in = gu_rand(&g, (size_t)m * k, -1, 1, 91), *w = gu_rand(&g, (size_t)n * k, -0.5f, 0.5f, 92);
    float *res = gu_rand(&g, (size_t)m * n, -2, 2, 93), *out = gu_host(&g, (size_t)m * n * 4);
    void *d_in = gu_up_bf16(&g, in, (size_t)m * k), *d_w = gu_up_bf16(&g, w, (size_t)n * k);
    void *d_res = gu_up_bf16(&g, res, (size_t)m * n), *d_out = gu_nan_bf16(&g, (size_t)m * n);
    GU_OK(&g, rl_matmul_residual_fwd(&g.gpu, d_out, d_res, d_in, d_w, m, n, k));
    GU_CPU_OK(&g, rl_cpu_matmul_residual_fwd(&g.cpu, out, res, in, w, m, n, k));
    char what[96];
    snprintf(what, sizeof what, "matmul_residual_fwd %dx%dx%d apart", m, n, k);
    gu_check(what, gu_get_bf16(&g, d_out, (size_t)m * n), out, (size_t)m * n, 2e-2);
    float *res_after = gu_get_bf16(&g, d_res, (size_t)m * n);
    cr_assert(!memcmp(res_after, res, (size_t)m * n * 4), "the residual input was written");
    GU_OK(&g, rl_matmul_residual_fwd(&g.gpu, d_res, d_res, d_in, d_w, m, n, k));
    GU_CPU_OK(&g, rl_cpu_matmul_residual_fwd(&g.cpu, res, res, in, w, m, n, k));
    snprintf(what, sizeof what, "matmul_residual_fwd %dx%dx%d in place", m, n, k);
    gu_check(what, gu_get_bf16(&g, d_res, (size_t)m * n), res, (size_t)m * n, 2e-2);
    gu_end(&g);
}

Test(gpu_matmul, residual_apart_and_in_place)
{
    run_residual(37, 96, 200);
    run_residual(1, 96, 200);
    run_residual(6, 1000, 2048);
}
