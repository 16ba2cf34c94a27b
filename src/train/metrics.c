/* metrics.c — see metrics.h. */
#include "train/metrics.h"

#include <errno.h>
#include <string.h>

int rl_metrics_open(rl_metrics *m, const char *path, int append, rl_err *err)
{
    snprintf(m->path, sizeof m->path, "%s", path);
    m->fp = fopen(path, append ? "a" : "w");
    if (!m->fp) return rl_err_set(err, "%s: cannot open for writing: %s", path, strerror(errno));
    return 0;
}

int rl_metrics_write(rl_metrics *m, const rl_step_stats *s, rl_err *err)
{
    if (!m->fp) return 0;
    fprintf(m->fp, "{\"step\": %lld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.6g",
            (long long)s->step, s->loss, s->lr, s->grad_norm);
    if (s->has_rewards)
        fprintf(m->fp, ", \"reward_mean\": %.6g, \"reward_std\": %.6g, \"kl\": %.6g, \"clip_frac\": %.6g, "
                       "\"ratio_mean\": %.6g, \"completion_len\": %.4g, \"gen_seconds\": %.4g, "
                       "\"rollout_logp_diff_mean\": %.6g, \"rollout_logp_diff_max\": %.6g, \"reward_errors\": %.0f",
                s->reward_mean, s->reward_std, s->kl, s->clip_frac, s->ratio_mean, s->completion_len,
                s->gen_seconds, s->logp_diff_mean, s->logp_diff_max, s->reward_errors);
    if (s->has_tis) fprintf(m->fp, ", \"tis_weight_mean\": %.6g", s->tis_mean);
    if (s->has_eval) fprintf(m->fp, ", \"eval_accuracy\": %.6g, \"eval_reward\": %.6g", s->eval_accuracy, s->eval_reward);
    if (s->has_ppo)
        fprintf(m->fp, ", \"value_loss\": %.6g, \"vf_clip_frac\": %.6g, \"value_grad_norm\": %.6g, "
                       "\"explained_variance\": %.6g, \"kl_k3\": %.6g, \"kl_coef\": %.6g, \"return_mean\": %.6g, "
                       "\"value_mean\": %.6g, \"advantage_mean\": %.6g, \"entropy\": %.6g, \"reward_used_mean\": %.6g, "
                       "\"update_seconds\": %.4g, \"peak_mem_gib\": %.3f",
                s->value_loss, s->vf_clip_frac, s->value_grad_norm, s->explained_var, s->kl_k3, s->kl_coef,
                s->return_mean, s->value_mean, s->adv_mean, s->entropy, s->reward_used_mean, s->update_seconds,
                s->peak_mem_gib);
    fprintf(m->fp, ", \"tokens\": %.0f, \"tokens_per_s\": %.1f, \"time\": %.4g}\n", s->tokens, s->tokens_per_s,
            s->seconds);
    if (fflush(m->fp) != 0 || ferror(m->fp)) return rl_err_set(err, "%s: write failed: %s", m->path, strerror(errno));
    return 0;
}

void rl_metrics_close(rl_metrics *m)
{
    if (m->fp) fclose(m->fp);
    m->fp = NULL;
}
