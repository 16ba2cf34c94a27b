/* ppo_math.h — the arithmetic of PPO with a critic (Schulman et al. 2017; the RLHF form of
 * Ziegler et al. 2019 and Ouyang et al. 2022, as TRL's PPO trainer computes it), apart from any
 * model. Arrays run over one completion's tokens unless said otherwise.
 *
 * Rewards (InstructGPT): r_t = -kl_coef * (logp_t - ref_logp_t) at every completion token, plus
 * the scorer's reward at the last one. The scorer's reward may first be normalised by running
 * statistics over every step so far (rl_running_stats) and clipped to [-clip, clip].
 * Adaptive KL controller (Ziegler et al. 2019): e = clip(KL / target - 1, -0.2, 0.2),
 * kl_coef *= 1 + e * n_steps / horizon, after each step with that step's mean sequence KL.
 * GAE (Schulman et al. 2016): delta_t = r_t + gamma V_{t+1} - V_t (V after the last token is 0),
 * A_t = delta_t + gamma lam A_{t+1}; returns R_t = A_t + V_t.
 * Whitening: (x - mean) / sqrt(var + 1e-8) over every completion token of the batch, var
 * unbiased (TRL's masked_whiten).
 * Clipped value loss: V_clip = V_old + clip(V - V_old, -c, c);
 * loss = 0.5 sum_t w_t max((V - R)^2, (V_clip - R)^2), w carrying mask and normalisation.
 * KL estimators (Schulman 2020): k1 = logp - ref_logp, k3 = exp(ref - logp) - (ref - logp) - 1. */
#ifndef RL_TRAIN_PPO_MATH_H
#define RL_TRAIN_PPO_MATH_H

#include <stddef.h>

/* Running mean and variance of everything seen so far (Chan et al. 1979 merge of batches). */
typedef struct rl_running_stats {
    double count, mean, m2;
} rl_running_stats;

void rl_running_update(rl_running_stats *s, const float *x, int n);
/* Merges a batch given by its count, mean and sum of squared deviations from that mean (data
 * parallel: the batch of every rank). */
void rl_running_merge(rl_running_stats *s, double n, double mean, double m2);
/* Population std; 1 before anything was seen, and never below 1e-8. */
double rl_running_std(const rl_running_stats *s);

/* The adaptive (target > 0) or fixed (target == 0) KL coefficient. */
typedef struct rl_kl_ctl {
    double value, target, horizon;
} rl_kl_ctl;

void rl_kl_ctl_update(rl_kl_ctl *c, double kl, double n_steps);

/* rewards[t] = -kl_coef (logp[t] - ref_logp[t]), + score at t = n - 1. ref_logp may be NULL
 * (no KL term). */
void rl_ppo_token_rewards(const float *logp, const float *ref_logp, int n, float score, float kl_coef, float *rewards);

/* GAE over one completion: adv[t] and returns[t] (= adv + values). */
void rl_ppo_gae(const float *rewards, const float *values, int n, float gamma, float lam, float *adv, float *returns);

/* Whitens x[i] where mask[i] (mask NULL: all) over n entries; shift_mean 0 keeps the mean. The
 * unmasked entries are left as they are. Fewer than 2 entries: nothing changes. */
void rl_ppo_whiten(float *x, const unsigned char *mask, size_t n, int shift_mean);

/* The clipped value loss (weights w, tokens with w = 0 are ignored) and its gradient dv (d loss
 * / d values, written for every entry); *clip_frac = weighted fraction of tokens where the
 * clipped term is the larger. Returns the loss. */
double rl_ppo_value_loss(const float *values, const float *old_values, const float *returns, const float *w, int n,
                         float clip, float *dv, double *clip_frac);

/* 1 - Var(returns - values) / Var(returns) over the masked entries (0 when Var(returns) is 0). */
double rl_ppo_explained_variance(const float *values, const float *returns, const unsigned char *mask, size_t n);

/* Means over the masked entries of k1 and k3 into *k1, *k3. */
void rl_ppo_kl_estimates(const float *logp, const float *ref_logp, const unsigned char *mask, size_t n, double *k1,
                         double *k3);

#endif
