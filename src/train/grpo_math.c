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
