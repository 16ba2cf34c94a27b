/* cmd_sft.c — `rlc sft`: supervised fine-tuning of a Hugging Face model on a JSONL file.
 * Writes OUT/model (checkpoint, HF layout) and OUT/metrics.jsonl; see train_common.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/backend_opt.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/train_common.h"
#include "cli/train_data.h"
#include "cli/train_loop.h"
#include "core/file.h"
#include "train/sft.h"

typedef struct sft_run {
    rl_sft t;
    const char *tok_dir;
    cJSON *options;
} sft_run;

static int step(void *r, rl_step_stats *s, rl_err *e) { return rl_sft_step(&((sft_run *)r)->t, s, e); }
static int64_t done(void *r) { return ((sft_run *)r)->t.state.step; }
static int save(void *r, const char *dir, rl_err *e)
{
    sft_run *run = r;
    return rl_sft_save(&run->t, dir, run->options, run->tok_dir, e);
}

static const char usage_head[] =
    "usage: rlc sft --model DIR --data FILE.jsonl --out DIR [options]\n\n"
    "Supervised fine-tuning: cross-entropy on completion tokens only, examples packed (no padding)\n"
    "into micro-batches of at most --max-tokens tokens. Data lines: {\"prompt\", \"completion\"} (text or\n"
    "chat messages) or {\"messages\": [...]} (learns the last assistant turn). Writes OUT/model (an HF\n"
    "model directory with the tokenizer, optimizer and trainer state) and OUT/metrics.jsonl.\n"
    "Ctrl-C saves a checkpoint after the current step; --resume OUT/model continues (bit-exact).\n\n";

int rl_cmd_sft(int argc, char **argv)
{
    const char *model_dir = NULL, *data = NULL, *out = NULL, *resume = NULL, *tokenizer = NULL;
    const char *device = "auto", *schedule = "cosine";
    int64_t steps = 0;
    int max_tokens = 4096, grad_accum = 1, max_len = 2048, warmup = 0, save_every = 0, threads = 0;
    int seed = 1234, shuffle = 1, recompute = 0;
    double epochs = 1, lr = 2e-5, min_lr = 0, wd = 0.01, clip = 1.0, beta1 = 0.9, beta2 = 0.999;
    rl_opt opts[] = {
        {"model", RL_OPT_STRING, &model_dir, "model directory to start from (HF layout)", 0},
        {"data", RL_OPT_STRING, &data, "training data (JSON lines)", 0},
        {"out", RL_OPT_STRING, &out, "output directory", 0},
        {"resume", RL_OPT_STRING, &resume, "continue from a checkpoint (OUT/model of an earlier run)", 0},
        {"tokenizer", RL_OPT_STRING, &tokenizer, "tokenizer.json (default: the model's)", 0},
        {"steps", RL_OPT_I64, &steps, "optimizer steps (0: from --epochs)", 0},
        {"epochs", RL_OPT_DOUBLE, &epochs, "passes over the data when --steps is 0", 0},
        {"max-tokens", RL_OPT_INT, &max_tokens, "tokens per packed micro-batch", 0},
        {"grad-accum", RL_OPT_INT, &grad_accum, "micro-batches per optimizer step", 0},
        {"max-len", RL_OPT_INT, &max_len, "cut examples to this many tokens", 0},
        {"lr", RL_OPT_DOUBLE, &lr, "peak learning rate", 0},
        {"schedule", RL_OPT_STRING, &schedule, "constant, linear or cosine (with warmup)", 0},
        {"warmup", RL_OPT_INT, &warmup, "warmup steps", 0},
        {"min-lr-ratio", RL_OPT_DOUBLE, &min_lr, "cosine floor as a fraction of --lr", 0},
        {"weight-decay", RL_OPT_DOUBLE, &wd, "AdamW weight decay (not on norms and biases)", 0},
        {"beta1", RL_OPT_DOUBLE, &beta1, "AdamW beta1", 0},
        {"beta2", RL_OPT_DOUBLE, &beta2, "AdamW beta2", 0},
        {"max-grad-norm", RL_OPT_DOUBLE, &clip, "clip the global gradient norm (0 = off)", 0},
        {"seed", RL_OPT_INT, &seed, "seed of the data order", 0},
        {"shuffle", RL_OPT_FLAG, &shuffle, "shuffle the data every epoch (--no-shuffle: file order)", 0},
        {"recompute", RL_OPT_FLAG, &recompute, "activation checkpointing (less memory, more compute)", 0},
        {"save-every", RL_OPT_INT, &save_every, "checkpoint every N steps (0 = at the end only)", 0},
        {"device", RL_OPT_STRING, &device, RL_BACKEND_OPT_HELP_SHORT, 0},
        {"threads", RL_OPT_INT, &threads, "CPU threads (0 = OpenMP default)", 0},
        {NULL, 0, NULL, NULL, 0},
    };
    const char *resume_arg = rl_cli_resume_arg(argc, argv);
    if (resume_arg && rl_cli_resume_options("sft", opts, resume_arg)) return 2;
    int prc = rl_opts_parse("sft", opts, argc, argv, usage_head);
    if (prc != 0) {
        rl_opts_free();
        return prc < 0 ? 2 : 0;
    }
    const char *load_dir = resume ? resume : model_dir;
    if (!load_dir || !data || !out) {
        fprintf(stderr, "rlc sft: --model (or --resume), --data and --out are required (see --help)\n");
        rl_opts_free();
        return 2;
    }
    rl_lr_kind kind;
    rl_err err;
    if (rl_lr_kind_parse(schedule, &kind, &err) != 0) {
        fprintf(stderr, "rlc sft: %s\n", err.msg);
        rl_opts_free();
        return 2;
    }
    rl_ctx ctx;
    if (rl_cli_ctx("sft", &ctx, device, threads)) {
        rl_opts_free();
        return 1;
    }
    char tok_path[4096], ckpt[4096], metrics_path[4096], tok_dir[4096];
    snprintf(tok_dir, sizeof tok_dir, "%s", load_dir);
    int rc = 1;
    rl_model m;
    int have_model = 0;
    rl_tokenizer *tok = NULL;
    rl_train_data d;
    memset(&d, 0, sizeof d);
    sft_run run;
    memset(&run, 0, sizeof run);
    rl_metrics met = {0};
    if (rl_cli_path("sft", ckpt, out, "model") || rl_cli_path("sft", metrics_path, out, "metrics.jsonl")) goto done;
    if (tokenizer) snprintf(tok_path, sizeof tok_path, "%s", tokenizer);
    else if (rl_cli_path("sft", tok_path, load_dir, "tokenizer.json")) goto done;
    if (rl_model_load(&m, &ctx, load_dir, &err)) goto fail;
    have_model = 1;
    if (rl_tok_load(&tok, tok_path, &err) || rl_train_data_sft(&d, data, tok, &m, max_len, &err)) goto fail;
    if (d.n_truncated) fprintf(stderr, "rlc sft: %d examples cut to --max-len %d tokens\n", d.n_truncated, max_len);
    if (steps <= 0) {
        double tokens = 0;
        for (int i = 0; i < d.n; i++) tokens += d.sft[i].n_ids;
        steps = (int64_t)(epochs * tokens / ((double)max_tokens * grad_accum) + 0.999);
        if (steps < 1) steps = 1;
    }
    rl_sft_config c = rl_sft_defaults();
    c.max_tokens = max_tokens;
    c.grad_accum = grad_accum;
    c.shuffle = shuffle;
    c.seed = (uint64_t)seed;
    c.recompute = recompute;
    c.optim.schedule = (rl_lr_schedule){kind, lr, warmup, (int)steps, min_lr};
    c.optim.weight_decay = wd;
    c.optim.max_grad_norm = clip;
    c.optim.beta1 = beta1;
    c.optim.beta2 = beta2;
    if (rl_sft_create(&run.t, &m, d.sft, d.n, &c, &err)) goto fail;
    if (resume && rl_sft_resume(&run.t, resume, &err)) goto fail;
    run.options = rl_opts_to_json(opts);
    run.tok_dir = tokenizer ? NULL : tok_dir;
    if (rl_mkdir_p(out, &err) || rl_metrics_open(&met, metrics_path, resume != NULL, &err)) goto fail;
    fprintf(stderr, "rlc sft: %s, %d examples, %.1fM parameters, %lld steps from step %lld (%s)\n", data, d.n,
            (double)m.n_elems / 1e6, (long long)steps, (long long)run.t.state.step, rl_backend_name(&ctx));
    rl_train_hooks h = {&run, step, save, done};
    rl_loop_config lc = {"sft", steps, save_every, ckpt, &met};
    int lrc = rl_train_loop(&h, &lc, &err);
    if (lrc < 0) goto fail;
    if (lrc == 0) fprintf(stderr, "rlc sft: model saved to %s, metrics in %s\n", ckpt, metrics_path);
    rc = lrc == 0 ? 0 : 130;
    goto done;
fail:
    fprintf(stderr, "rlc sft: %s\n", err.msg);
done:
    rl_metrics_close(&met);
    if (run.t.model) rl_sft_free(&run.t);
    cJSON_Delete(run.options);
    rl_train_data_free(&d);
    rl_tok_free(tok);
    if (have_model) rl_model_free(&m);
    rl_ctx_free(&ctx);
    rl_opts_free();
    return rc;
}
