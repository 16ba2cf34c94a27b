/* rollout_setup.c — see rollout_setup.h. */
#include "train/rollout_setup.h"

#include <stdlib.h>
#include <string.h>

#include "core/file.h"
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

int rl_rollout_setup_make(rl_rollout_setup *s, const rl_run_config *c, const rl_tokenizer *tok, rl_reward_options *ro,
                          rl_grpo_config *gc, rl_err *err)
{
    memset(s, 0, sizeof *s);
    if (!c->reward || strcmp(c->reward, "kernel")) return 0;
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
    if (rl_ktasks_load(&s->kt, c->data, tok, s->attempts, c->max_len, err)) return -1;
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
    gc->hooks.user = s;
    gc->hooks.prepare = kernel_prepare;
    gc->max_prompt_tokens = c->max_len;
    return 1;
}

void rl_rollout_setup_free(rl_rollout_setup *s)
{
    rl_ktasks_free(&s->kt);
    free(s->prompts);
    memset(s, 0, sizeof *s);
}
