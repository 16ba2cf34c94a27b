/* demo.c — see demo.h. */
#include "train/demo/demo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "engine/generate.h"
#include "io/config.h"
#include "io/tokenizer.h"
#include "model/model.h"
#include "reward/reward.h"
#include "train/data.h"
#include "train/demo/arith.h"
#include "train/grpo.h"
#include "train/report.h"
#include "train/runlog.h"
#include "train/sft.h"

rl_demo_config rl_demo_defaults(void)
{
    return (rl_demo_config){.out = "runs/demo", .tokenizer = "examples/demo/tokenizer.json", .seed = 1, .lo = 0,
                            .hi = 19, .held_out = 80, .hidden = 256, .layers = 4, .heads = 8, .kv_heads = 4,
                            .head_dim = 32, .ffn = 768, .sft_steps = 160, .sft_batch = 32, .grpo_steps = 250,
                            .prompts = 8, .group = 8, .max_new = 6, .sft_lr = 3e-3, .grpo_lr = 1.5e-4,
                            .temperature = 0.3};
}

static int make_config(rl_model_config *cfg, const rl_demo_config *o, int vocab, int eos, rl_err *err)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": %d, "
             "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
             "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
             "\"max_position_embeddings\": 256, \"rope_theta\": 10000.0, \"rms_norm_eps\": 1e-6, "
             "\"tie_word_embeddings\": true, \"eos_token_id\": %d, \"bos_token_id\": null, "
             "\"hidden_act\": \"silu\", \"attention_bias\": false, \"torch_dtype\": \"float32\"}",
             vocab, o->hidden, o->ffn, o->layers, o->heads, o->kv_heads, o->head_dim, eos);
    return rl_config_parse(cfg, text, strlen(text), "demo config", err);
}

/* Writes problems [from, to) as dataset lines {"prompt": [user message], "completion", "answer"}. */
static int write_jsonl(const char *path, const rl_arith_problem *p, int from, int to, rl_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return rl_err_set(err, "%s: cannot write", path);
    for (int i = from; i < to; i++)
        fprintf(f, "{\"prompt\": [{\"role\": \"user\", \"content\": \"%s\"}], \"completion\": \"%s\", \"answer\": \"%s\"}\n",
                p[i].prompt, p[i].answer, p[i].answer);
    return fclose(f) == 0 ? 0 : rl_err_set(err, "%s: write failed", path);
}

/* What the step-loop hooks see: the trainer of the current phase and where tokenizer files
 * come from. */
typedef struct phase {
    rl_sft *sft;
    rl_grpo *grpo;
    const char *tok_dir;
} phase;

static int sft_step(void *p, rl_step_stats *s, rl_err *e) { return rl_sft_step(((phase *)p)->sft, s, e); }
static int64_t sft_done(void *p) { return ((phase *)p)->sft->state.step; }
static int sft_save(void *p, const char *dir, rl_err *e)
{
    return rl_sft_save(((phase *)p)->sft, dir, NULL, ((phase *)p)->tok_dir, e);
}
static int grpo_step(void *p, rl_step_stats *s, rl_err *e) { return rl_grpo_step(((phase *)p)->grpo, s, e); }
static int64_t grpo_done(void *p) { return ((phase *)p)->grpo->state.step; }
static int grpo_save(void *p, const char *dir, rl_err *e)
{
    return rl_grpo_save(((phase *)p)->grpo, dir, NULL, ((phase *)p)->tok_dir, e);
}

static int evaluate(rl_model *m, const rl_tokenizer *tok, rl_reward *reward, const rl_train_data *held, int max_new,
                    int *correct, rl_err *err)
{
    rl_engine *e;
    /* an engine for this evaluation alone: its pool holds the held-out prompts, nothing more */
    rl_engine_options eo = rl_engine_options_for_training(NULL, held->n, held->max_ids + max_new);
    if (rl_engine_create(&e, m, tok, &eo, err) != 0) return -1;
    rl_gen_params g = rl_gen_params_default();
    g.sample.temperature = 0;
    g.max_new_tokens = max_new;
    double mean;
    int rc = rl_grpo_evaluate(e, reward, held->prompts, held->n, &g, &mean, correct, err);
    rl_engine_free(e);
    return rc;
}

/* One phase's step loop with its metrics file; log gets the phase's samples file. 0, 1 (stopped)
 * or -1. */
static int run_phase(const rl_train_hooks *h, const char *label, int steps, const char *out, const char *ckpt,
                     rl_runlog *log, const rl_tokenizer *tok, const rl_loop_watch *watch, rl_err *err)
{
    char path[4096], prefix[32];
    snprintf(path, sizeof path, "%s/%s_metrics.jsonl", out, label);
    snprintf(prefix, sizeof prefix, "%s_", label);
    rl_metrics met;
    if (rl_metrics_open(&met, path, 0, err)) return -1;
    if (rl_runlog_open(log, out, prefix, RL_RUNLOG_DEFAULT_SAMPLES, 0, tok, err)) {
        rl_metrics_close(&met);
        return -1;
    }
    rl_loop_config lc = {label, steps, 0, ckpt, &met, watch, NULL};
    int rc = rl_train_loop(h, &lc, err);
    rl_metrics_close(&met);
    rl_runlog_close(log);
    return rc;
}

/* out/report.html: the plots and samples of the phases that ran. */
static int write_report(const rl_demo_config *c, rl_demo_result *r, rl_err *err)
{
    static const char *const labels[] = {"sft", "grpo"};
    char metrics[2][4096], samples[2][4096];
    rl_report_run runs[2];
    int n = 0;
    for (int i = 0; i < 2; i++) {
        if ((i == 0 ? c->sft_steps : c->grpo_steps) < 1) continue;
        snprintf(metrics[i], sizeof metrics[i], "%s/%s_metrics.jsonl", c->out, labels[i]);
        snprintf(samples[i], sizeof samples[i], "%s/%s_samples.jsonl", c->out, labels[i]);
        runs[n++] = (rl_report_run){labels[i], metrics[i], samples[i]};
    }
    if (rl_path_join(r->report, sizeof r->report, c->out, "report.html")) return rl_err_set(err, "%s: path too long", c->out);
    return rl_report_write(runs, n, r->report, err);
}

/* Writes the split and reads it back: SFT examples of the training problems, RL prompts of
 * both; *max_ids the longest SFT example of either. */
static int prepare_data(const rl_demo_config *c, const rl_tokenizer *tok, rl_train_data *sft, rl_train_data *train,
                        rl_train_data *held, int *max_ids, int *n_held, char *example, size_t example_size, rl_err *err)
{
    rl_arith_problem *probs;
    int n_probs;
    char train_path[4096], held_path[4096];
    if (rl_path_join(train_path, sizeof train_path, c->out, "train.jsonl") ||
        rl_path_join(held_path, sizeof held_path, c->out, "heldout.jsonl"))
        return rl_err_set(err, "%s: path too long", c->out);
    if (rl_arith_problems(&probs, &n_probs, c->lo, c->hi, (uint64_t)c->seed, err)) return -1;
    int rc = -1;
    if (c->held_out >= n_probs) {
        rl_err_set(err, "%d held-out problems leave none for training (%d in all)", c->held_out, n_probs);
        goto done;
    }
    *n_held = c->held_out;
    snprintf(example, example_size, "%s", probs[0].prompt);
    if (write_jsonl(held_path, probs, 0, c->held_out, err) || write_jsonl(train_path, probs, c->held_out, n_probs, err))
        goto done;
    rl_train_data held_sft = {0};
    if (rl_train_data_sft(sft, train_path, tok, NULL, 1 << 30, err) ||
        rl_train_data_sft(&held_sft, held_path, tok, NULL, 1 << 30, err) ||
        rl_train_data_rl(train, train_path, tok, 1 << 30, err) || rl_train_data_rl(held, held_path, tok, 1 << 30, err))
        goto done;
    *max_ids = sft->max_ids > held_sft.max_ids ? sft->max_ids : held_sft.max_ids;
    rl_train_data_free(&held_sft);
    rc = 0;
done:
    free(probs);
    return rc;
}

int rl_demo_run(const rl_demo_config *c, rl_ctx *ctx, const rl_loop_watch *watch, rl_demo_result *r, rl_err *err)
{
    memset(r, 0, sizeof *r);
    if (rl_path_join(r->sft_dir, sizeof r->sft_dir, c->out, "sft") ||
        rl_path_join(r->grpo_dir, sizeof r->grpo_dir, c->out, "grpo"))
        return rl_err_set(err, "%s: path too long", c->out);
    char tok_dir[4096];
    snprintf(tok_dir, sizeof tok_dir, "%s", c->tokenizer);
    char *slash = strrchr(tok_dir, '/');
    if (slash) *slash = '\0';
    else snprintf(tok_dir, sizeof tok_dir, ".");
    rl_tokenizer *tok = NULL;
    rl_reward *reward = NULL;
    rl_model model;
    int have_model = 0, rc = -1, max_ids = 0;
    rl_train_data sft_data = {0}, train = {0}, held = {0};
    int32_t eos[RL_TOK_MAX_EOS];
    rl_model_config cfg;
    if (rl_tok_load(&tok, c->tokenizer, err) || rl_reward_create(&reward, "math", NULL, err) || rl_mkdir_p(c->out, err))
        goto done;
    if (rl_tok_eos_ids(tok, eos) == 0) {
        rl_err_set(err, "%s: no end-of-turn token", c->tokenizer);
        goto done;
    }
    if (make_config(&cfg, c, rl_tok_vocab_size(tok), eos[0], err) ||
        rl_model_init_random(&model, ctx, &cfg, (uint64_t)c->seed, err))
        goto done;
    have_model = 1;
    if (prepare_data(c, tok, &sft_data, &train, &held, &max_ids, &r->n_held, r->example, sizeof r->example, err))
        goto done;
    r->n_train = train.n;
    rl_loop_note(watch, "Qwen3 model with %.2fM parameters (%d layers, hidden %d), vocabulary %d, on %s (%s)",
                 (double)model.n_elems / 1e6, c->layers, c->hidden, cfg.vocab_size, rl_backend_name(ctx),
                 rl_ctx_precision_name(ctx));
    rl_loop_note(watch, "task \"%s\" -> \"%s\": %d training problems, %d held out", r->example,
                 held.prompts[0].answer, r->n_train, r->n_held);

    rl_sft_config sc = rl_sft_defaults();
    sc.max_tokens = max_ids * c->sft_batch;
    sc.seed = (uint64_t)c->seed;
    sc.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, c->sft_lr, c->sft_steps / 20, c->sft_steps, 0.1};
    sc.optim.weight_decay = 0.01;
    rl_sft sft;
    rl_runlog log;
    if (rl_sft_create(&sft, &model, sft_data.sft, sft_data.n, &sc, err)) goto done;
    sft.log = &log;
    phase ph = {&sft, NULL, tok_dir};
    rl_train_hooks hs = {&ph, sft_step, sft_save, sft_done, NULL};
    rc = run_phase(&hs, "sft", c->sft_steps, c->out, r->sft_dir, &log, tok, watch, err);
    rl_sft_free(&sft);
    if (rc != 0) goto done;
    rc = -1;
    if (evaluate(&model, tok, reward, &held, c->max_new, &r->sft_correct, err)) goto done;
    rl_loop_note(watch, "after SFT: held-out accuracy %d/%d = %.1f%%", r->sft_correct, r->n_held,
                 100.0 * r->sft_correct / r->n_held);

    rl_grpo_config gc = rl_grpo_defaults();
    gc.prompts_per_step = c->prompts;
    gc.group_size = c->group;
    gc.gen.max_new_tokens = c->max_new;
    gc.gen.sample.temperature = (float)c->temperature;
    gc.max_tokens = (max_ids + c->max_new) * c->prompts * c->group;
    gc.seed = (uint64_t)c->seed;
    gc.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, c->grpo_lr, c->grpo_steps / 20, c->grpo_steps, 0.1};
    rl_grpo grpo;
    if (rl_grpo_create(&grpo, &model, NULL, tok, reward, train.prompts, train.n, &gc, err)) goto done;
    grpo.log = &log;
    ph.grpo = &grpo;
    rl_train_hooks hg = {&ph, grpo_step, grpo_save, grpo_done, NULL};
    rc = run_phase(&hg, "grpo", c->grpo_steps, c->out, r->grpo_dir, &log, tok, watch, err);
    rl_grpo_free(&grpo);
    if (rc != 0) goto done;
    rc = -1;
    if (evaluate(&model, tok, reward, &held, c->max_new, &r->grpo_correct, err)) goto done;
    rl_loop_note(watch, "after GRPO: held-out accuracy %d/%d = %.1f%%", r->grpo_correct, r->n_held,
                 100.0 * r->grpo_correct / r->n_held);
    if (write_report(c, r, err)) goto done;
    rc = 0;
done:
    rl_train_data_free(&sft_data);
    rl_train_data_free(&train);
    rl_train_data_free(&held);
    if (have_model) rl_model_free(&model);
    rl_reward_free(reward);
    rl_tok_free(tok);
    return rc;
}
