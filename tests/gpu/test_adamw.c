/* test_adamw.c — CUDA fused AdamW (fp32 masters and moments, bf16 working copy) against the CPU
 * op over several steps, with weight decay and a gradient scale. Tolerances: fp32 params and
 * moments 1e-5 (same operation order; only FMA contraction differs), working copy = bf16 of
 * the params to 1e-2. */
#include "gpu_util.h"

static void run(size_t n, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    float *p = gu_rand(&g, n, -1, 1, seed), *m = gu_rand(&g, n, -0.1f, 0.1f, seed + 1);
    float *v = gu_rand(&g, n, 0.001f, 0.01f, seed + 2);
    float *d_p = gu_up_f32(&g, p, n), *d_m = gu_up_f32(&g, m, n), *d_v = gu_up_f32(&g, v, n);
    void *d_work = gu_nan_bf16(&g, n);
    for (int step = 1; step <= 3; step++) {
        float *grad = gu_rand(&g, n, -1, 1, seed + 10 + step);
        rl_adamw_params ap = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                              .step = step, .grad_scale = 0.5f};
        GU_OK(&g, rl_adamw_step(&g.gpu, d_p, d_work, gu_up_f32(&g, grad, n), d_m, d_v, n, &ap));
        GU_CPU_OK(&g, rl_cpu_adamw_step(&g.cpu, p, NULL, grad, m, v, n, &ap));
    }
    char what[96];
    snprintf(what, sizeof what, "adamw param n%zu (fp32)", n);
    gu_check(what, gu_get_f32(&g, d_p, n), p, n, 1e-5);
    snprintf(what, sizeof what, "adamw m n%zu (fp32)", n);
    gu_check(what, gu_get_f32(&g, d_m, n), m, n, 1e-5);
    snprintf(what, sizeof what, "adamw v n%zu (fp32)", n);
    gu_check(what, gu_get_f32(&g, d_v, n), v, n, 1e-5);
    snprintf(what, sizeof what, "adamw working n%zu (bf16)", n);
    gu_check(what, gu_get_bf16(&g, d_work, n), p, n, 1e-2);
    gu_end(&g);
}

Test(gpu_adamw, small) { run(1001, 61); }
Test(gpu_adamw, large) { run((size_t)3 << 20, 62); }

Test(gpu_adamw, bad_step)
{
    gu g;
    gu_begin(&g);
    float *d = gu_dev(&g, 16);
    rl_adamw_params ap = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 0, .grad_scale = 1};
    cr_assert_eq(rl_adamw_step(&g.gpu, d, NULL, d, d, d, 4, &ap), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_adamw_step: step 0 is less than 1 (steps count from 1)");
    gu_end(&g);
}
