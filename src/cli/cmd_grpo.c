/* cmd_grpo.c — `rlc grpo`: GRPO (and DAPO / Dr. GRPO) on a JSONL file of prompts with a
 * reward. Writes OUT/model (checkpoint, HF layout) and OUT/metrics.jsonl; see
 * train_common.h. --variant sets a family of defaults that explicit options override. */
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
#include "train/grpo.h"

typedef struct grpo_run {
    rl_grpo t;
    const char *tok_dir;
    cJSON *options;
} grpo_run;

static int step(void *r, rl_step_stats *s, rl_err *e) { return rl_grpo_step(&((grpo_run *)r)->t, s, e); }
static int64_t done(void *r) { return ((grpo_run *)r)->t.state.step; }
static int save(void *r, const char *dir, rl_err *e)
{
    grpo_run *run = r;
    return rl_grpo_save(&run->t, dir, run->options, run->tok_dir, e);
}

static const char usage_head[] =
    "usage: rlc grpo --model DIR --data FILE.jsonl --reward SPEC --out DIR [options]\n\n"
    "GRPO: sample --group-size completions per prompt, score them, group-normalised advantages,\n"
    "clipped policy-gradient updates. Data lines: {\"prompt\": text or messages, \"answer\": ..., ...}.\n"
    "Rewards: math | exact | exact:strict | regex:PATTERN | format | format:boxed | cmd:\"COMMAND\"\n"
    "(cmd: a program reading one JSON object per completion on stdin and printing {\"reward\": x}).\n"
    "--variant dapo: clip-higher 0.28, token-level loss; dr_grpo: no std scaling, constant\n"
    "normaliser. Writes OUT/model and OUT/metrics.jsonl; Ctrl-C saves after the current step;\n"
    "--resume OUT/model continues.\n\n";

static rl_opt *named(rl_opt *opts, const char *name)
{
    for (rl_opt *o = opts; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

static int fail_usage(const char *msg)
{
    fprintf(stderr, "rlc grpo: %s\n", msg);
    rl_opts_free();
    return 2;
}

int rl_cmd_grpo(int argc, char **argv)
{
    const char *model_dir = NULL, *data = NULL, *out = NULL, *resume = NULL, *tokenizer = NULL;
    const char *reward_spec = NULL, *device = "auto", *schedule = "constant", *variant = "grpo";
    const char *loss_norm = "sequence", *stop = NULL;
    int64_t steps = 100;
    int prompts = 8, group = 8, max_new = 256, top_k = 0, mu = 1, recompute_old = 0, scale_std = 1;
    int max_tokens = 8192, max_prompt = 1024, warmup = 0, save_every = 0, threads = 0, seed = 1234;
    int shuffle = 1, recompute = 0;
    double temperature = 1.0, top_p = 1.0, clip_low = 0.2, clip_high = 0.2, kl_beta = 0, lr = 1e-6;
    double wd = 0.0, clip = 1.0, reward_timeout = 60;
    rl_opt opts[] = {
        {"model", RL_OPT_STRING, &model_dir, "policy to start from (and the KL reference)", 0},
        {"data", RL_OPT_STRING, &data, "prompts (JSON lines)", 0},
        {"reward", RL_OPT_STRING, &reward_spec, "reward spec (see above)", 0},
        {"out", RL_OPT_STRING, &out, "output directory", 0},
        {"resume", RL_OPT_STRING, &resume, "continue from a checkpoint (OUT/model of an earlier run)", 0},
        {"tokenizer", RL_OPT_STRING, &tokenizer, "tokenizer.json (default: the model's)", 0},
        {"variant", RL_OPT_STRING, &variant, "grpo, dapo or dr_grpo (defaults below)", 0},
        {"steps", RL_OPT_I64, &steps, "rollout steps", 0},
        {"prompts-per-step", RL_OPT_INT, &prompts, "prompts per rollout", 0},
        {"group-size", RL_OPT_INT, &group, "completions per prompt (G)", 0},
        {"max-new-tokens", RL_OPT_INT, &max_new, "completion length limit", 0},
        {"max-prompt-len", RL_OPT_INT, &max_prompt, "refuse longer prompts", 0},
        {"temperature", RL_OPT_DOUBLE, &temperature, "sampling temperature (> 0)", 0},
        {"top-p", RL_OPT_DOUBLE, &top_p, "nucleus sampling (1 = off)", 0},
        {"top-k", RL_OPT_INT, &top_k, "top-k sampling (0 = off)", 0},
        {"stop", RL_OPT_STRING, &stop, "stop string (in addition to end-of-sequence)", 0},
        {"reward-timeout", RL_OPT_DOUBLE, &reward_timeout, "cmd rewards: seconds per completion", 0},
        {"clip-low", RL_OPT_DOUBLE, &clip_low, "ratio clipped below at 1 - clip-low", 0},
        {"clip-high", RL_OPT_DOUBLE, &clip_high, "ratio clipped above at 1 + clip-high", 0},
        {"kl-beta", RL_OPT_DOUBLE, &kl_beta, "k3 KL penalty to --model (0 = off, no reference loaded)", 0},
        {"loss-norm", RL_OPT_STRING, &loss_norm, "sequence, token (DAPO) or dr_grpo", 0},
        {"std-scale", RL_OPT_FLAG, &scale_std, "divide advantages by the group std (--no-std-scale: Dr. GRPO)", 0},
        {"mu", RL_OPT_INT, &mu, "optimizer updates per rollout", 0},
        {"recompute-old-logp", RL_OPT_FLAG, &recompute_old, "old log-probs from a training forward, not the sampler", 0},
        {"max-tokens", RL_OPT_INT, &max_tokens, "tokens per packed micro-batch", 0},
        {"lr", RL_OPT_DOUBLE, &lr, "learning rate", 0},
        {"schedule", RL_OPT_STRING, &schedule, "constant, linear or cosine (with warmup)", 0},
        {"warmup", RL_OPT_INT, &warmup, "warmup steps", 0},
        {"weight-decay", RL_OPT_DOUBLE, &wd, "AdamW weight decay", 0},
        {"max-grad-norm", RL_OPT_DOUBLE, &clip, "clip the global gradient norm (0 = off)", 0},
        {"seed", RL_OPT_INT, &seed, "seed of the data order and sampling", 0},
        {"shuffle", RL_OPT_FLAG, &shuffle, "shuffle prompts every epoch", 0},
        {"recompute", RL_OPT_FLAG, &recompute, "activation checkpointing", 0},
        {"save-every", RL_OPT_INT, &save_every, "checkpoint every N steps (0 = at the end only)", 0},
        {"device", RL_OPT_STRING, &device, RL_BACKEND_OPT_HELP_SHORT, 0},
        {"threads", RL_OPT_INT, &threads, "CPU threads (0 = OpenMP default)", 0},
        {NULL, 0, NULL, NULL, 0},
    };
    const char *resume_arg = rl_cli_resume_arg(argc, argv);
    if (resume_arg && rl_cli_resume_options("grpo", opts, resume_arg)) return 2;
    int prc = rl_opts_parse("grpo", opts, argc, argv, usage_head);
    if (prc != 0) {
        rl_opts_free();
        return prc < 0 ? 2 : 0;
    }
    /* the variant's defaults, for options not given explicitly */
    rl_opt *clip_high_o = named(opts, "clip-high"), *norm_o = named(opts, "loss-norm"), *std_o = named(opts, "std-scale");
    if (!strcmp(variant, "dapo")) {
        if (!clip_high_o->set) clip_high = 0.28;
        if (!norm_o->set) loss_norm = "token";
    } else if (!strcmp(variant, "dr_grpo")) {
        if (!norm_o->set) loss_norm = "dr_grpo";
        if (!std_o->set) scale_std = 0;
    } else if (strcmp(variant, "grpo")) {
        return fail_usage("--variant must be grpo, dapo or dr_grpo");
    }
    const char *load_dir = resume ? resume : model_dir;
    if (!load_dir || !data || !out || !reward_spec)
        return fail_usage("--model (or --resume), --data, --reward and --out are required (see --help)");
    if (kl_beta > 0 && !model_dir) return fail_usage("--kl-beta needs --model (the reference)");
    rl_err err;
    rl_lr_kind kind;
    rl_loss_norm norm;
    if (rl_lr_kind_parse(schedule, &kind, &err) || rl_loss_norm_parse(loss_norm, &norm, &err))
        return fail_usage(err.msg);
    rl_ctx ctx;
    if (rl_cli_ctx("grpo", &ctx, device, threads)) {
        rl_opts_free();
        return 1;
    }
    char tok_path[4096], ckpt[4096], metrics_path[4096], tok_dir[4096];
    snprintf(tok_dir, sizeof tok_dir, "%s", load_dir);
    int rc = 1, have_model = 0, have_ref = 0;
    rl_model m, ref;
    rl_tokenizer *tok = NULL;
    rl_reward *reward = NULL;
    rl_train_data d;
    memset(&d, 0, sizeof d);
    grpo_run run;
    memset(&run, 0, sizeof run);
    rl_metrics met = {0};
    if (rl_cli_path("grpo", ckpt, out, "model") || rl_cli_path("grpo", metrics_path, out, "metrics.jsonl")) goto done;
    if (tokenizer) snprintf(tok_path, sizeof tok_path, "%s", tokenizer);
    else if (rl_cli_path("grpo", tok_path, load_dir, "tokenizer.json")) goto done;
    if (rl_model_load(&m, &ctx, load_dir, &err)) goto fail;
    have_model = 1;
    if (kl_beta > 0) {
        if (rl_model_load(&ref, &ctx, model_dir, &err)) goto fail;
        have_ref = 1;
    }
    rl_reward_options ro = {reward_timeout};
    if (rl_tok_load(&tok, tok_path, &err) || rl_train_data_rl(&d, data, tok, max_prompt, &err) ||
        rl_reward_create(&reward, reward_spec, &ro, &err))
        goto fail;
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = prompts;
    c.group_size = group;
    c.gen.max_new_tokens = max_new;
    c.gen.sample.temperature = (float)temperature;
    c.gen.sample.top_p = (float)top_p;
    c.gen.sample.top_k = top_k;
    c.gen.stop = stop ? &stop : NULL;
    c.gen.n_stop = stop ? 1 : 0;
    c.clip_low = (float)clip_low;
    c.clip_high = (float)clip_high;
    c.kl_beta = (float)kl_beta;
    c.loss_norm = norm;
    c.scale_std = scale_std;
    c.mu = mu;
    c.recompute_old_logp = recompute_old;
    c.max_tokens = max_tokens;
    c.shuffle = shuffle;
    c.seed = (uint64_t)seed;
    c.recompute = recompute;
    c.optim.schedule = (rl_lr_schedule){kind, lr, warmup, (int)steps, 0};
    c.optim.weight_decay = wd;
    c.optim.max_grad_norm = clip;
    if (rl_grpo_create(&run.t, &m, have_ref ? &ref : NULL, tok, reward, d.prompts, d.n, &c, &err)) goto fail;
    if (resume && rl_grpo_resume(&run.t, resume, &err)) goto fail;
    run.options = rl_opts_to_json(opts);
    run.tok_dir = tokenizer ? NULL : tok_dir;
    if (rl_mkdir_p(out, &err) || rl_metrics_open(&met, metrics_path, resume != NULL, &err)) goto fail;
    fprintf(stderr, "rlc grpo: %s, %d prompts, reward %s, %s/%s, %lld steps from step %lld (%s)\n", data, d.n,
            reward_spec, variant, loss_norm, (long long)steps, (long long)run.t.state.step, rl_backend_name(&ctx));
    rl_train_hooks h = {&run, step, save, done};
    rl_loop_config lc = {"grpo", steps, save_every, ckpt, &met};
    int lrc = rl_train_loop(&h, &lc, &err);
    if (lrc < 0) goto fail;
    if (lrc == 0) fprintf(stderr, "rlc grpo: model saved to %s, metrics in %s\n", ckpt, metrics_path);
    rc = lrc == 0 ? 0 : 130;
    goto done;
fail:
    fprintf(stderr, "rlc grpo: %s\n", err.msg);
done:
    rl_metrics_close(&met);
    if (run.t.model) rl_grpo_free(&run.t);
    cJSON_Delete(run.options);
    rl_reward_free(reward);
    rl_train_data_free(&d);
    rl_tok_free(tok);
    if (have_ref) rl_model_free(&ref);
    if (have_model) rl_model_free(&m);
    rl_ctx_free(&ctx);
    rl_opts_free();
    return rc;
}
