/* policy_loss.c — the GRPO / DAPO / Dr. GRPO clipped surrogate with the k3 KL penalty, forward
 * and backward in one pass (formulas as TRL's GRPOTrainer computes them).
 *
 * Per token i with weight w != 0, with d = logp - old_logp, r = exp(d), A = advantage:
 *   s = min(r A, clip(r, 1 - clip_low, 1 + clip_high) A)
 *   kl = exp(ref - logp) - (ref - logp) - 1                          (k3, Schulman 2020)
 *   loss += w (-s + beta kl)
 * Gradient: dr/dlogp = r. The clipped branch is constant in logp, so d(-s)/dlogp = -A r where
 * the unclipped branch is the minimum, and 0 where clipping is active: r > 1 + clip_high with
 * A > 0, or r < 1 - clip_low with A < 0 (at ties the two branches agree; torch splits the
 * gradient of min between them and clamp passes it at the bounds, which again sums to -A r).
 * dkl/dlogp = 1 - exp(ref - logp). So dlogp = w (-A r [not clipped] + beta (1 - exp(ref - logp))).
 * Stats (double): loss; kl, clipped fraction (the tokens where clipping zeroes the gradient, as
 * TRL's clip_ratio) and ratio averaged with weights w over the tokens with w != 0. */
#include <math.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_policy_loss(rl_ctx *ctx, float *dlogp, double *stats, const float *logp,
                       const float *old_logp, const float *ref_logp, const float *advantage,
                       const float *weight, int n_tokens, const rl_policy_loss_params *params)
{
    float beta = params->kl_beta;
    double lo = 1.0 - params->clip_low, hi = 1.0 + params->clip_high;
    double loss = 0, kl_sum = 0, clip_sum = 0, ratio_sum = 0, w_sum = 0;
#pragma omp parallel for num_threads(cpu_threads(ctx, 16.0 * n_tokens)) schedule(static) \
    reduction(+ : loss, kl_sum, clip_sum, ratio_sum, w_sum)
    for (int i = 0; i < n_tokens; i++) {
        double w = weight[i];
        if (w == 0.0) {
            dlogp[i] = 0.0f;
            continue;
        }
        double a = advantage[i], r = exp((double)logp[i] - old_logp[i]);
        double rc = r < lo ? lo : r > hi ? hi : r;
        int clipped = (r > hi && a > 0) || (r < lo && a < 0);
        double s = fmin(r * a, rc * a), kl = 0, dkl = 0;
        if (beta != 0.0f) {
            double x = (double)ref_logp[i] - logp[i];
            kl = exp(x) - x - 1.0;
            dkl = 1.0 - exp(x);
        }
        loss += w * (-s + beta * kl);
        dlogp[i] = (float)(w * ((clipped ? 0.0 : -a * r) + beta * dkl));
        kl_sum += w * kl;
        clip_sum += w * clipped;
        ratio_sum += w * r;
        w_sum += w;
    }
    stats[RL_LOSS_STAT_LOSS] = loss;
    stats[RL_LOSS_STAT_KL] = w_sum != 0 ? kl_sum / w_sum : 0;
    stats[RL_LOSS_STAT_CLIPPED] = w_sum != 0 ? clip_sum / w_sum : 0;
    stats[RL_LOSS_STAT_RATIO] = w_sum != 0 ? ratio_sum / w_sum : 0;
    return 0;
}
