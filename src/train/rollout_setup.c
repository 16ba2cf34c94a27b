/* rollout_setup.c — see rollout_setup.h. */
#include "train/rollout_setup.h"

#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "reward/kernel_env/kenv.h"
#include "train/checkpoint.h"

/* hooks.prepare of a kernel run: the step's prompts rebuilt, the trainer's data pointed at them. */
static int kernel_prepare(void *user, int64_t step, const int *prompt_of, int n, rl_err *err)
{
    rl_rollout_setup *s = user;
    if (rl_ktasks_rebuild(&s->kt, step, prompt_of, n, err)) return -1;
    for (int k = 0; k < n; k++) {
        int i = prompt_of[k];
        s->prompts[i] = (rl_grpo_prompt){s->kt.ids[i], s->kt.n_ids[i], s->kt.text[i], NULL, s->kt.lines[i]};
    }
    return 0;
}

/* hooks.episode: the step's episodes, each with its dataset line. */
static int run_episodes(void *user, rl_engine *e, int64_t step, const rl_gen_prompt *prompts, const int *prompt_of,
                        int n, const rl_gen_params *gen, rl_gen_result *results, unsigned char *own, int stride,
                        float *rewards, rl_err *err)
{
    rl_rollout_setup *s = user;
    const cJSON **fields = malloc((size_t)(n > 0 ? n : 1) * sizeof *fields);
    if (!fields) return rl_err_oom(err, "episode fields", 0);
    for (int i = 0; i < n; i++) fields[i] = s->prompts[prompt_of[i]].fields;
    int rc = rl_episodes_run(&s->episodes, e, step, prompts, fields, n, gen, results, own, stride, rewards, err);
    free(fields);
    return rc;
}

/* --env: the environment, the episodes and (for a program) the prompts. */
static int make_env(rl_rollout_setup *s, const rl_run_config *c, const rl_tokenizer *tok, rl_grpo_config *gc,
                    const rl_kreward_opts *kopts, rl_err *err)
{
    rl_env_options eo = {.timeout_s = c->env_timeout, .kernel = *kopts};
    if (rl_env_create(&s->env, c->env, &eo, err)) return -1;
    int max_tokens = c->max_episode_tokens > 0 ? c->max_episode_tokens : c->max_turns * (gc->gen.max_new_tokens + 256);
    rl_episodes_config ec = {c->max_turns, max_tokens, (float)c->env_fail_reward, c->thinking_off};
    if (rl_episodes_init(&s->episodes, s->env, tok, &ec, err)) return -1;
    s->have_episodes = 1;
    if (!s->kernel) {
        if (rl_train_data_rl_chat(&s->data, c->data, tok, c->max_len, !c->thinking_off, err)) return -1;
        s->have_data = 1;
        s->n = s->data.n;
        s->prompts = s->data.prompts;
    }
    gc->hooks.user = s;
    gc->hooks.episode = run_episodes;
    gc->max_completion_tokens = max_tokens;
    return 0;
}

int rl_rollout_setup_make(rl_rollout_setup *s, const rl_run_config *c, const rl_tokenizer *tok, rl_reward_options *ro,
                          rl_grpo_config *gc, rl_err *err)
{
    memset(s, 0, sizeof *s);
    int kernel = (c->reward && !strcmp(c->reward, "kernel")) || (c->env && !strcmp(c->env, "kernel"));
    if (!kernel) {
        if (!c->env) return 0;
        if (make_env(s, c, tok, gc, &ro->kernel, err)) {
            rl_rollout_setup_free(s);
            return -1;
        }
        return 1;
    }
    if (rl_path_join(s->attempts, sizeof s->attempts, c->out, "attempts.jsonl"))
        return rl_err_set(err, "output path too long: %s", c->out);
    int64_t keep = -1;
    if (c->resume) {
        rl_train_state st;
        if (rl_checkpoint_load_state(c->resume, &st, NULL, err)) return -1;
        keep = st.step;
    }
    if (rl_mkdir_p(c->out, err)) return -1;
    /* a fresh run starts an empty database before the first prompts read it */
    if (keep < 0 && rl_file_exists(s->attempts) && rl_file_write_atomic(s->attempts, "", 0, err)) return -1;
    if (rl_ktasks_load(&s->kt, c->data, tok, s->attempts, c->max_len, c->env ? rl_env_kernel_tools_text : NULL,
                       !c->thinking_off, err))
        return -1;
    s->kernel = 1;
    s->n = s->kt.n;
    if (!(s->prompts = calloc((size_t)s->n, sizeof *s->prompts))) {
        rl_rollout_setup_free(s);
        return rl_err_oom(err, "kernel prompts", (size_t)s->n * sizeof *s->prompts);
    }
    for (int i = 0; i < s->n; i++)
        s->prompts[i] = (rl_grpo_prompt){s->kt.ids[i], s->kt.n_ids[i], s->kt.text[i], NULL, s->kt.lines[i]};
    ro->kernel.attempts = s->attempts;
    ro->kernel.keep_upto = keep;
    for (int i = 0; i < s->n; i++) ro->kernel.kb_tasks |= s->kt.task[i] && rl_kenv_is_kernelbench(s->kt.task[i]);
    gc->hooks.user = s;
    gc->hooks.prepare = kernel_prepare;
    gc->max_prompt_tokens = c->max_len;
    if (c->env && make_env(s, c, tok, gc, &ro->kernel, err)) {
        rl_rollout_setup_free(s);
        return -1;
    }
    return 1;
}

void rl_rollout_setup_free(rl_rollout_setup *s)
{
    if (s->have_episodes) rl_episodes_free(&s->episodes);
    rl_env_free(s->env);
    if (s->have_data) rl_train_data_free(&s->data);
    else free(s->prompts);
    rl_ktasks_free(&s->kt);
    memset(s, 0, sizeof *s);
}
