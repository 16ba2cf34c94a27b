/* metrics.h — one JSON object per training step, appended to a .jsonl file (flushed each line
 * so a crashed or interrupted run keeps every finished step). Fields that do not apply to a
 * trainer (reward statistics in SFT) are left out. */
#ifndef RL_TRAIN_METRICS_H
#define RL_TRAIN_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

typedef struct rl_step_stats {
    int64_t step;
    double loss;
    double lr, grad_norm;
    int has_rewards;          /* GRPO: the fields below are set */
    double reward_mean, reward_std;
    double kl, clip_frac, ratio_mean;
    double completion_len;    /* mean completion tokens */
    double tokens;            /* tokens processed by the training forward */
    double seconds;           /* wall time of the step */
    double tokens_per_s;
    double gen_seconds;       /* GRPO: time spent generating */
    double logp_diff_mean, logp_diff_max; /* GRPO: |trainer - sampler| log-prob, completion tokens */
    int has_tis;              /* GRPO with truncated importance sampling: */
    double tis_mean;          /* its mean weight min(exp(old - rollout), cap) */
    double reward_errors;     /* RL (with the rewards): broken reward answers scored 0 (--reward-errors zero) */
    int has_eval;             /* RL with evaluation prompts, on the steps that ran it: */
    double eval_accuracy, eval_reward; /* greedy: fraction scoring >= 1, mean reward */
    int has_ppo;              /* PPO (kl above is k1 per token, loss the policy loss): */
    double value_loss, vf_clip_frac, value_grad_norm, explained_var, kl_k3, kl_coef;
    double return_mean, value_mean, adv_mean, entropy; /* means over completion tokens */
    double reward_used_mean;  /* the scores as used (after penalty, normalisation, clip) */
    double update_seconds;    /* forwards without gradients + the PPO epochs */
    double peak_mem_gib;      /* CUDA: most device memory seen in use during the step */
} rl_step_stats;

typedef struct rl_metrics {
    FILE *fp;
    char path[4096]; /* for messages */
} rl_metrics;

/* append: keep earlier lines (resume); else truncate. */
int rl_metrics_open(rl_metrics *m, const char *path, int append, rl_err *err);
int rl_metrics_write(rl_metrics *m, const rl_step_stats *s, rl_err *err);
void rl_metrics_close(rl_metrics *m);

#endif
