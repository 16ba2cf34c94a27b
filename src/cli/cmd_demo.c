/* cmd_demo.c — `rlc demo`: the whole pipeline on a laptop CPU in a few minutes.
 *
 * 1. a tiny Qwen3 model (random init, a few million parameters) with the demo tokenizer;
 * 2. an addition task built in C ("What is 23+58?" -> "81"), split into training and held-out
 *    problems, in the Qwen chat format;
 * 3. a short SFT run (deliberately short: the model half-learns the task);
 * 4. GRPO on the training prompts with the math reward;
 * 5. greedy accuracy on the held-out problems after SFT and after GRPO.
 * Both checkpoints are Hugging Face model directories (with the tokenizer) under --out, with
 * the split as train.jsonl / heldout.jsonl (tools/check_demo.py re-scores it with transformers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ctx.h"
#include "cli/backend_opt.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/train_common.h"
#include "cli/train_loop.h"
#include "core/file.h"
#include "core/timer.h"
#include "engine/generate.h"
#include "io/tokenizer.h"
#include "reward/reward.h"
#include "train/arith.h"
#include "train/grpo.h"
#include "train/sft.h"

typedef struct demo_opts {
    const char *out, *tokenizer, *device;
    int seed, threads, lo, hi, held_out;
    int hidden, layers, heads, kv_heads, head_dim, ffn;
    int sft_steps, sft_batch, grpo_steps, prompts, group, max_new;
    double sft_lr, grpo_lr, temperature;
} demo_opts;

typedef struct encoded {
    int32_t *ids;     /* prompt then completion */
    int n_prompt, n_ids;
} encoded;

static int fail(const char *msg)
{
    fprintf(stderr, "rlc demo: %s\n", msg);
    return 1;
}

static int make_config(rl_model_config *cfg, const demo_opts *o, int vocab, int eos, rl_err *err)
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

/* Writes problems [from, to) as RL dataset lines {"prompt": [user message], "answer"}. */
static int write_jsonl(const char *dir, const char *name, const rl_arith_problem *p, int from, int to, rl_err *err)
{
    char path[4096];
    if (rl_path_join(path, sizeof path, dir, name)) return rl_err_set(err, "%s/%s: path too long", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return rl_err_set(err, "%s: cannot write", path);
    for (int i = from; i < to; i++)
        fprintf(f, "{\"prompt\": [{\"role\": \"user\", \"content\": \"%s\"}], \"answer\": \"%s\"}\n", p[i].prompt,
                p[i].answer);
    return fclose(f) == 0 ? 0 : rl_err_set(err, "%s: write failed", path);
}

/* Chat-formats and encodes each problem: prompt ids, then the answer and <|im_end|>. */
static int encode_all(const rl_tokenizer *tok, const rl_arith_problem *p, int n, encoded *out, rl_err *err)
{
    for (int i = 0; i < n; i++) {
        rl_chat_message msg = {"user", p[i].prompt};
        char *prompt, answer[32];
        if (rl_tok_chat_format(&msg, 1, 1, &prompt, err) != 0) return -1;
        snprintf(answer, sizeof answer, "%s<|im_end|>", p[i].answer);
        int32_t *pi, *ai;
        int np, na;
        int rc = rl_tok_encode(tok, prompt, strlen(prompt), &pi, &np, err);
        free(prompt);
        if (rc != 0) return -1;
        if (rl_tok_encode(tok, answer, strlen(answer), &ai, &na, err) != 0) {
            free(pi);
            return -1;
        }
        out[i].ids = malloc((size_t)(np + na) * sizeof(int32_t));
        if (!out[i].ids) {
            free(pi), free(ai);
            return rl_err_oom(err, "demo data", 0);
        }
        memcpy(out[i].ids, pi, (size_t)np * sizeof(int32_t));
        memcpy(out[i].ids + np, ai, (size_t)na * sizeof(int32_t));
        out[i].n_prompt = np;
        out[i].n_ids = np + na;
        free(pi), free(ai);
    }
    return 0;
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

static int evaluate(rl_model *m, const rl_tokenizer *tok, rl_reward *reward, const rl_grpo_prompt *prompts, int n,
                    int max_new, int *correct, rl_err *err)
{
    rl_engine *e;
    if (rl_engine_create(&e, m, tok, NULL, err) != 0) return -1;
    rl_gen_params g = rl_gen_params_default();
    g.sample.temperature = 0;
    g.max_new_tokens = max_new;
    double mean;
    int rc = rl_grpo_evaluate(e, reward, prompts, n, &g, &mean, correct, err);
    rl_engine_free(e);
    return rc;
}

int rl_cmd_demo(int argc, char **argv)
{
    demo_opts o = {"runs/demo", "examples/demo/tokenizer.json", "auto", 1, 0, 0, 19, 80,
                   256, 4, 8, 4, 32, 768, 160, 32, 250, 8, 8, 6, 3e-3, 1.5e-4, 0.3};
    rl_opt opts[] = {
        {"out", RL_OPT_STRING, &o.out, "output directory (sft/ and grpo/ checkpoints, metrics)", 0},
        {"tokenizer", RL_OPT_STRING, &o.tokenizer, "tokenizer.json (its directory's tokenizer files are copied)", 0},
        {"seed", RL_OPT_INT, &o.seed, "seed for the model, the data split, sampling", 0},
        {"threads", RL_OPT_INT, &o.threads, "CPU threads (0 = OpenMP default)", 0},
        {"device", RL_OPT_STRING, &o.device, RL_BACKEND_OPT_HELP_SHORT, 0},
        {"lo", RL_OPT_INT, &o.lo, "smallest operand", 0},
        {"hi", RL_OPT_INT, &o.hi, "largest operand", 0},
        {"held-out", RL_OPT_INT, &o.held_out, "problems held out for evaluation", 0},
        {"hidden", RL_OPT_INT, &o.hidden, "model: hidden size", 0},
        {"layers", RL_OPT_INT, &o.layers, "model: layers", 0},
        {"heads", RL_OPT_INT, &o.heads, "model: attention heads", 0},
        {"kv-heads", RL_OPT_INT, &o.kv_heads, "model: key/value heads", 0},
        {"head-dim", RL_OPT_INT, &o.head_dim, "model: head dimension", 0},
        {"ffn", RL_OPT_INT, &o.ffn, "model: MLP intermediate size", 0},
        {"sft-steps", RL_OPT_INT, &o.sft_steps, "SFT steps", 0},
        {"sft-batch", RL_OPT_INT, &o.sft_batch, "SFT examples per step", 0},
        {"sft-lr", RL_OPT_DOUBLE, &o.sft_lr, "SFT peak learning rate (cosine, warmup 5%)", 0},
        {"grpo-steps", RL_OPT_INT, &o.grpo_steps, "GRPO steps", 0},
        {"prompts", RL_OPT_INT, &o.prompts, "GRPO prompts per step", 0},
        {"group", RL_OPT_INT, &o.group, "GRPO completions per prompt", 0},
        {"grpo-lr", RL_OPT_DOUBLE, &o.grpo_lr, "GRPO peak learning rate (cosine, warmup 5%)", 0},
        {"temperature", RL_OPT_DOUBLE, &o.temperature, "GRPO sampling temperature", 0},
        {"max-new-tokens", RL_OPT_INT, &o.max_new, "tokens generated per completion", 0},
        {NULL, 0, NULL, NULL, 0},
    };
    int prc = rl_opts_parse("demo", opts, argc, argv,
                            "usage: rlc demo [options]\n\n"
                            "Trains a tiny Qwen3 model from scratch on CPU: SFT on two-number addition, then GRPO\n"
                            "with the math reward, and prints held-out greedy accuracy after each.\n\n");
    if (prc != 0) return prc < 0 ? 2 : 0;
    if (o.held_out < 1 || o.sft_batch < 1 || o.sft_steps < 1 || o.grpo_steps < 0) return fail("bad sizes (see --help)");
    double t_start = rl_time_now();
    rl_err err;
    rl_ctx ctx;
    rl_tokenizer *tok = NULL;
    rl_reward *reward = NULL;
    rl_model model;
    memset(&model, 0, sizeof model);
    rl_arith_problem *probs = NULL;
    encoded *enc = NULL;
    rl_sft_example *sft_ex = NULL;
    rl_grpo_prompt *gp = NULL;
    int n_probs = 0, rc = 1, have_model = 0;
    char tok_dir[4096], sft_dir[4096], grpo_dir[4096], metrics_path[4096];
    snprintf(tok_dir, sizeof tok_dir, "%s", o.tokenizer);
    char *slash = strrchr(tok_dir, '/');
    if (slash) *slash = '\0';
    else snprintf(tok_dir, sizeof tok_dir, ".");
    snprintf(sft_dir, sizeof sft_dir, "%s/sft", o.out);
    snprintf(grpo_dir, sizeof grpo_dir, "%s/grpo", o.out);
    if (rl_cli_ctx("demo", &ctx, o.device, o.threads) != 0) return 1;
    if (rl_tok_load(&tok, o.tokenizer, &err) || rl_reward_create(&reward, "math", NULL, &err) ||
        rl_mkdir_p(o.out, &err))
        goto done;
    int32_t eos = rl_tok_token_id(tok, "<|im_end|>");
    rl_model_config cfg;
    if (make_config(&cfg, &o, rl_tok_vocab_size(tok), eos, &err) ||
        rl_model_init_random(&model, &ctx, &cfg, (uint64_t)o.seed, &err))
        goto done;
    have_model = 1;
    if (rl_arith_problems(&probs, &n_probs, o.lo, o.hi, (uint64_t)o.seed, &err)) goto done;
    if (o.held_out >= n_probs) {
        rl_err_set(&err, "--held-out %d leaves no training problems (%d in all)", o.held_out, n_probs);
        goto done;
    }
    enc = calloc((size_t)n_probs, sizeof *enc);
    sft_ex = calloc((size_t)n_probs, sizeof *sft_ex);
    gp = calloc((size_t)n_probs, sizeof *gp);
    if (!enc || !sft_ex || !gp) {
        rl_err_oom(&err, "demo data", 0);
        goto done;
    }
    if (encode_all(tok, probs, n_probs, enc, &err)) goto done;
    int max_len = 0;
    for (int i = 0; i < n_probs; i++) {
        sft_ex[i] = (rl_sft_example){enc[i].ids, enc[i].n_ids, enc[i].n_prompt};
        gp[i] = (rl_grpo_prompt){enc[i].ids, enc[i].n_prompt, probs[i].prompt, probs[i].answer, NULL};
        if (enc[i].n_ids > max_len) max_len = enc[i].n_ids;
    }
    int n_held = o.held_out, n_train = n_probs - n_held;
    if (write_jsonl(o.out, "heldout.jsonl", probs, 0, n_held, &err) ||
        write_jsonl(o.out, "train.jsonl", probs, n_held, n_probs, &err))
        goto done;
    fprintf(stderr,
            "rlc demo: Qwen3 model with %.2fM parameters (%d layers, hidden %d), vocabulary %d, on %s\n"
            "rlc demo: task \"%s\" -> \"%s\": %d training problems, %d held out\n",
            (double)model.n_elems / 1e6, o.layers, o.hidden, cfg.vocab_size, rl_backend_name(&ctx), probs[0].prompt, probs[0].answer,
            n_train, n_held);

    /* ---- SFT ---- */
    rl_sft_config sc = rl_sft_defaults();
    sc.max_tokens = max_len * o.sft_batch;
    sc.seed = (uint64_t)o.seed;
    sc.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, o.sft_lr, o.sft_steps / 20, o.sft_steps, 0.1};
    sc.optim.weight_decay = 0.01;
    rl_sft sft;
    if (rl_sft_create(&sft, &model, sft_ex + n_held, n_train, &sc, &err)) goto done;
    snprintf(metrics_path, sizeof metrics_path, "%s/sft_metrics.jsonl", o.out);
    rl_metrics met;
    if (rl_metrics_open(&met, metrics_path, 0, &err)) {
        rl_sft_free(&sft);
        goto done;
    }
    phase ph = {&sft, NULL, tok_dir};
    rl_train_hooks hs = {&ph, sft_step, sft_save, sft_done};
    rl_loop_config lc = {"sft", o.sft_steps, 0, sft_dir, &met};
    int lrc = rl_train_loop(&hs, &lc, &err);
    rl_metrics_close(&met);
    rl_sft_free(&sft);
    if (lrc != 0) {
        if (lrc > 0) rc = 130;
        goto done;
    }
    int sft_correct = 0, grpo_correct = 0;
    if (evaluate(&model, tok, reward, gp, n_held, o.max_new, &sft_correct, &err)) goto done;
    fprintf(stderr, "rlc demo: after SFT: held-out accuracy %d/%d = %.1f%%\n", sft_correct, n_held,
            100.0 * sft_correct / n_held);

    /* ---- GRPO ---- */
    rl_grpo_config gc = rl_grpo_defaults();
    gc.prompts_per_step = o.prompts;
    gc.group_size = o.group;
    gc.gen.max_new_tokens = o.max_new;
    gc.gen.sample.temperature = (float)o.temperature;
    gc.max_tokens = (max_len + o.max_new) * o.prompts * o.group;
    gc.seed = (uint64_t)o.seed;
    gc.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, o.grpo_lr, o.grpo_steps / 20, o.grpo_steps, 0.1};
    rl_grpo grpo;
    if (rl_grpo_create(&grpo, &model, NULL, tok, reward, gp + n_held, n_train, &gc, &err)) goto done;
    snprintf(metrics_path, sizeof metrics_path, "%s/grpo_metrics.jsonl", o.out);
    if (rl_metrics_open(&met, metrics_path, 0, &err)) {
        rl_grpo_free(&grpo);
        goto done;
    }
    ph.grpo = &grpo;
    rl_train_hooks hg = {&ph, grpo_step, grpo_save, grpo_done};
    rl_loop_config lg = {"grpo", o.grpo_steps, 0, grpo_dir, &met};
    lrc = rl_train_loop(&hg, &lg, &err);
    rl_metrics_close(&met);
    rl_grpo_free(&grpo);
    if (lrc != 0) {
        if (lrc > 0) rc = 130;
        goto done;
    }
    if (evaluate(&model, tok, reward, gp, n_held, o.max_new, &grpo_correct, &err)) goto done;
    fprintf(stderr, "rlc demo: after GRPO: held-out accuracy %d/%d = %.1f%%\n", grpo_correct, n_held,
            100.0 * grpo_correct / n_held);
    printf("\nheld-out greedy accuracy on %d problems (%s ...):\n"
           "  after SFT  (%d steps): %5.1f%%   %s\n"
           "  after GRPO (%d steps): %5.1f%%   %s\n"
           "total time %.1f s; metrics in %s/{sft,grpo}_metrics.jsonl\n",
           n_held, probs[0].prompt, o.sft_steps, 100.0 * sft_correct / n_held, sft_dir, o.grpo_steps,
           100.0 * grpo_correct / n_held, grpo_dir, rl_time_now() - t_start, o.out);
    if (grpo_correct <= sft_correct) fprintf(stderr, "rlc demo: warning: GRPO did not improve on SFT this time\n");
    rc = 0;
done:
    if (rc == 1) fprintf(stderr, "rlc demo: %s\n", err.msg);
    for (int i = 0; enc && i < n_probs; i++) free(enc[i].ids);
    free(enc), free(sft_ex), free(gp), free(probs);
    if (have_model) rl_model_free(&model);
    rl_reward_free(reward);
    rl_tok_free(tok);
    rl_ctx_free(&ctx);
    rl_opts_free();
    return rc;
}
