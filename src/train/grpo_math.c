/* grpo_math.c — see grpo_math.h. Sums in double so the results do not depend on group order. */
#include "train/grpo_math.h"

#include <math.h>
#include <string.h>

void rl_grpo_advantages(const float *rewards, int n_groups, int group_size, int scale_std, float *adv)
{
    for (int g = 0; g < n_groups; g++) {
        const float *r = rewards + (size_t)g * group_size;
        float *a = adv + (size_t)g * group_size;
        double mean = 0, var = 0;
        int all_equal = 1;
        for (int i = 0; i < group_size; i++) {
            mean += r[i];
            all_equal &= r[i] == r[0];
        }
        mean /= group_size;
        for (int i = 0; i < group_size; i++) var += (r[i] - mean) * (r[i] - mean);
        double std = group_size > 1 ? sqrt(var / (group_size - 1)) : 0.0;
        for (int i = 0; i < group_size; i++) {
            double d = r[i] - mean;
            a[i] = all_equal ? 0.0f : (float)(scale_std ? d / (std + 1e-4) : d);
        }
    }
}

void rl_rloo_advantages(const float *rewards, int n_groups, int group_size, float *adv)
{
    for (int g = 0; g < n_groups; g++) {
        const float *r = rewards + (size_t)g * group_size;
        double sum = 0;
        for (int i = 0; i < group_size; i++) sum += r[i];
        for (int i = 0; i < group_size; i++)
            adv[(size_t)g * group_size + i] = group_size > 1 ? (float)(r[i] - (sum - r[i]) / (group_size - 1)) : 0.0f;
    }
}

void rl_reinforce_pp_returns(const float *logp, const float *ref_logp, const unsigned char *completion,
                             const int32_t *cu, int n_seqs, const float *scores, float beta, float *tok_adv,
                             double sums[3])
{
    double sum = 0, sq = 0, count = 0;
    for (int s = 0; s < n_seqs; s++) {
        double to_go = 0;
        int last = 1; /* the score goes to the last completion token */
        for (int i = cu[s + 1] - 1; i >= cu[s]; i--) {
            tok_adv[i] = 0;
            if (!completion[i]) continue;
            double r = ref_logp ? -(double)beta * (logp[i] - ref_logp[i]) : 0;
            if (last) r += scores[s], last = 0;
            to_go += r;
            tok_adv[i] = (float)to_go;
            sum += to_go, sq += to_go * to_go, count++;
        }
    }
    sums[0] = count, sums[1] = sum, sums[2] = sq;
}

void rl_reinforce_pp_normalise(const unsigned char *completion, size_t n_tokens, const double sums[3], float *tok_adv)
{
    double count = sums[0];
    if (count < 2) return;
    double mean = sums[1] / count, var = (sums[2] - count * mean * mean) / (count - 1);
    double inv = 1.0 / sqrt((var > 0 ? var : 0) + 1e-8);
    for (size_t i = 0; i < n_tokens; i++)
        if (completion[i]) tok_adv[i] = (float)((tok_adv[i] - mean) * inv);
}

void rl_reinforce_pp_advantages(const float *logp, const float *ref_logp, const unsigned char *completion,
                                const int32_t *cu, int n_seqs, const float *scores, float beta, float *tok_adv)
{
    double sums[3];
    rl_reinforce_pp_returns(logp, ref_logp, completion, cu, n_seqs, scores, beta, tok_adv, sums);
    rl_reinforce_pp_normalise(completion, (size_t)cu[n_seqs], sums, tok_adv);
}

void rl_grpo_weights(rl_loss_norm norm, const int *lens, int n_seqs, int max_len, float *w)
{
    double total = 0;
    for (int i = 0; i < n_seqs; i++) total += lens[i];
    for (int i = 0; i < n_seqs; i++) {
        if (lens[i] <= 0) {
            w[i] = 0;
            continue;
        }
        switch (norm) {
        case RL_NORM_SEQUENCE: w[i] = (float)(1.0 / ((double)n_seqs * lens[i])); break;
        case RL_NORM_TOKEN: w[i] = (float)(1.0 / total); break;
        case RL_NORM_DR_GRPO: w[i] = (float)(1.0 / ((double)n_seqs * max_len)); break;
        }
    }
}

const char *const rl_loss_norm_names[] = {"sequence", "token", "dr_grpo", NULL};

int rl_loss_norm_parse(const char *name, rl_loss_norm *out, rl_err *err)
{
    for (int k = 0; k < 3; k++)
        if (!strcmp(name, rl_loss_norm_names[k])) {
            *out = (rl_loss_norm)k;
            return 0;
        }
    return rl_err_set(err, "unknown loss normalisation '%s' (expected sequence, token or dr_grpo)", name);
}

const char *rl_loss_norm_name(rl_loss_norm norm) { return rl_loss_norm_names[norm]; }
