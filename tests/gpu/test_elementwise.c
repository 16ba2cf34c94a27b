/* test_elementwise.c — CUDA add (bf16), scale (fp32) and sumsq (double) against the CPU ops.
 * Tolerances: add 1e-2 (one bf16 rounding), scale exact to 1e-7, sumsq 1e-10 relative. */
#include "gpu_util.h"

static void run(size_t n, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    float *y = gu_rand(&g, n, -1, 1, seed), *x = gu_rand(&g, n, -1, 1, seed + 1);
    void *d_y = gu_up_bf16(&g, y, n);
    GU_OK(&g, rl_add(&g.gpu, d_y, gu_up_bf16(&g, x, n), n));
    GU_CPU_OK(&g, rl_cpu_add(&g.cpu, y, x, n));
    char what[96];
    snprintf(what, sizeof what, "add n%zu", n);
    gu_check(what, gu_get_bf16(&g, d_y, n), y, n, 1e-2);

    float *f = gu_rand(&g, n, -3, 3, seed + 2);
    float *d_f = gu_up_f32(&g, f, n);
    GU_OK(&g, rl_scale(&g.gpu, d_f, 0.37f, n));
    GU_CPU_OK(&g, rl_cpu_scale(&g.cpu, f, 0.37f, n));
    snprintf(what, sizeof what, "scale n%zu (fp32)", n);
    gu_check(what, gu_get_f32(&g, d_f, n), f, n, 1e-7);

    double got = -1, ref = -2;
    GU_OK(&g, rl_sumsq(&g.gpu, &got, d_f, n));
    GU_CPU_OK(&g, rl_cpu_sumsq(&g.cpu, &ref, f, n));
    double err = fabs(got - ref) / fabs(ref);
    fprintf(stderr, "[err] sumsq n%zu relative err %.3g\n", n, err);
    cr_assert(err < 1e-10, "sumsq n=%zu: %.17g vs %.17g (rel err %.3g)", n, got, ref, err);
    gu_end(&g);
}

Test(gpu_elementwise, tiny) { run(7, 51); }
Test(gpu_elementwise, odd) { run(100003, 52); }
Test(gpu_elementwise, large) { run((size_t)5 << 20, 53); }
