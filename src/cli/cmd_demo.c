/* cmd_demo.c — `rlc demo`: the whole pipeline on a laptop CPU in a few minutes (SFT then GRPO
 * on addition, held-out accuracy after each; train/demo/demo.h). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "core/timer.h"
#include "train/demo/demo.h"

static const char usage[] =
    "usage: rlc demo [options]\n\n"
    "Trains a tiny Qwen3 model from scratch on CPU: SFT on two-number addition, then GRPO\n"
    "with the math reward, and prints held-out greedy accuracy after each.\n\n";

static int run(const rl_demo_config *c, int device, int precision, int threads)
{
    double t_start = rl_time_now();
    rl_ctx ctx;
    int status = rl_device_ctx("demo", &ctx, device, precision, threads, 0);
    if (status) return status;
    rl_progress progress;
    rl_loop_watch watch = rl_progress_watch(&progress, "demo");
    rl_demo_result r;
    rl_err err;
    int rc = rl_demo_run(c, &ctx, &watch, &r, &err);
    rl_ctx_free(&ctx);
    if (rc < 0) {
        fprintf(stderr, "rlc demo: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    if (rc > 0) return RL_EXIT_INTERRUPTED;
    printf("\nheld-out greedy accuracy on %d problems (%s ...):\n"
           "  after SFT  (%d steps): %5.1f%%   %s\n"
           "  after GRPO (%d steps): %5.1f%%   %s\n"
           "total time %.1f s; metrics in %s/{sft,grpo}_metrics.jsonl\n"
           "report (plots and sample completions): %s\n",
           r.n_held, r.example, c->sft_steps, 100.0 * r.sft_correct / r.n_held, r.sft_dir, c->grpo_steps,
           100.0 * r.grpo_correct / r.n_held, r.grpo_dir, rl_time_now() - t_start, c->out, r.report);
    if (r.grpo_correct <= r.sft_correct) fprintf(stderr, "rlc demo: warning: GRPO did not improve on SFT this time\n");
    return RL_EXIT_OK;
}

int rl_cmd_demo(int argc, char **argv)
{
    rl_demo_config c = rl_demo_defaults();
    int device = RL_DEVICE_AUTO, precision = RL_PRECISION_AUTO, threads = 0;
    rl_opt list[] = {
        RL_OPT_S("out", &c.out, "DIR", "output directory (sft/ and grpo/ checkpoints, metrics)"),
        RL_OPT_S("tokenizer", &c.tokenizer, "FILE", "tokenizer.json (its directory's tokenizer files are copied)"),
        RL_OPT_I("seed", &c.seed, 0, 2147483647, "seed for the model, the data split, sampling"),
        RL_OPT_THREADS(&threads),
        RL_OPT_DEVICE(&device),
        RL_OPT_PRECISION(&precision),
        RL_OPT_I("lo", &c.lo, 0, 9999, "smallest operand"),
        RL_OPT_I("hi", &c.hi, 0, 9999, "largest operand"),
        RL_OPT_I("held-out", &c.held_out, 1, 1 << 30, "problems held out for evaluation"),
        RL_OPT_I("hidden", &c.hidden, 1, 1 << 16, "model: hidden size"),
        RL_OPT_I("layers", &c.layers, 1, 1024, "model: layers"),
        RL_OPT_I("heads", &c.heads, 1, 1024, "model: attention heads"),
        RL_OPT_I("kv-heads", &c.kv_heads, 1, 1024, "model: key/value heads"),
        RL_OPT_I("head-dim", &c.head_dim, 1, 1024, "model: head dimension"),
        RL_OPT_I("ffn", &c.ffn, 1, 1 << 20, "model: MLP intermediate size"),
        RL_OPT_I("sft-steps", &c.sft_steps, 1, 1 << 30, "SFT steps"),
        RL_OPT_I("sft-batch", &c.sft_batch, 1, 1 << 20, "SFT examples per step"),
        RL_OPT_D("sft-lr", &c.sft_lr, 0, 10, "SFT peak learning rate (cosine, warmup 5%)"),
        RL_OPT_I("grpo-steps", &c.grpo_steps, 0, 1 << 30, "GRPO steps"),
        RL_OPT_I("prompts", &c.prompts, 1, 1 << 20, "GRPO prompts per step"),
        RL_OPT_I("group", &c.group, 1, 1 << 20, "GRPO completions per prompt"),
        RL_OPT_D("grpo-lr", &c.grpo_lr, 0, 10, "GRPO peak learning rate (cosine, warmup 5%)"),
        RL_OPT_D("temperature", &c.temperature, 1e-4, 1e6, "GRPO sampling temperature"),
        RL_OPT_I("max-new-tokens", &c.max_new, 1, 1 << 20, "tokens generated per completion"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "demo", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) status = run(&c, device, precision, threads);
    rl_opts_free(&cli);
    return status;
}
