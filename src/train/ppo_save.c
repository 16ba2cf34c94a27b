/* ppo_save.c — PPO checkpoints (ppo.h rl_ppo_save / rl_ppo_resume): the policy as any trainer's
 * checkpoint, DIR/value the critic (the value model with its optimizer, or with --critic shared
 * the value model made of the policy's trunk and the shared head, train/shared_critic.h), and
 * DIR/value/ppo_state.json the reward statistics, the KL coefficient and the critic's kind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/json.h"
#include "train/dp.h"
#include "train/ppo.h"

/* DIR/value/ppo_state.json. */
static int write_state(const rl_ppo *t, const char *vdir, rl_err *err)
{
    char path[4200];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "reward_count", t->reward_stats.count);
    cJSON_AddNumberToObject(j, "reward_mean", t->reward_stats.mean);
    cJSON_AddNumberToObject(j, "reward_m2", t->reward_stats.m2);
    cJSON_AddNumberToObject(j, "kl_coef", t->kl.value);
    cJSON_AddStringToObject(j, "critic", rl_critic_names[t->cfg.critic]);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return rl_err_oom(err, "ppo_state.json", 256);
    snprintf(path, sizeof path, "%s/ppo_state.json", vdir);
    int rc = rl_file_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

int rl_ppo_save(const rl_ppo *t, const char *dir, const cJSON *options, const char *tokenizer_dir, rl_err *err)
{
    char vdir[4096];
    if (rl_path_join(vdir, sizeof vdir, dir, "value")) return rl_err_set(err, "%s: path too long", dir);
    if (rl_checkpoint_save(dir, t->policy, &t->optim, &t->state, options, tokenizer_dir, err)) return -1;
    if (t->cfg.critic == RL_CRITIC_SHARED
            ? rl_shared_critic_save(&t->critic, t->policy, vdir, &t->state, tokenizer_dir, err)
            : rl_checkpoint_save(vdir, t->value, &t->value_optim, &t->state, NULL, tokenizer_dir, err))
        return -1;
    rl_dp *dp = t->cfg.optim.dp;
    int rc = rl_dp_rank(dp) == 0 ? write_state(t, vdir, err) : 0; /* rank 0 writes the checkpoint */
    if (dp) { /* every rank learns whether it was written */
        int any_failed;
        rl_err agree;
        if (rl_dp_any(dp, rc != 0, &any_failed, &agree)) return rc ? rc : (*err = agree, -1);
        if (any_failed && rc == 0) return rl_err_set(err, "checkpoint %s: not written (see rank 0's message)", dir);
    }
    return rc;
}

int rl_ppo_resume(rl_ppo *t, const char *dir, rl_err *err)
{
    char vdir[4096], path[4200];
    if (rl_path_join(vdir, sizeof vdir, dir, "value")) return rl_err_set(err, "%s: path too long", dir);
    snprintf(path, sizeof path, "%s/ppo_state.json", vdir);
    cJSON *j = rl_json_parse_file(path, err);
    if (!j) return rl_err_prefix(err, "resume: ");
    /* written since --critic exists; older checkpoints have a separate value model */
    const char *kind = rl_critic_names[RL_CRITIC_SEPARATE];
    if (rl_json_string(j, "critic", &kind, 0, path, err)) {
        cJSON_Delete(j);
        return rl_err_prefix(err, "resume: ");
    }
    if (strcmp(kind, rl_critic_names[t->cfg.critic])) {
        rl_err_set(err, "resume: %s: the checkpoint's critic is '%.32s', this run's --critic is '%s'", path, kind,
                   rl_critic_names[t->cfg.critic]);
        cJSON_Delete(j);
        return -1;
    }
    if (rl_checkpoint_load_state(dir, &t->state, NULL, err) || rl_checkpoint_load_optim(dir, &t->optim, err) ||
        (t->cfg.critic == RL_CRITIC_SHARED ? rl_shared_critic_load(&t->critic, vdir, err)
                                           : rl_checkpoint_load_optim(vdir, &t->value_optim, err))) {
        cJSON_Delete(j);
        return rl_err_prefix(err, "resume: ");
    }
    const char *keys[] = {"reward_count", "reward_mean", "reward_m2", "kl_coef"};
    double *to[] = {&t->reward_stats.count, &t->reward_stats.mean, &t->reward_stats.m2, &t->kl.value};
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
        if (!cJSON_IsNumber(v)) {
            cJSON_Delete(j);
            return rl_err_set(err, "resume: %s: '%s' missing or not a number", path, keys[i]);
        }
        *to[i] = v->valuedouble;
    }
    cJSON_Delete(j);
    return 0;
}
