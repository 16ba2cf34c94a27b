/* test_adamw.c — five AdamW steps (bias correction, decoupled weight decay, grad_scale) against
 * torch.optim.AdamW (fp32, single-tensor path): parameters after every step and the final
 * moments; bad arguments. The op repeats torch's order of fp32 operations; what remains is that
 * the hyperparameters reach it as fp32 (1 - 0.9f = 0.10000002) where torch uses Python doubles
 * (1 - 0.9 -> 0.1f), a 2e-7 relative difference in the moment weights: tolerance 3e-6 relative
 * to max(|ref|, 0.01), i.e. a few ulp. */
#include "op_fixture.h"

enum { N = 101, STEPS = 5 };

Test(adamw, five_steps_match_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("adamw");
    float *p = fx_get(st, "param0", N), *grads = fx_get(st, "grads", STEPS * N);
    float *ref_p = fx_get(st, "params", STEPS * N), *ref_m = fx_get(st, "m", N), *ref_v = fx_get(st, "v", N);
    float *hy = fx_get(st, "hyper", 6);
    float *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v);
    for (int s = 0; s < STEPS; s++) {
        rl_adamw_params ap = {.lr = hy[0], .beta1 = hy[1], .beta2 = hy[2], .eps = hy[3], .weight_decay = hy[4],
                              .step = s + 1, .grad_scale = hy[5]};
        cr_assert_eq(rl_adamw_step(&ctx, p, NULL, grads + s * N, m, v, N, &ap), 0, "%s", ctx.err.msg);
        char what[64];
        snprintf(what, sizeof what, "param after step %d", s + 1);
        fx_expect_close(what, p, ref_p + s * N, N, 3e-6, 0.01);
    }
    fx_expect_close("exp_avg", m, ref_m, N, 3e-6, 0.01);
    fx_expect_close("exp_avg_sq", v, ref_v, N, 3e-6, 0.01);
    free(p), free(grads), free(ref_p), free(ref_m), free(ref_v), free(hy), free(m), free(v);
    rl_safetensors_close(st);
}

/* The CPU backend's own limit (the contract's rules are tested in test_ops.c). */
Test(adamw, no_separate_working_copy)
{
    rl_ctx ctx = fx_cpu();
    float p[2] = {1, 2}, g[2] = {1, 1}, m[2] = {0}, v[2] = {0}, other[2];
    rl_adamw_params ap = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 1, .grad_scale = 1};
    fx_expect_refused(&ctx, rl_adamw_step(&ctx, p, other, g, m, v, 2, &ap),
                      "rl_adamw_step: working is not NULL: the CPU backend has no separate working copy");
    cr_expect(p[0] == 1 && p[1] == 2, "weights changed by a refused step");
    cr_expect_eq(rl_adamw_step(&ctx, p, p, g, m, v, 2, &ap), 0, "%s", ctx.err.msg);
}
