/* run.c — see run.h. Each trainer kind is a row of hooks (create, resume, step, save, free)
 * over one union, so the loading, output layout and loop are written once for all of them. */
#include "train/run.h"

#include <stdio.h>
#include <string.h>

#include "core/file.h"
#include "train/data.h"
#include "train/dp.h"
#include "train/mem_plan.h"
#include "train/runlog.h"
#include "train/rollout_setup.h"

typedef struct run {
    const rl_run_config *c;
    const char *tok_dir; /* copied into checkpoints; NULL when --tokenizer named a file */
    rl_dp *dp;           /* data parallel, or NULL */
    const rl_loop_watch *lead; /* the watcher on rank 0, NULL on the others: one set of notes */
    rl_model model, ref;
    int have_model, have_ref;
    rl_tokenizer *tok;
    rl_reward *reward;
    rl_train_data data;
    rl_rollout_setup rollout; /* data and hooks of runs that are not plain prompts */
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

static int sft_rescue(void *r) { return rl_sft_rescue(&((run *)r)->t.sft); }
static int grpo_rescue(void *r) { return rl_grpo_rescue(&((run *)r)->t.grpo); }

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

/* ", 2 ranks, ZeRO 1" for the opening note of a data-parallel run, into text (64 bytes). */
static const char *ranks_text(const run *r, char *text)
{
    text[0] = '\0';
    if (r->dp) snprintf(text, 64, ", %d ranks, ZeRO %d", rl_dp_world(r->dp), rl_dp_zero(r->dp));
    return text;
}

/* Refuses a run whose memory plan does not fit the device, before anything is loaded. */
static int check_memory(run *r, rl_ctx *ctx, const char *load_dir, rl_err *err)
{
    const rl_run_config *c = r->c;
    char path[4096];
    rl_model_config cfg;
    if (rl_path_join(path, sizeof path, load_dir, "config.json")) return rl_err_set(err, "path too long: %s", load_dir);
    if (rl_config_load(&cfg, path, err)) return -1;
    int recompute = c->kind == RL_RUN_SFT ? c->sft.recompute : c->grpo.recompute;
    int max_tokens = c->kind == RL_RUN_SFT ? c->sft.max_tokens : c->grpo.max_tokens;
    rl_mem_plan plan;
    rl_mem_plan_make(&plan, &cfg, ctx->kind, rl_dp_world(r->dp), c->zero, max_tokens,
                     recompute ? RL_ACTS_TRAIN_CHECKPOINT : RL_ACTS_TRAIN, c->kind == RL_RUN_GRPO && c->grpo.kl_beta > 0);
    if (rl_mem_plan_check(&plan, ctx, err)) return -1;
    if (r->dp && ctx->kind == RL_BACKEND_CUDA) {
        char text[600];
        rl_mem_plan_describe(&plan, text, sizeof text);
        rl_loop_note(r->lead, "memory plan: %s", text);
    }
    return 0;
}

/* Each rank's closing line: the device memory in use after training (beside the plan). */
static void note_memory(const run *r, rl_ctx *ctx, const rl_loop_watch *watch)
{
    size_t free_bytes, total;
    if (!r->dp || ctx->kind != RL_BACKEND_CUDA || rl_mem_info(ctx, &free_bytes, &total)) return;
    rl_loop_note(watch, "rank %d: GPU memory in use after training: %.1f GiB of %.1f", rl_dp_rank(r->dp),
                 (double)(total - free_bytes) / (1 << 30), (double)total / (1 << 30));
}

/* Loads the data and creates (and resumes) the trainer; *hooks and *steps describe it. */
static int make_trainer(run *r, const rl_loop_watch *watch, rl_train_hooks *hooks, int64_t *steps, rl_err *err)
{
    const rl_run_config *c = r->c;
    char ranks[64];
    if (c->kind == RL_RUN_SFT) {
        if (rl_train_data_sft(&r->data, c->data, r->tok, &r->model.config, c->max_len, err)) return -1;
        if (r->data.n_truncated)
            rl_loop_note(r->lead, "%d examples cut to --max-len %d tokens", r->data.n_truncated, c->max_len);
        *steps = sft_steps(c, &r->data);
        rl_sft_config sc = c->sft;
        sc.optim.schedule.total_steps = (int)*steps;
        sc.optim.dp = r->dp;
        if (rl_sft_create(&r->t.sft, &r->model, r->data.sft, r->data.n, &sc, err)) return -1;
        r->have_trainer = 1;
        if (c->resume && rl_sft_resume(&r->t.sft, c->resume, err)) return -1;
        *hooks = (rl_train_hooks){r, sft_step, sft_save, sft_done, sft_rescue};
        rl_loop_note(r->lead, "%s, %d examples, %.1fM parameters, %lld steps from step %lld (%s%s)", c->data,
                     r->data.n, (double)r->model.n_elems / 1e6, (long long)*steps, (long long)r->t.sft.state.step,
                     rl_backend_name(r->model.ctx), ranks_text(r, ranks));
        return 0;
    }
    *steps = c->steps;
    rl_grpo_config gc = c->grpo;
    gc.optim.schedule.total_steps = (int)*steps;
    gc.optim.dp = r->dp;
    if (gc.kl_beta > 0) {
        if (!c->model_dir) return rl_err_set(err, "a KL penalty needs the reference model (--model)");
        if (rl_model_load(&r->ref, r->model.ctx, c->model_dir, err)) return -1;
        r->have_ref = 1;
    }
    rl_reward_options ro = c->reward_options;
    int custom = rl_rollout_setup_make(&r->rollout, c, r->tok, &ro, &gc, err);
    if (custom < 0 || (!custom && rl_train_data_rl_chat(&r->data, c->data, r->tok, c->max_len, !c->thinking_off, err)) ||
        (c->reward && rl_reward_create(&r->reward, c->reward, &ro, err)))
        return -1;
    const rl_grpo_prompt *prompts = custom ? r->rollout.prompts : r->data.prompts;
    int n_prompts = custom ? r->rollout.n : r->data.n;
    if (rl_grpo_create(&r->t.grpo, &r->model, r->have_ref ? &r->ref : NULL, r->tok, r->reward, prompts, n_prompts, &gc,
                       err))
        return -1;
    r->have_trainer = 1;
    if (c->resume && rl_grpo_resume(&r->t.grpo, c->resume, err)) return -1;
    *hooks = (rl_train_hooks){r, grpo_step, grpo_save, grpo_done, grpo_rescue};
    rl_loop_note(r->lead, "%s, %d prompts, %s %s, %s loss, %lld steps from step %lld (%s%s)", c->data, n_prompts,
                 c->env ? "environment" : "reward", c->env ? c->env : c->reward, rl_loss_norm_names[gc.loss_norm],
                 (long long)*steps, (long long)r->t.grpo.state.step,
                 rl_backend_name(r->model.ctx), ranks_text(r, ranks));
    return 0;
}

static void run_free(run *r)
{
    if (r->have_trainer) {
        if (r->c->kind == RL_RUN_SFT) rl_sft_free(&r->t.sft);
        else rl_grpo_free(&r->t.grpo);
    }
    rl_dp_free(r->dp);
    rl_reward_free(r->reward);
    rl_train_data_free(&r->data);
    rl_rollout_setup_free(&r->rollout);
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
    r.lead = watch;
    rl_metrics met = {0};
    rl_runlog log = {0};
    rl_train_hooks hooks;
    int64_t steps = 0;
    int rc = -1;
    if (c->comm) {
        if (rl_dp_create(&r.dp, c->comm, c->zero, err)) return -1;
        if (rl_dp_rank(r.dp) != 0) r.lead = NULL;
    }
    if (check_memory(&r, ctx, load_dir, err) || rl_model_load(&r.model, ctx, load_dir, err)) goto done;
    r.have_model = 1;
    if (rl_tok_load(&r.tok, tok_path, err) || make_trainer(&r, watch, &hooks, &steps, err)) goto done;
    if (rl_mkdir_p(c->out, err) ||
        (rl_dp_rank(r.dp) == 0 && (rl_metrics_open(&met, metrics_path, c->resume != NULL, err) ||
                                   rl_runlog_open(&log, c->out, "", c->log_samples, c->resume != NULL, r.tok, err))))
        goto done;
    if (rl_dp_rank(r.dp) == 0) {
        if (c->kind == RL_RUN_SFT) r.t.sft.log = &log;
        else r.t.grpo.log = &log;
    }
    rl_loop_config lc = {c->kind == RL_RUN_SFT ? "sft" : "grpo", steps, c->save_every, c->no_save ? NULL : ckpt,
                         &met, watch, r.dp};
    rc = rl_train_loop(&hooks, &lc, err);
    if (rc == 0 && c->no_save) rl_loop_note(r.lead, "metrics in %s (no checkpoint: --no-save)", metrics_path);
    else if (rc == 0) rl_loop_note(r.lead, "model saved to %s, metrics in %s", ckpt, metrics_path);
    if (rc >= 0) note_memory(&r, ctx, watch);
done:
    rl_metrics_close(&met);
    rl_runlog_close(&log);
    run_free(&r);
    return rc;
}
