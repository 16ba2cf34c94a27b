/* cmd_demo_kernel.c — `rlc demo-kernel`: a tiny policy learns from the real GPU measurement
 * which of the kernels it knows is fastest (train/demo/demo_kernel.h); prints the reward curve,
 * the share of correct and of near-best samples per step, and the kernels it ends up writing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "core/file.h"
#include "core/timer.h"
#include "train/demo/demo_kernel.h"
#include "train/grpo_math.h"

static const char usage[] =
    "usage: rlc demo-kernel [options]\n\n"
    "Teaches a tiny Qwen3 model by SFT four variants of a kernel for each of three tasks (naive,\n"
    "warp / vectorised, shared memory, subtly wrong), then trains it with GRPO on the kernel\n"
    "reward, the kernels compiled and timed on the GPU. Prints per step the mean reward and the\n"
    "shares of correct and of near-best samples (speedup >= 90%% of the best seen for the task),\n"
    "and the kernels of the last steps. Needs a GPU, nvcc and rlc-kernel-worker.\n"
    "--summarize prints the table of an earlier run's OUT/grpo/attempts.jsonl without training.\n\n";

static double share(const rl_demo_kernel_result *r, int from, int to, int best)
{
    int n = 0, k = 0;
    for (int s = from; s < to && s < r->n_steps; s++) n += r->steps[s].n, k += best ? r->steps[s].n_best : r->steps[s].n_correct;
    return n ? 100.0 * k / n : 0;
}

static void print_result(const rl_demo_kernel_result *r)
{
    printf("\n%5s %8s %9s %10s %8s\n", "step", "reward", "correct", "near-best", "samples");
    for (int s = 0; s < r->n_steps; s++) {
        const rl_demo_kernel_step *st = &r->steps[s];
        printf("%5d %8.3f %8.0f%% %9.0f%% %8d\n", s + 1, st->n ? st->reward_sum / st->n : 0,
               st->n ? 100.0 * st->n_correct / st->n : 0, st->n ? 100.0 * st->n_best / st->n : 0, st->n);
    }
    printf("\nvariants sampled (first 3 steps -> last 3 steps), measured speedup:\n");
    for (int t = 0; t < RL_DEMO_KERNEL_TASKS; t++) {
        printf("  %-16s", r->task[t]);
        for (int v = 0; v <= RL_DEMO_KERNEL_VARIANTS; v++) {
            char sp[24] = "";
            if (v < RL_DEMO_KERNEL_VARIANTS && r->speedup[t][v] > 0) snprintf(sp, sizeof sp, " %.2fx", r->speedup[t][v]);
            else if (v < RL_DEMO_KERNEL_VARIANTS) snprintf(sp, sizeof sp, " fails");
            printf("  %s%s %d->%d", v < RL_DEMO_KERNEL_VARIANTS ? r->variant[t][v] : "other", v < RL_DEMO_KERNEL_VARIANTS ? sp : "",
                   r->first[t][v], r->last[t][v]);
        }
        printf("\n");
    }
    int k = r->n_steps < 3 ? r->n_steps : 3;
    double b0 = share(r, 0, k, 1), b1 = share(r, r->n_steps - k, r->n_steps, 1);
    printf("\nnear-best share: first %d steps %.0f%% -> last %d steps %.0f%%; correct %.0f%% -> %.0f%%\n", k, b0, k, b1,
           share(r, 0, k, 0), share(r, r->n_steps - k, r->n_steps, 0));
    if (r->n_steps >= 2 * k && k > 0)
        printf("%s\n", b1 > b0 + 10 ? "the policy learned: more of its samples are the fastest correct kernels"
                                     : "the policy did NOT learn here: the near-best share did not rise by 10 points");
}

static int run(const rl_demo_kernel_config *c, int device, int precision, int threads, int summarize_only)
{
    double t0 = rl_time_now();
    rl_demo_kernel_result *r = malloc(sizeof *r);
    rl_err err;
    if (!r) return RL_EXIT_FAILURE;
    int rc;
    if (summarize_only) {
        char path[4200];
        snprintf(path, sizeof path, "%s/grpo/attempts.jsonl", c->out);
        rc = rl_demo_kernel_summarize(c, path, r, &err);
    } else {
        rl_ctx ctx;
        int status = rl_device_ctx("demo-kernel", &ctx, device, precision, threads, 0);
        if (status) {
            free(r);
            return status;
        }
        rl_progress progress;
        rl_loop_watch watch = rl_progress_watch(&progress, "demo-kernel");
        rc = rl_demo_kernel_run(c, &ctx, &watch, r, &err);
        rl_ctx_free(&ctx);
    }
    if (rc < 0) fprintf(stderr, "rlc demo-kernel: %s\n", err.msg);
    if (rc == 0) {
        print_result(r);
        printf("kernels: rlc kernel-db %s/grpo --code; total time %.1f s\n", c->out, rl_time_now() - t0);
    }
    free(r);
    return rc < 0 ? RL_EXIT_FAILURE : rc > 0 ? RL_EXIT_INTERRUPTED : RL_EXIT_OK;
}

int rl_cmd_demo_kernel(int argc, char **argv)
{
    rl_demo_kernel_config c = rl_demo_kernel_defaults();
    int device = RL_DEVICE_AUTO, precision = RL_PRECISION_AUTO, threads = 0, summarize = 0;
    rl_opt list[] = {
        RL_OPT_S("out", &c.out, "DIR", "output directory (init/, sft/, grpo/ with attempts.jsonl)"),
        RL_OPT_S("tokenizer", &c.tokenizer, "FILE", "tokenizer.json"),
        RL_OPT_S("variants", &c.variants, "DIR", "the kernel variants TASK.VARIANT.cu"),
        RL_OPT_S("tasks", &c.tasks_dir, "DIR", "where the task directories are"),
        RL_OPT_I("seed", &c.seed, 0, 2147483647, "seed for the model and sampling"),
        RL_OPT_I("sft-steps", &c.sft_steps, 1, 1 << 30, "SFT steps"),
        RL_OPT_D("sft-lr", &c.sft_lr, 0, 10, "SFT peak learning rate"),
        RL_OPT_I("steps", &c.grpo_steps, 1, 511, "GRPO steps"),
        RL_OPT_I("group", &c.group, 2, 1 << 20, "GRPO samples per task and step"),
        RL_OPT_D("lr", &c.grpo_lr, 0, 10, "GRPO learning rate"),
        RL_OPT_D("temperature", &c.temperature, 1e-4, 1e6, "GRPO sampling temperature"),
        RL_OPT_C("loss-norm", &c.loss_norm, rl_loss_norm_names, "GRPO loss normalisation: sequence, token (DAPO), dr_grpo"),
        RL_OPT_D("kl-beta", &c.kl_beta, 0, 1e6, "k3 KL penalty to the SFT model (0 = off)"),
        RL_OPT_I("max-new-tokens", &c.max_new, 1, 1 << 20, "tokens generated per kernel"),
        RL_OPT_D("gpu-memory-utilization", &c.gpu_memory, 0, 1, "the KV cache's share of free GPU memory",
                 .range.above_lo = 1),
        RL_OPT_S("kernel-worker", &c.kernel.worker, "PATH", "rlc-kernel-worker (default: beside rlc)"),
        RL_OPT_S("kernel-nvcc", &c.kernel.nvcc, "PATH", "nvcc"),
        RL_OPT_S("kernel-cache", &c.kernel.cache_dir, "DIR", "compiled modules"),
        RL_OPT_I("kernel-jobs", &c.kernel.jobs, 0, 64, "compiles at once (0 = 2 per GPU worker or 1 per core, the more)"),
        RL_OPT_F("summarize", &summarize, "only print the table of an earlier run in --out"),
        RL_OPT_THREADS(&threads),
        RL_OPT_DEVICE(&device),
        RL_OPT_PRECISION(&precision),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "demo-kernel", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) status = run(&c, device, precision, threads, summarize);
    rl_opts_free(&cli);
    return status;
}
