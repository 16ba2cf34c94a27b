/* demo_kernel.c — see demo_kernel.h. Both phases go through rl_train_run, so the demo runs
 * exactly what `rlc sft` and `rlc grpo --reward kernel --kernel-memo` run. */
#include "train/demo/demo_kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/config.h"
#include "io/tokenizer.h"
#include "reward/kernel_env/attempts.h"
#include "train/checkpoint.h"
#include "train/run.h"

static const char *const task_names[RL_DEMO_KERNEL_TASKS] = {"rowsum_naive", "swiglu_2k", "transpose_naive"};
static const char *const variant_names[RL_DEMO_KERNEL_TASKS][RL_DEMO_KERNEL_VARIANTS] = {
    {"naive", "warp", "shared", "wrong"}, {"naive", "fused", "vec4", "wrong"}, {"naive", "shared", "unpadded", "wrong"}};

rl_demo_kernel_config rl_demo_kernel_defaults(void)
{
    return (rl_demo_kernel_config){.out = "runs/demo-kernel", .tokenizer = "examples/demo/tokenizer.json",
                                   .variants = "examples/demo_kernel", .tasks_dir = "tests/fixtures/kernel_env/tasks",
                                   .seed = 1, .hidden = 256, .layers = 4, .heads = 8, .kv_heads = 4, .head_dim = 32,
                                   .ffn = 768, .sft_steps = 1000, .grpo_steps = 30, .group = 8, .max_new = 900,
                                   .sft_lr = 2e-3, .grpo_lr = 5e-5, .temperature = 0.7, .gpu_memory = 0.3,
                                   .loss_norm = RL_NORM_SEQUENCE,
                                   .kernel = {.keep_upto = -1}};
}

/* The variants' sources, [task][variant] (malloc'd). */
typedef struct sources {
    char *text[RL_DEMO_KERNEL_TASKS][RL_DEMO_KERNEL_VARIANTS];
} sources;

static void sources_free(sources *s)
{
    for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++)
        for (int v = 0; v < RL_DEMO_KERNEL_VARIANTS; v++) free(s->text[t][v]);
}

static int sources_load(const rl_demo_kernel_config *c, sources *s, rl_err *err)
{
    memset(s, 0, sizeof *s);
    for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++)
        for (int v = 0; v < RL_DEMO_KERNEL_VARIANTS; v++) {
            char path[4200];
            size_t len;
            snprintf(path, sizeof path, "%s/%s.%s.cu", c->variants, task_names[t], variant_names[t][v]);
            if (rl_file_read_all(path, &s->text[t][v], &len, err)) {
                sources_free(s);
                return -1;
            }
        }
    return 0;
}

/* Equal up to trailing whitespace (the extractor keeps a block's text without its fence). */
static int same_code(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    while (la && (a[la - 1] == '\n' || a[la - 1] == ' ')) la--;
    while (lb && (b[lb - 1] == '\n' || b[lb - 1] == ' ')) lb--;
    return la == lb && !memcmp(a, b, la);
}

static void json_string(FILE *f, const char *s)
{
    cJSON *j = cJSON_CreateString(s);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    fputs(text ? text : "\"\"", f);
    free(text);
    cJSON_Delete(j);
}

static void prompt_of(int t, char *out, size_t size)
{
    snprintf(out, size, "Write a fast CUDA kernel for task %s.", task_names[t]);
}

/* OUT/sft.jsonl (each variant once per task: SFT samples them equally) and OUT/tasks.jsonl. */
static int write_data(const rl_demo_kernel_config *c, const sources *s, const char *sft, const char *tasks, rl_err *err)
{
    FILE *f = fopen(sft, "w"), *g = fopen(tasks, "w");
    if (!f || !g) {
        if (f) fclose(f);
        if (g) fclose(g);
        return rl_err_set(err, "%s: cannot write the demo data", c->out);
    }
    for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++) {
        char prompt[128], body[8192];
        prompt_of(t, prompt, sizeof prompt);
        for (int v = 0; v < RL_DEMO_KERNEL_VARIANTS; v++) {
            snprintf(body, sizeof body, "```cuda\n%s```", s->text[t][v]);
            fputs("{\"prompt\": [{\"role\": \"user\", \"content\": ", f);
            json_string(f, prompt);
            fputs("}], \"completion\": ", f);
            json_string(f, body);
            fputs("}\n", f);
        }
        fprintf(g, "{\"task\": \"%s/%s\", \"prompt\": ", c->tasks_dir, task_names[t]);
        json_string(g, prompt);
        fputs("}\n", g);
    }
    int bad = fclose(f) != 0;
    bad |= fclose(g) != 0;
    return bad ? rl_err_set(err, "%s: writing the demo data failed", c->out) : 0;
}

/* OUT/init: the random model with the tokenizer's files. */
static int make_model(const rl_demo_kernel_config *c, rl_ctx *ctx, const char *dir, const char *tok_dir, rl_err *err)
{
    rl_tokenizer *tok;
    if (rl_tok_load(&tok, c->tokenizer, err)) return -1;
    int32_t eos[RL_TOK_MAX_EOS];
    int n_eos = rl_tok_eos_ids(tok, eos), vocab = rl_tok_vocab_size(tok);
    rl_tok_free(tok);
    if (n_eos == 0) return rl_err_set(err, "%s: no end-of-turn token", c->tokenizer);
    char text[1024];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": %d, "
             "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
             "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
             "\"max_position_embeddings\": 1024, \"rope_theta\": 10000.0, \"rms_norm_eps\": 1e-6, "
             "\"tie_word_embeddings\": true, \"eos_token_id\": %d, \"bos_token_id\": null, "
             "\"hidden_act\": \"silu\", \"attention_bias\": false, \"torch_dtype\": \"float32\"}",
             vocab, c->hidden, c->ffn, c->layers, c->heads, c->kv_heads, c->head_dim, eos[0]);
    rl_model_config cfg;
    rl_model m;
    if (rl_config_parse(&cfg, text, strlen(text), "demo-kernel config", err) ||
        rl_model_init_random(&m, ctx, &cfg, (uint64_t)c->seed, err))
        return -1;
    int rc = rl_model_save(&m, dir, RL_F32, err) || rl_checkpoint_copy_tokenizer(tok_dir, dir, err) ? -1 : 0;
    rl_model_free(&m);
    return rc;
}

int rl_demo_kernel_summarize(const rl_demo_kernel_config *c, const char *attempts, rl_demo_kernel_result *r, rl_err *err)
{
    memset(r, 0, sizeof *r);
    sources s;
    cJSON *arr;
    if (sources_load(c, &s, err)) return -1;
    if (rl_kattempts_load(attempts, &arr, NULL, err)) {
        sources_free(&s);
        return -1;
    }
    for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++) {
        snprintf(r->task[t], sizeof r->task[t], "%s", task_names[t]);
        for (int v = 0; v < RL_DEMO_KERNEL_VARIANTS; v++) snprintf(r->variant[t][v], 16, "%s", variant_names[t][v]);
    }
    int max_step = 0;
    for (const cJSON *a = arr->child; a; a = a->next) { /* best speedups first */
        int step = (int)cJSON_GetObjectItemCaseSensitive(a, "step")->valuedouble;
        if (step > max_step) max_step = step;
        const char *task = cJSON_GetObjectItemCaseSensitive(a, "task")->valuestring;
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(a, "speedup"), *src = cJSON_GetObjectItemCaseSensitive(a, "source");
        for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++) {
            if (!strstr(task, task_names[t]) || !cJSON_IsNumber(sp)) continue;
            if (sp->valuedouble > r->best[t]) r->best[t] = sp->valuedouble;
            for (int v = 0; v < RL_DEMO_KERNEL_VARIANTS; v++)
                if (cJSON_IsString(src) && same_code(src->valuestring, s.text[t][v]) && r->speedup[t][v] == 0)
                    r->speedup[t][v] = sp->valuedouble;
        }
    }
    r->n_steps = max_step < 512 ? max_step : 512;
    for (const cJSON *a = arr->child; a; a = a->next) {
        int step = (int)cJSON_GetObjectItemCaseSensitive(a, "step")->valuedouble;
        if (step < 1 || step > r->n_steps) continue;
        rl_demo_kernel_step *st = &r->steps[step - 1];
        const char *task = cJSON_GetObjectItemCaseSensitive(a, "task")->valuestring;
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(a, "speedup"), *src = cJSON_GetObjectItemCaseSensitive(a, "source");
        const cJSON *rw = cJSON_GetObjectItemCaseSensitive(a, "reward");
        st->n++;
        st->reward_sum += cJSON_IsNumber(rw) ? rw->valuedouble : 0;
        st->n_correct += cJSON_IsNumber(sp);
        for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++) {
            if (!strstr(task, task_names[t])) continue;
            if (cJSON_IsNumber(sp) && sp->valuedouble >= 0.9 * r->best[t]) st->n_best++;
            int v = 0;
            while (v < RL_DEMO_KERNEL_VARIANTS && !(cJSON_IsString(src) && same_code(src->valuestring, s.text[t][v]))) v++;
            if (step <= 3) r->first[t][v]++;
            if (step > r->n_steps - 3) r->last[t][v]++;
        }
    }
    cJSON_Delete(arr);
    sources_free(&s);
    return 0;
}

/* The loss of the last line of DIR/metrics.jsonl, or NAN. */
static double last_loss(const char *dir)
{
    char path[4400], *text = NULL;
    size_t len = 0;
    rl_err e;
    if (rl_path_join(path, sizeof path, dir, "metrics.jsonl") || rl_file_read_all(path, &text, &len, &e)) return NAN;
    while (len && text[len - 1] == '\n') text[--len] = '\0';
    char *line = strrchr(text, '\n');
    cJSON *o = cJSON_Parse(line ? line + 1 : text);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "loss");
    double v = cJSON_IsNumber(l) ? l->valuedouble : NAN;
    cJSON_Delete(o);
    free(text);
    return v;
}

int rl_demo_kernel_run(const rl_demo_kernel_config *c, rl_ctx *ctx, const rl_loop_watch *watch,
                       rl_demo_kernel_result *r, rl_err *err)
{
    char init[4200], sft_data[4200], tasks[4200], sft_out[4200], sft_model[4200], grpo_out[4200], attempts[4200];
    char tok_dir[4096];
    snprintf(tok_dir, sizeof tok_dir, "%s", c->tokenizer);
    char *slash = strrchr(tok_dir, '/');
    if (slash) *slash = '\0';
    else snprintf(tok_dir, sizeof tok_dir, ".");
    snprintf(init, sizeof init, "%s/init", c->out);
    snprintf(sft_data, sizeof sft_data, "%s/sft.jsonl", c->out);
    snprintf(tasks, sizeof tasks, "%s/tasks.jsonl", c->out);
    snprintf(sft_out, sizeof sft_out, "%s/sft", c->out);
    snprintf(sft_model, sizeof sft_model, "%s/sft/model", c->out);
    snprintf(grpo_out, sizeof grpo_out, "%s/grpo", c->out);
    snprintf(attempts, sizeof attempts, "%s/grpo/attempts.jsonl", c->out);
    sources s;
    if (sources_load(c, &s, err)) return -1;
    int rc = rl_mkdir_p(c->out, err) || write_data(c, &s, sft_data, tasks, err) || make_model(c, ctx, init, tok_dir, err)
                 ? -1
                 : 0;
    sources_free(&s);
    if (rc) return -1;
    rl_loop_note(watch, "tiny Qwen3 (%d layers, hidden %d) taught %d kernel variants of %d tasks by SFT, then GRPO "
                        "with the kernel reward; runs in %s",
                 c->layers, c->hidden, RL_DEMO_KERNEL_TASKS * RL_DEMO_KERNEL_VARIANTS, RL_DEMO_KERNEL_TASKS, c->out);
    rl_run_config sc = {.kind = RL_RUN_SFT, .model_dir = init, .data = sft_data, .out = sft_out,
                        .steps = c->sft_steps, .max_len = 1024, .sft = rl_sft_defaults()};
    sc.sft.max_tokens = 4 * 1024;
    sc.sft.seed = (uint64_t)c->seed;
    sc.sft.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, c->sft_lr, c->sft_steps / 20, c->sft_steps, 0.05};
    sc.sft.optim.weight_decay = 0.0;
    rc = rl_train_run(ctx, &sc, watch, err);
    if (rc != 0) return rc;
    double loss = last_loss(sft_out);
    if (loss > 0.02)
        rl_loop_note(watch, "warning: SFT ended at loss %.4f: the kernels are not memorised, most samples will not "
                            "compile and GRPO has little to learn from (more --sft-steps)", loss);
    rl_run_config gc = {.kind = RL_RUN_GRPO, .model_dir = sft_model, .data = tasks, .out = grpo_out,
                        .steps = c->grpo_steps, .max_len = 128, .reward = "kernel", .grpo = rl_grpo_defaults()};
    gc.reward_options.kernel = c->kernel;
    gc.reward_options.kernel.memo = 1;
    gc.grpo.prompts_per_step = RL_DEMO_KERNEL_TASKS;
    gc.grpo.group_size = c->group;
    gc.grpo.gen.max_new_tokens = c->max_new;
    gc.grpo.gen.sample.temperature = (float)c->temperature;
    gc.grpo.max_tokens = 8192;
    gc.grpo.seed = (uint64_t)c->seed;
    gc.grpo.engine.gpu_memory_utilization = c->gpu_memory;
    gc.grpo.optim.schedule = (rl_lr_schedule){RL_LR_CONSTANT, c->grpo_lr, 0, c->grpo_steps, 1.0};
    gc.grpo.loss_norm = (rl_loss_norm)c->loss_norm;
    gc.grpo.kl_beta = (float)c->kl_beta; /* the reference: the SFT model GRPO starts from */
    rc = rl_train_run(ctx, &gc, watch, err);
    if (rc != 0) return rc;
    return rl_demo_kernel_summarize(c, attempts, r, err);
}
