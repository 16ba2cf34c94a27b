/* test_grpo_math.c — group advantages and the loss-normalisation weights of GRPO, DAPO and
 * Dr. GRPO, against values worked out by hand, and the loss they give through rl_policy_loss. */
#include <string.h>

#include "backend/ops.h"
#include "train/grpo_math.h"
#include "test_util.h"

Test(grpo_math, advantages)
{
    /* group 0: rewards 1,0,0,1: mean 0.5, unbiased std sqrt(1/3) = 0.57735 */
    /* group 1: all equal: zero advantage; group 2: 3,1,2,2: mean 2, std sqrt(2/3) */
    float r[12] = {1, 0, 0, 1, 0.7f, 0.7f, 0.7f, 0.7f, 3, 1, 2, 2}, a[12];
    tu_poison(a, 12);
    rl_grpo_advantages(r, 3, 4, 1, a);
    double s0 = sqrt(1.0 / 3.0) + 1e-4, s2 = sqrt(2.0 / 3.0) + 1e-4;
    double want[12] = {0.5 / s0, -0.5 / s0, -0.5 / s0, 0.5 / s0, 0, 0, 0, 0, 1 / s2, -1 / s2, 0, 0};
    for (int i = 0; i < 12; i++) cr_assert(fabs(a[i] - want[i]) < 1e-6, "std: a[%d] = %g, want %g", i, a[i], want[i]);
    for (int i = 4; i < 8; i++) cr_assert(a[i] == 0.0f, "equal group must give exactly 0");
    rl_grpo_advantages(r, 3, 4, 0, a); /* Dr. GRPO: no std scaling */
    double want_nostd[12] = {0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, 1, -1, 0, 0};
    for (int i = 0; i < 12; i++) cr_assert(fabs(a[i] - want_nostd[i]) < 1e-6, "no std: a[%d] = %g", i, a[i]);
}

Test(grpo_math, weights)
{
    int lens[4] = {2, 4, 0, 6};
    float w[4];
    rl_grpo_weights(RL_NORM_SEQUENCE, lens, 4, 8, w);
    cr_assert(w[0] == 1.0f / 8 && w[1] == 1.0f / 16 && w[2] == 0 && fabsf(w[3] - 1.0f / 24) < 1e-9);
    rl_grpo_weights(RL_NORM_TOKEN, lens, 4, 8, w);
    cr_assert(w[0] == 1.0f / 12 && w[1] == 1.0f / 12 && w[2] == 0 && w[3] == 1.0f / 12);
    rl_grpo_weights(RL_NORM_DR_GRPO, lens, 4, 8, w);
    cr_assert(w[0] == 1.0f / 32 && w[1] == 1.0f / 32 && w[2] == 0 && w[3] == 1.0f / 32);
    rl_loss_norm n;
    rl_err err;
    cr_assert_eq(rl_loss_norm_parse("dr_grpo", &n, &err), 0);
    cr_assert_eq(n, RL_NORM_DR_GRPO);
    cr_assert_eq(rl_loss_norm_parse("dapo", &n, &err), -1);
    cr_assert(strstr(err.msg, "'dapo'"), "%s", err.msg);
}

/* On-policy (logp == old_logp, ratio 1, no clipping, no KL) the loss is -sum_i w_i |o_i| A_i
 * over sequences: for the three normalisations, with 2 sequences of 1 and 3 tokens and
 * advantages +1 and -1, that is -(1/2 - 1/2) = 0 (sequence), -(1 - 3)/4 = 0.5 (token) and
 * -(1 - 3)/(2 * 4) = 0.25 (dr_grpo with max_len 4). */
Test(grpo_math, loss_through_policy_loss)
{
    rl_ctx ctx;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    int lens[2] = {1, 3};
    float logp[4] = {-1, -2, -0.5f, -3}, adv[4] = {1, -1, -1, -1}, dlogp[4], wt[4];
    rl_loss_norm norms[3] = {RL_NORM_SEQUENCE, RL_NORM_TOKEN, RL_NORM_DR_GRPO};
    double want[3] = {0.0, 0.5, 0.25};
    for (int k = 0; k < 3; k++) {
        float w[2];
        rl_grpo_weights(norms[k], lens, 2, 4, w);
        wt[0] = w[0];
        wt[1] = wt[2] = wt[3] = w[1];
        rl_policy_loss_params p = {0.2f, 0.28f, 0.0f};
        double stats[RL_LOSS_N_STATS];
        tu_poison(dlogp, 4);
        cr_assert_eq(rl_policy_loss(&ctx, dlogp, stats, logp, logp, NULL, adv, wt, 4, &p), 0, "%s", ctx.err.msg);
        cr_assert(fabs(stats[RL_LOSS_STAT_LOSS] - want[k]) < 1e-7, "%s: loss %g, want %g",
                  rl_loss_norm_name(norms[k]), stats[RL_LOSS_STAT_LOSS], want[k]);
        for (int i = 0; i < 4; i++) cr_assert(fabsf(dlogp[i] + wt[i] * adv[i]) < 1e-7, "dlogp[%d] = %g", i, dlogp[i]);
    }
    rl_ctx_free(&ctx);
}

/* RLOO: r_i minus the mean of the group's other rewards. Group 0: 1,0,0,1 -> 1 - 1/3 = 2/3 and
 * 0 - 2/3; group 1: 3,1,2,2 -> 3 - 5/3, 1 - 7/3, 2 - 2. */
Test(grpo_math, rloo_advantages)
{
    float r[8] = {1, 0, 0, 1, 3, 1, 2, 2}, a[8];
    tu_poison(a, 8);
    rl_rloo_advantages(r, 2, 4, a);
    double want[8] = {2.0 / 3, -2.0 / 3, -2.0 / 3, 2.0 / 3, 4.0 / 3, -4.0 / 3, 0, 0};
    for (int i = 0; i < 8; i++) cr_assert(fabs(a[i] - want[i]) < 1e-6, "a[%d] = %g, want %g", i, a[i], want[i]);
}

/* REINFORCE++ on two sequences (prompt tokens marked 0): per-token rewards -beta (logp - ref),
 * the score added at the last completion token, returns-to-go, then normalised over the five
 * completion tokens (unbiased std). Worked by hand: beta 0.5, logp - ref = 0.2, -0.4 | 0.6, 0, 0.2,
 * scores 1 and -1: rewards -0.1, 0.2 + 1 | -0.3, 0, -0.1 - 1; returns 1.1, 1.2 | -1.4, -1.1, -1.1. */
Test(grpo_math, reinforce_pp_advantages)
{
    int32_t cu[3] = {0, 3, 7};
    unsigned char comp[7] = {0, 1, 1, 0, 1, 1, 1};
    float logp[7] = {0, -1.0f, -2.0f, 0, -0.5f, -1.5f, -0.3f}, ref[7] = {0, -1.2f, -1.6f, 0, -1.1f, -1.5f, -0.5f};
    float scores[2] = {1, -1}, adv[7];
    tu_poison(adv, 7);
    rl_reinforce_pp_advantages(logp, ref, comp, cu, 2, scores, 0.5f, adv);
    double ret[5] = {1.1, 1.2, -1.4, -1.1, -1.1}, mean = 0, var = 0;
    for (int i = 0; i < 5; i++) mean += ret[i] / 5;
    for (int i = 0; i < 5; i++) var += (ret[i] - mean) * (ret[i] - mean) / 4;
    int at[5] = {1, 2, 4, 5, 6};
    for (int i = 0; i < 5; i++) {
        double want = (ret[i] - mean) / sqrt(var + 1e-8);
        cr_assert(fabs(adv[at[i]] - want) < 1e-5, "token %d: %g, want %g", at[i], adv[at[i]], want);
    }
    cr_assert(adv[0] == 0 && adv[3] == 0, "prompt tokens carry no advantage");
}

/* The same batch held by two ranks (one sequence each): returns per rank, the sums added, then
 * each rank normalises with the batch's statistics: the advantages of the whole batch. */
Test(grpo_math, reinforce_pp_over_two_ranks_is_the_whole_batch)
{
    int32_t cu[3] = {0, 3, 7}, cu0[2] = {0, 3}, cu1[2] = {0, 4};
    unsigned char comp[7] = {0, 1, 1, 0, 1, 1, 1};
    float logp[7] = {0, -1.0f, -2.0f, 0, -0.5f, -1.5f, -0.3f}, ref[7] = {0, -1.2f, -1.6f, 0, -1.1f, -1.5f, -0.5f};
    float scores[2] = {1, -1}, whole[7], split[7];
    rl_reinforce_pp_advantages(logp, ref, comp, cu, 2, scores, 0.5f, whole);
    double a[3], b[3];
    rl_reinforce_pp_returns(logp, ref, comp, cu0, 1, scores, 0.5f, split, a);
    rl_reinforce_pp_returns(logp + 3, ref + 3, comp + 3, cu1, 1, scores + 1, 0.5f, split + 3, b);
    cr_assert(a[0] == 2 && b[0] == 3, "completion tokens per rank: %g, %g", a[0], b[0]);
    for (int k = 0; k < 3; k++) a[k] += b[k];
    rl_reinforce_pp_normalise(comp, 3, a, split);
    rl_reinforce_pp_normalise(comp + 3, 4, a, split + 3);
    for (int i = 0; i < 7; i++)
        cr_assert(fabs(split[i] - whole[i]) < 1e-6, "token %d: %g, whole batch %g", i, split[i], whole[i]);
}
