/* ppo_math.c — see ppo_math.h. Sums in double; results in float where the trainer stores them. */
#include "train/ppo_math.h"

#include <math.h>

void rl_running_update(rl_running_stats *s, const float *x, int n)
{
    if (n <= 0) return;
    double mean = 0, m2 = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) m2 += (x[i] - mean) * (x[i] - mean);
    rl_running_merge(s, n, mean, m2);
}

void rl_running_merge(rl_running_stats *s, double n, double mean, double m2)
{
    if (n <= 0) return;
    double total = s->count + n, delta = mean - s->mean;
    s->m2 += m2 + delta * delta * s->count * n / total;
    s->mean += delta * n / total;
    s->count = total;
}

double rl_running_std(const rl_running_stats *s)
{
    if (s->count <= 0) return 1.0;
    double sd = sqrt(s->m2 / s->count);
    return sd > 1e-8 ? sd : 1e-8;
}

void rl_kl_ctl_update(rl_kl_ctl *c, double kl, double n_steps)
{
    if (c->target <= 0 || c->horizon <= 0) return;
    double e = kl / c->target - 1;
    e = e < -0.2 ? -0.2 : e > 0.2 ? 0.2 : e;
    c->value *= 1 + e * n_steps / c->horizon;
}

void rl_ppo_token_rewards(const float *logp, const float *ref_logp, int n, float score, float kl_coef, float *rewards)
{
    for (int t = 0; t < n; t++) rewards[t] = ref_logp ? -kl_coef * (logp[t] - ref_logp[t]) : 0.0f;
    if (n > 0) rewards[n - 1] += score;
}

void rl_ppo_gae(const float *rewards, const float *values, int n, float gamma, float lam, float *adv, float *returns)
{
    double last = 0;
    for (int t = n - 1; t >= 0; t--) {
        double next = t + 1 < n ? values[t + 1] : 0.0;
        double delta = rewards[t] + gamma * next - values[t];
        last = delta + (double)gamma * lam * last;
        adv[t] = (float)last;
        returns[t] = (float)(last + values[t]);
    }
}

void rl_ppo_whiten(float *x, const unsigned char *mask, size_t n, int shift_mean)
{
    double sum = 0, sq = 0, count = 0;
    for (size_t i = 0; i < n; i++)
        if (!mask || mask[i]) sum += x[i], count++;
    if (count < 2) return;
    double mean = sum / count;
    for (size_t i = 0; i < n; i++)
        if (!mask || mask[i]) sq += (x[i] - mean) * (x[i] - mean);
    double inv = 1.0 / sqrt(sq / (count - 1) + 1e-8);
    for (size_t i = 0; i < n; i++)
        if (!mask || mask[i]) x[i] = (float)((x[i] - mean) * inv + (shift_mean ? 0 : mean));
}

double rl_ppo_value_loss(const float *values, const float *old_values, const float *returns, const float *w, int n,
                         float clip, float *dv, double *clip_frac)
{
    double loss = 0, clipped = 0, wsum = 0;
    for (int t = 0; t < n; t++) {
        dv[t] = 0;
        if (w[t] == 0) continue;
        double v = values[t], d = v - old_values[t], r = returns[t];
        double dc = d < -clip ? -clip : d > clip ? clip : d;
        double vc = old_values[t] + dc;
        double l1 = (v - r) * (v - r), l2 = (vc - r) * (vc - r);
        wsum += w[t];
        if (l2 > l1) {
            /* the clipped term: its slope in v is 1 inside the clip range, 0 outside */
            loss += 0.5 * w[t] * l2;
            clipped += w[t];
            dv[t] = (d > -clip && d < clip) ? (float)(w[t] * (vc - r)) : 0.0f;
        } else {
            loss += 0.5 * w[t] * l1;
            dv[t] = (float)(w[t] * (v - r));
        }
    }
    *clip_frac = wsum > 0 ? clipped / wsum : 0;
    return loss;
}

double rl_ppo_explained_variance(const float *values, const float *returns, const unsigned char *mask, size_t n)
{
    double count = 0, sr = 0, sd = 0;
    for (size_t i = 0; i < n; i++)
        if (!mask || mask[i]) count++, sr += returns[i], sd += returns[i] - values[i];
    if (count < 2) return 0;
    double mr = sr / count, md = sd / count, vr = 0, vd = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double d = returns[i] - values[i] - md;
        vr += (returns[i] - mr) * (returns[i] - mr);
        vd += d * d;
    }
    return vr > 0 ? 1 - vd / vr : 0;
}

void rl_ppo_kl_estimates(const float *logp, const float *ref_logp, const unsigned char *mask, size_t n, double *k1,
                         double *k3)
{
    double s1 = 0, s3 = 0, count = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double d = (double)ref_logp[i] - logp[i];
        s1 += -d;
        s3 += exp(d) - d - 1;
        count++;
    }
    *k1 = count ? s1 / count : 0;
    *k3 = count ? s3 / count : 0;
}
