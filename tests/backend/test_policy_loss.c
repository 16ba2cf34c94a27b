/* test_policy_loss.c — the GRPO/DAPO clipped surrogate with k3 KL: hand-computed tokens
 * (clipped above and below, positive and negative advantage, KL on and off, a masked token),
 * TRL's formulas evaluated by torch autograd on 41 random tokens, and finite differences of
 * the loss. Tolerances: 1e-6 (the op computes in double from fp32 inputs; results are stored
 * as fp32 dlogp and double stats). */
#include "op_fixture.h"

/* Five tokens with weight and a sixth, masked (weight 0, NaN log-probs that must be ignored).
 * clip range [0.8, 1.28]; ratios r = 1.5, 1.5, 0.5, 0.5, 1; ref - logp = log 2, except 0 on
 * the last, so kl = 2 - log 2 - 1 and dkl/dlogp = 1 - 2 = -1 there. */
static void hand_case(float beta, double *want_loss, float want_d[6], double want_stats[4])
{
    double kl = 1.0 - log(2.0), w[5] = {0.25, 0.25, 0.25, 0.25, 0.5};
    /* -s per token: r = 1.5, A = 1 clipped to 1.28; r = 1.5, A = -1 unclipped 1.5;
     * r = 0.5, A = 2 unclipped -1; r = 0.5, A = -2 clipped to 0.8 * -2; r = 1, A = 0.5. */
    double neg_s[5] = {-1.28, 1.5, -1.0, 1.6, -0.5};
    /* d(-s)/dlogp = -A r where not clipped, else 0 */
    double dsur[5] = {0.0, 1.5, -1.0, 0.0, -0.5};
    double kls[5] = {kl, kl, kl, kl, 0}, dkls[5] = {-1, -1, -1, -1, 0};
    *want_loss = 0;
    for (int i = 0; i < 5; i++) {
        *want_loss += w[i] * (neg_s[i] + beta * kls[i]);
        want_d[i] = (float)(w[i] * (dsur[i] + beta * dkls[i]));
    }
    want_d[5] = 0;
    want_stats[0] = *want_loss;
    want_stats[1] = beta != 0 ? (4 * 0.25 * kl) / 1.5 : 0;
    want_stats[2] = 0.5 / 1.5;
    want_stats[3] = (0.25 * 1.5 * 2 + 0.25 * 0.5 * 2 + 0.5 * 1.0) / 1.5;
}

static void run_hand(float beta)
{
    rl_ctx ctx = fx_cpu();
    float old[6] = {-1.0f, -2.0f, -0.5f, -1.5f, -0.7f, -1.0f};
    float ratio[6] = {1.5f, 1.5f, 0.5f, 0.5f, 1.0f, 1.0f};
    float adv[6] = {1, -1, 2, -2, 0.5f, 3}, weight[6] = {0.25f, 0.25f, 0.25f, 0.25f, 0.5f, 0};
    float logp[6], ref[6], d[6];
    for (int i = 0; i < 6; i++) {
        logp[i] = old[i] + logf(ratio[i]);
        ref[i] = logp[i] + (i < 4 ? logf(2.0f) : 0.0f);
    }
    logp[5] = NAN;
    ref[5] = NAN;
    tu_poison(d, 6);
    double stats[RL_LOSS_N_STATS], want_loss, want_stats[4];
    float want_d[6];
    hand_case(beta, &want_loss, want_d, want_stats);
    rl_policy_loss_params pp = {.clip_low = 0.2f, .clip_high = 0.28f, .kl_beta = beta};
    cr_assert_eq(rl_policy_loss(&ctx, d, stats, logp, old, ref, adv, weight, 6, &pp), 0, "%s", ctx.err.msg);
    for (int i = 0; i < 6; i++)
        cr_expect(fabsf(d[i] - want_d[i]) <= 1e-6f, "beta %g: dlogp[%d] = %.8g, want %.8g", beta, i, d[i], want_d[i]);
    const char *names[4] = {"loss", "kl", "clipped", "ratio"};
    for (int s = 0; s < 4; s++)
        cr_expect(fabs(stats[s] - want_stats[s]) <= 1e-6, "beta %g: %s = %.9g, want %.9g", beta, names[s], stats[s],
                  want_stats[s]);
}

Test(policy_loss, hand_computed_kl_off) { run_hand(0.0f); }
Test(policy_loss, hand_computed_kl_on) { run_hand(0.1f); }

enum { N = 41 };

typedef struct fd_state {
    rl_ctx *ctx;
    float *logp, *old, *ref, *adv, *weight, *d;
    rl_policy_loss_params pp;
} fd_state;

static double fd_loss(void *user)
{
    fd_state *s = user;
    double stats[RL_LOSS_N_STATS];
    cr_assert_eq(rl_policy_loss(s->ctx, s->d, stats, s->logp, s->old, s->ref, s->adv, s->weight, N, &s->pp), 0);
    return stats[RL_LOSS_STAT_LOSS];
}

Test(policy_loss, matches_trl_formulas_in_torch_and_finite_differences)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("policy_loss");
    float *logp = fx_get(st, "logp", N), *old = fx_get(st, "old_logp", N), *ref = fx_get(st, "ref_logp", N);
    float *adv = fx_get(st, "advantage", N), *weight = fx_get(st, "weight", N), *ref_d = fx_get(st, "dlogp", N);
    float *ref_stats = fx_get(st, "stats", 4), *hy = fx_get(st, "hyper", 3);
    float *d = fx_alloc_poisoned(N), *scratch = malloc(N * sizeof *scratch);
    rl_policy_loss_params pp = {.clip_low = hy[0], .clip_high = hy[1], .kl_beta = hy[2]};
    double stats[RL_LOSS_N_STATS];
    cr_assert_eq(rl_policy_loss(&ctx, d, stats, logp, old, ref, adv, weight, N, &pp), 0, "%s", ctx.err.msg);
    fx_expect_close("dlogp", d, ref_d, N, 1e-5, 1e-3);
    float got[4] = {(float)stats[0], (float)stats[1], (float)stats[2], (float)stats[3]};
    fx_expect_close("stats (loss, kl, clipped, ratio)", got, ref_stats, 4, 1e-5, 1e-3);
    cr_expect(stats[RL_LOSS_STAT_CLIPPED] > 0, "the fixture should clip some tokens");
    fd_state s = {&ctx, logp, old, ref, adv, weight, scratch, pp};
    fx_check_fd("policy loss dlogp", logp, N, d, fd_loss, &s, 1e-4f, 1e-3);
    free(logp), free(old), free(ref), free(adv), free(weight), free(ref_d), free(ref_stats), free(hy), free(d);
    free(scratch);
    rl_safetensors_close(st);
}
