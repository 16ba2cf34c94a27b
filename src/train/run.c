/* run.c — see run.h. Each trainer kind is a row of hooks (create, resume, step, save, free)
 * over one union, so the loading, output layout and loop are written once for all of them. */
#include "train/run.h"

#include <stdio.h>
#include <stdlib.h>
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
    rl_dp *value_dp;     /* ppo: the value model's group on the same communicator */
    const rl_loop_watch *lead; /* the watcher on rank 0, NULL on the others: one set of notes */
    rl_model model, ref, value;
    int have_model, have_ref, have_value;
    rl_tokenizer *tok;
    rl_reward *reward;
    rl_train_data data, eval; /* eval: the evaluation prompts (eval_data) */
    rl_rollout_setup rollout; /* data and hooks of runs that are not plain prompts */
    union {
        rl_sft sft;
        rl_grpo grpo;
        rl_ppo ppo;
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
static int ppo_rescue(void *r) { return rl_ppo_rescue(&((run *)r)->t.ppo); }

/* Every eval_every steps: greedy accuracy on the evaluation prompts with the trainer's engine
 * (its prefix cache dropped first: the update changed the weights), into the step's stats. */
static int maybe_eval(run *r, rl_engine *engine, const rl_gen_params *train_gen, rl_step_stats *s, rl_err *e)
{
    const rl_run_config *c = r->c;
    if (!c->eval_data || c->eval_every <= 0 || s->step % c->eval_every) return 0;
    rl_gen_params g = *train_gen;
    g.sample = rl_gen_params_default().sample;
    g.sample.temperature = 0;
    int correct = 0;
    rl_engine_reset_prefix_cache(engine);
    if (rl_grpo_evaluate(engine, r->reward, r->eval.prompts, r->eval.n, &g, &s->eval_reward, &correct, e))
        return rl_err_prefix(e, "evaluation on %s: ", c->eval_data);
    rl_engine_reset_prefix_cache(engine);
    s->has_eval = 1;
    s->eval_accuracy = r->eval.n ? (double)correct / r->eval.n : 0;
    return 0;
}

static int grpo_step(void *p, rl_step_stats *s, rl_err *e)
{
    run *r = p;
    if (rl_grpo_step(&r->t.grpo, s, e)) return -1;
    return maybe_eval(r, r->t.grpo.engine, &r->t.grpo.cfg.gen, s, e);
}
static int64_t grpo_done(void *r) { return ((run *)r)->t.grpo.state.step; }
static int grpo_save(void *r, const char *dir, rl_err *e)
{
    run *x = r;
    return rl_grpo_save(&x->t.grpo, dir, x->c->options, x->tok_dir, e);
}

static int ppo_step(void *p, rl_step_stats *s, rl_err *e)
{
    run *r = p;
    if (rl_ppo_step(&r->t.ppo, s, e)) return -1;
    return maybe_eval(r, r->t.ppo.engine, &r->t.ppo.cfg.gen, s, e);
}
static int64_t ppo_done(void *r) { return ((run *)r)->t.ppo.state.step; }
static int ppo_save(void *r, const char *dir, rl_err *e)
{
    run *x = r;
    return rl_ppo_save(&x->t.ppo, dir, x->c->options, x->tok_dir, e);
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
    int ppo = c->kind == RL_RUN_PPO;
    int recompute = c->kind == RL_RUN_SFT ? c->sft.recompute : ppo ? c->ppo.recompute : c->grpo.recompute;
    int max_tokens = c->kind == RL_RUN_SFT ? c->sft.max_tokens : ppo ? c->ppo.max_tokens : c->grpo.max_tokens;
    rl_mem_plan plan;
    rl_ctx_pick_act_dtype(ctx, rl_config_param_count(&cfg)); /* what the policy's creation would pick */
    rl_mem_plan_make(&plan, &cfg, ctx->kind, ctx->act_dtype, rl_dp_world(r->dp), c->zero, max_tokens,
                     recompute ? RL_ACTS_TRAIN_CHECKPOINT : RL_ACTS_TRAIN,
                     (c->kind == RL_RUN_GRPO && c->grpo.kl_beta > 0) || (ppo && c->ppo.kl_coef > 0));
    if (ppo && c->ppo.critic == RL_CRITIC_SEPARATE) { /* the value model: RESUME/value, --value-model or the policy's shape */
        char vpath[4200];
        rl_model_config vcfg = cfg;
        if (c->resume || c->value_model) {
            snprintf(vpath, sizeof vpath, "%s%s/config.json", c->resume ? c->resume : c->value_model,
                     c->resume ? "/value" : "");
            if (rl_config_load(&vcfg, vpath, err)) return rl_err_prefix(err, "value model: ");
        }
        rl_config_as_value(&vcfg, RL_HEAD_TOKEN_CLS);
        rl_mem_plan_add_value(&plan, &vcfg);
    }
    /* the engine's step buffers; its KV pool is sized by the prompts, not read yet */
    if (c->kind != RL_RUN_SFT) rl_mem_plan_add_engine(&plan, ppo ? &c->ppo.engine : &c->grpo.engine, 0, ppo);
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

/* The value model: RESUME/value, else --value-model (a value model, or a causal LM given a new
 * head), else the policy's trunk; it must read the policy's tokens. */
static int load_value(run *r, rl_err *err)
{
    const rl_run_config *c = r->c;
    char dir[4096];
    if (c->resume && rl_path_join(dir, sizeof dir, c->resume, "value")) return rl_err_set(err, "path too long");
    const char *from = c->resume ? dir : c->value_model ? c->value_model : c->model_dir;
    if (rl_model_load_value(&r->value, r->model.ctx, from, err)) return rl_err_prefix(err, "value model: ");
    r->have_value = 1;
    if (r->value.config.vocab_size != r->model.config.vocab_size)
        return rl_err_set(err, "value model %s: vocab_size %d differs from the policy's %d (a value model must read "
                               "the policy's tokens)", from, r->value.config.vocab_size, r->model.config.vocab_size);
    /* a tokenizer beside both: the same file */
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/tokenizer.json", from);
    snprintf(b, sizeof b, "%s/tokenizer.json", c->resume ? c->resume : c->model_dir ? c->model_dir : from);
    if (c->value_model && !c->resume && !c->tokenizer && rl_file_exists(a) && rl_file_exists(b)) {
        char *ta = NULL, *tb = NULL;
        size_t la = 0, lb = 0;
        int rc = rl_file_read_all(a, &ta, &la, err) || rl_file_read_all(b, &tb, &lb, err) ? -1 : 0;
        if (rc == 0 && (la != lb || memcmp(ta, tb, la)))
            rc = rl_err_set(err, "value model %s: its tokenizer.json differs from the policy's (%s)", from, b);
        free(ta), free(tb);
        if (rc) return -1;
    }
    return 0;
}

static int make_ppo(run *r, int64_t *steps, rl_err *err)
{
    const rl_run_config *c = r->c;
    rl_ppo_config pc = c->ppo;
    int updates = (int)*steps * pc.ppo_epochs * pc.num_mini_batches;
    pc.optim.schedule.total_steps = pc.value_optim.schedule.total_steps = updates;
    if (r->dp) { /* the value model is a second data-parallel group on the same communicator */
        if (rl_dp_create(&r->value_dp, c->comm, c->zero, err)) return -1;
        pc.optim.dp = r->dp;
        pc.value_optim.dp = r->value_dp;
    }
    if (pc.kl_coef > 0) {
        if (!c->model_dir) return rl_err_set(err, "a KL penalty (--kl-coef > 0) needs the reference model (--model)");
        if (rl_model_load(&r->ref, r->model.ctx, c->model_dir, err)) return -1;
        r->have_ref = 1;
        rl_model_freeze(&r->ref);
    }
    if (c->env) return rl_err_set(err, "ppo: multi-turn episodes (--env) are not supported; GRPO runs them");
    /* kernel tasks: the rollout set-up GRPO uses, its prepare hook handed to PPO */
    rl_reward_options ro = c->reward_options;
    rl_grpo_config gc = {.gen = pc.gen};
    int shared = pc.critic == RL_CRITIC_SHARED;
    if (shared && c->value_model)
        return rl_err_set(err, "--value-model: a shared critic (--critic shared) is a head on the policy, not a model");
    int custom = !shared && load_value(r, err) ? -1 : rl_rollout_setup_make(&r->rollout, c, r->tok, &ro, &gc, err);
    if (custom < 0 || (!custom && rl_train_data_rl_chat(&r->data, c->data, r->tok, c->max_len, !c->thinking_off, err)) ||
        (c->eval_data && rl_train_data_rl_chat(&r->eval, c->eval_data, r->tok, c->max_len, !c->thinking_off, err)) ||
        rl_reward_create(&r->reward, c->reward, &ro, err))
        return -1;
    pc.hooks = gc.hooks;
    pc.max_prompt_tokens = gc.max_prompt_tokens;
    const rl_grpo_prompt *prompts = custom ? r->rollout.prompts : r->data.prompts;
    int n_prompts = custom ? r->rollout.n : r->data.n;
    if (rl_ppo_create(&r->t.ppo, &r->model, shared ? NULL : &r->value, r->have_ref ? &r->ref : NULL, r->tok, r->reward, prompts,
                      n_prompts, &pc, err))
        return -1;
    r->have_trainer = 1;
    if (c->resume && rl_ppo_resume(&r->t.ppo, c->resume, err)) return -1;
    char ranks[64], critic[160];
    if (shared) snprintf(critic, sizeof critic, "critic: a value head on the policy (--critic shared)");
    else snprintf(critic, sizeof critic, "value model %s (%.1fM parameters)", r->value.config.architecture,
                  (double)r->value.n_elems / 1e6);
    rl_loop_note(r->lead, "%s, %d prompts, reward %s, %s, %lld steps from step %lld (%s %s%s)",
                 c->data, n_prompts, c->reward, critic,
                 (long long)*steps, (long long)r->t.ppo.state.step, rl_backend_name(r->model.ctx),
                 rl_ctx_precision_name(r->model.ctx), ranks_text(r, ranks));
    return 0;
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
        rl_loop_note(r->lead, "%s, %d examples, %.1fM parameters, %lld steps from step %lld (%s %s%s)", c->data,
                     r->data.n, (double)r->model.n_elems / 1e6, (long long)*steps, (long long)r->t.sft.state.step,
                     rl_backend_name(r->model.ctx), rl_ctx_precision_name(r->model.ctx), ranks_text(r, ranks));
        return 0;
    }
    *steps = c->steps;
    if (c->kind == RL_RUN_PPO) {
        *hooks = (rl_train_hooks){r, ppo_step, ppo_save, ppo_done, ppo_rescue};
        return make_ppo(r, steps, err);
    }
    rl_grpo_config gc = c->grpo;
    gc.optim.schedule.total_steps = (int)*steps;
    gc.optim.dp = r->dp;
    if (gc.kl_beta > 0) {
        if (!c->model_dir) return rl_err_set(err, "a KL penalty needs the reference model (--model)");
        if (rl_model_load(&r->ref, r->model.ctx, c->model_dir, err)) return -1;
        r->have_ref = 1;
        rl_model_freeze(&r->ref);
    }
    if (c->eval_data && !c->reward) return rl_err_set(err, "--eval-data needs a --reward to score the evaluation");
    rl_reward_options ro = c->reward_options;
    int custom = rl_rollout_setup_make(&r->rollout, c, r->tok, &ro, &gc, err);
    if (custom < 0 || (!custom && rl_train_data_rl_chat(&r->data, c->data, r->tok, c->max_len, !c->thinking_off, err)) ||
        (c->eval_data && rl_train_data_rl_chat(&r->eval, c->eval_data, r->tok, c->max_len, !c->thinking_off, err)) ||
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
    rl_loop_note(r->lead, "%s, %d prompts, %s %s, %s loss, %lld steps from step %lld (%s %s%s)", c->data, n_prompts,
                 c->env ? "environment" : "reward", c->env ? c->env : c->reward, rl_loss_norm_names[gc.loss_norm],
                 (long long)*steps, (long long)r->t.grpo.state.step,
                 rl_backend_name(r->model.ctx), rl_ctx_precision_name(r->model.ctx), ranks_text(r, ranks));
    return 0;
}

static void run_free(run *r)
{
    if (r->have_trainer) {
        if (r->c->kind == RL_RUN_SFT) rl_sft_free(&r->t.sft);
        else if (r->c->kind == RL_RUN_PPO) rl_ppo_free(&r->t.ppo);
        else rl_grpo_free(&r->t.grpo);
    }
    rl_dp_free(r->dp);
    rl_dp_free(r->value_dp);
    rl_reward_free(r->reward);
    rl_train_data_free(&r->data);
    rl_rollout_setup_free(&r->rollout);
    rl_train_data_free(&r->eval);
    rl_tok_free(r->tok);
    if (r->have_ref) rl_model_free(&r->ref);
    if (r->have_value) rl_model_free(&r->value);
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
        else if (c->kind == RL_RUN_GRPO) r.t.grpo.log = &log;
        else r.t.ppo.log = &log;
    }
    static const char *const labels[] = {"sft", "grpo", "ppo"};
    rl_loop_config lc = {labels[c->kind], steps, c->save_every, c->no_save ? NULL : ckpt,
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
