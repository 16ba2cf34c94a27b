/* test_policy_loss.c — CUDA fused clipped policy loss (dlogp and the four stats) against the
 * CPU op, with masked tokens, both advantage signs, clipped ratios, with and without the k3 KL
 * term. Tolerances: dlogp 1e-5 (both compute in double), stats 1e-9 relative. */
#include "gpu_util.h"

static void run(int n, float kl_beta, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    float *logp = gu_rand(&g, n, -3, -0.1f, seed), *old = gu_rand(&g, n, -3, -0.1f, seed + 1);
    for (int i = 0; i < n; i++) old[i] = logp[i] + (old[i] + 1.55f) * 0.3f; /* ratios about 0.6 .. 1.6 */
    float *ref = gu_rand(&g, n, -3, -0.1f, seed + 2), *adv = gu_rand(&g, n, -2, 2, seed + 3);
    float *w = gu_rand(&g, n, 0.01f, 0.1f, seed + 4);
    for (int i = 0; i < n; i += 7) w[i] = 0.0f;
    float *d_dlogp = gu_nan_f32(&g, n);
    rl_policy_loss_params pp = {.clip_low = 0.2f, .clip_high = 0.28f, .kl_beta = kl_beta};
    double st[RL_LOSS_N_STATS], st_ref[RL_LOSS_N_STATS];
    GU_OK(&g, rl_policy_loss(&g.gpu, d_dlogp, st, gu_up_f32(&g, logp, n), gu_up_f32(&g, old, n),
                             kl_beta != 0 ? gu_up_f32(&g, ref, n) : NULL, gu_up_f32(&g, adv, n), gu_up_f32(&g, w, n), n,
                             &pp));
    float *dlogp = gu_host(&g, n * sizeof(float));
    GU_CPU_OK(&g, rl_cpu_policy_loss(&g.cpu, dlogp, st_ref, logp, old, kl_beta != 0 ? ref : NULL, adv, w, n, &pp));
    char what[96];
    snprintf(what, sizeof what, "policy_loss dlogp n%d beta%g", n, kl_beta);
    gu_check(what, gu_get_f32(&g, d_dlogp, n), dlogp, n, 1e-5);
    for (int s = 0; s < RL_LOSS_N_STATS; s++) {
        double err = fabs(st[s] - st_ref[s]) / (fabs(st_ref[s]) + 1e-12);
        fprintf(stderr, "[err] policy_loss stat %d: %.10g vs %.10g (rel %.3g)\n", s, st[s], st_ref[s], err);
        cr_assert(err < 1e-9, "stat %d: %.12g vs %.12g", s, st[s], st_ref[s]);
    }
    cr_assert(st_ref[RL_LOSS_STAT_CLIPPED] > 0.01, "the test data should clip some tokens");
    gu_end(&g);
}

Test(gpu_policy_loss, no_kl) { run(1000, 0.0f, 71); }
Test(gpu_policy_loss, kl_large) { run(300007, 0.04f, 72); }

Test(gpu_policy_loss, kl_needs_reference)
{
    gu g;
    gu_begin(&g);
    rl_policy_loss_params pp = {.clip_low = 0.2f, .clip_high = 0.2f, .kl_beta = 0.1f};
    double st[RL_LOSS_N_STATS];
    cr_assert_eq(rl_policy_loss(&g.gpu, NULL, st, NULL, NULL, NULL, NULL, NULL, 4, &pp), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_policy_loss: ref_logp is NULL, but kl_beta 0.1 needs it");
    gu_end(&g);
}
