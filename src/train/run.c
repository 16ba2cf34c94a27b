/* run.c — see run.h. Each trainer kind is a row of hooks (create, resume, step, save, free)
 * over one union, so the loading, output layout and loop are written once for all of them. */
#include "train/run.h"

#include <stdio.h>
#include <string.h>

#include "core/file.h"
#include "train/data.h"

typedef struct run {
    const rl_run_config *c;
    const char *tok_dir; /* copied into checkpoints; NULL when --tokenizer named a file */
    rl_model model, ref;
    int have_model, have_ref;
    rl_tokenizer *tok;
    rl_reward *reward;
    rl_train_data data;
    union {
        rl_sft sft;
        rl_grpo grpo;
    } t;
    int have_trainer;
} run;

static int sft_step(void *r, rl_step_stats *s, rl_err *e) { return rl_sft_step(&((run *)r)->t.sft, s, e); }
static int64_t sft_done(void *r) { return ((run *)r)->t.sft.state.step; }
static int sft_save(void *r, const char *dir, rl_err *e)
{
    run *x = r;
    return rl_sft_save(&x->t.sft, dir, x->c->options, x->tok_dir, e);
}

static int grpo_step(void *r, rl_step_stats *s, rl_err *e) { return rl_grpo_step(&((run *)r)->t.grpo, s, e); }
static int64_t grpo_done(void *r) { return ((run *)r)->t.grpo.state.step; }
static int grpo_save(void *r, const char *dir, rl_err *e)
{
    run *x = r;
    return rl_grpo_save(&x->t.grpo, dir, x->c->options, x->tok_dir, e);
}

/* SFT without a step count: enough steps for `epochs` passes over the data's tokens. */
static int64_t sft_steps(const rl_run_config *c, const rl_train_data *d)
{
    if (c->steps > 0) return c->steps;
    double tokens = 0;
    for (int i = 0; i < d->n; i++) tokens += d->sft[i].n_ids;
    int64_t steps = (int64_t)(c->epochs * tokens / ((double)c->sft.max_tokens * c->sft.grad_accum) + 0.999);
    return steps < 1 ? 1 : steps;
}

/* Loads the data and creates (and resumes) the trainer; *hooks and *steps describe it. */
static int make_trainer(run *r, const rl_loop_watch *watch, rl_train_hooks *hooks, int64_t *steps, rl_err *err)
{
    const rl_run_config *c = r->c;
    if (c->kind == RL_RUN_SFT) {
        if (rl_train_data_sft(&r->data, c->data, r->tok, &r->model.config, c->max_len, err)) return -1;
        if (r->data.n_truncated)
            rl_loop_note(watch, "%d examples cut to --max-len %d tokens", r->data.n_truncated, c->max_len);
        *steps = sft_steps(c, &r->data);
        rl_sft_config sc = c->sft;
        sc.optim.schedule.total_steps = (int)*steps;
        if (rl_sft_create(&r->t.sft, &r->model, r->data.sft, r->data.n, &sc, err)) return -1;
        r->have_trainer = 1;
        if (c->resume && rl_sft_resume(&r->t.sft, c->resume, err)) return -1;
        *hooks = (rl_train_hooks){r, sft_step, sft_save, sft_done};
        rl_loop_note(watch, "%s, %d examples, %.1fM parameters, %lld steps from step %lld (%s)", c->data, r->data.n,
                     (double)r->model.n_elems / 1e6, (long long)*steps, (long long)r->t.sft.state.step,
                     rl_backend_name(r->model.ctx));
        return 0;
    }
    *steps = c->steps;
    rl_grpo_config gc = c->grpo;
    gc.optim.schedule.total_steps = (int)*steps;
    if (gc.kl_beta > 0) {
        if (!c->model_dir) return rl_err_set(err, "a KL penalty needs the reference model (--model)");
        if (rl_model_load(&r->ref, r->model.ctx, c->model_dir, err)) return -1;
        r->have_ref = 1;
    }
    if (rl_train_data_rl(&r->data, c->data, r->tok, c->max_len, err) ||
        rl_reward_create(&r->reward, c->reward, &c->reward_options, err))
        return -1;
    if (rl_grpo_create(&r->t.grpo, &r->model, r->have_ref ? &r->ref : NULL, r->tok, r->reward, r->data.prompts,
                       r->data.n, &gc, err))
        return -1;
    r->have_trainer = 1;
    if (c->resume && rl_grpo_resume(&r->t.grpo, c->resume, err)) return -1;
    *hooks = (rl_train_hooks){r, grpo_step, grpo_save, grpo_done};
    rl_loop_note(watch, "%s, %d prompts, reward %s, %s loss, %lld steps from step %lld (%s)", c->data, r->data.n,
                 c->reward, rl_loss_norm_names[gc.loss_norm], (long long)*steps, (long long)r->t.grpo.state.step,
                 rl_backend_name(r->model.ctx));
    return 0;
}

static void run_free(run *r)
{
    if (r->have_trainer) {
        if (r->c->kind == RL_RUN_SFT) rl_sft_free(&r->t.sft);
        else rl_grpo_free(&r->t.grpo);
    }
    rl_reward_free(r->reward);
    rl_train_data_free(&r->data);
    rl_tok_free(r->tok);
    if (r->have_ref) rl_model_free(&r->ref);
    if (r->have_model) rl_model_free(&r->model);
}

int rl_train_run(rl_ctx *ctx, const rl_run_config *c, const rl_loop_watch *watch, rl_err *err)
{
    const char *load_dir = c->resume ? c->resume : c->model_dir;
    if (!load_dir) return rl_err_set(err, "no model to start from (--model or --resume)");
    char tok_path[4096], ckpt[4096], metrics_path[4096];
    if (rl_path_join(ckpt, sizeof ckpt, c->out, "model") ||
        rl_path_join(metrics_path, sizeof metrics_path, c->out, "metrics.jsonl"))
        return rl_err_set(err, "output path too long: %s", c->out);
    if (c->tokenizer) snprintf(tok_path, sizeof tok_path, "%s", c->tokenizer);
    else if (rl_path_join(tok_path, sizeof tok_path, load_dir, "tokenizer.json"))
        return rl_err_set(err, "path too long: %s/tokenizer.json", load_dir);

    run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.tok_dir = c->tokenizer ? NULL : load_dir;
    rl_metrics met = {0};
    rl_train_hooks hooks;
    int64_t steps = 0;
    int rc = -1;
    if (rl_model_load(&r.model, ctx, load_dir, err)) goto done;
    r.have_model = 1;
    if (rl_tok_load(&r.tok, tok_path, err) || make_trainer(&r, watch, &hooks, &steps, err)) goto done;
    if (rl_mkdir_p(c->out, err) || rl_metrics_open(&met, metrics_path, c->resume != NULL, err)) goto done;
    rl_loop_config lc = {c->kind == RL_RUN_SFT ? "sft" : "grpo", steps, c->save_every, ckpt, &met, watch};
    rc = rl_train_loop(&hooks, &lc, err);
    if (rc == 0) rl_loop_note(watch, "model saved to %s, metrics in %s", ckpt, metrics_path);
done:
    rl_metrics_close(&met);
    run_free(&r);
    return rc;
}
