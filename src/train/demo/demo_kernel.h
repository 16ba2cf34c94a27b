/* demo_kernel.h — `rlc demo-kernel` (`make demo-kernel`): a tiny policy learns, from the real
 * GPU measurement alone, which of the kernels it knows is the fastest correct one.
 *
 * 1. A Qwen3 model of a few million parameters (random init, the demo tokenizer) is taught by
 *    SFT to answer "Write a fast CUDA kernel for task T." with one of four variants of T, each
 *    equally often: examples/demo_kernel/T.V.cu (a naive one like the reference, a warp /
 *    vectorised one, a shared-memory one, and a subtly wrong one that fails a trial), for three
 *    tasks of tests/fixtures/kernel_env/tasks (rowsum_naive, swiglu_2k, transpose_naive);
 * 2. GRPO with the kernel reward (`--reward kernel` through rl_train_run, the same run as the
 *    CLI's; the memo on, so each distinct kernel is timed once) on the three tasks;
 * 3. from OUT/grpo/attempts.jsonl: per step the mean reward, the share of correct samples and
 *    the share of near-best samples (speedup at least 90% of the best any sample of that task
 *    reached), each sample named by the variant it reproduces ("other" for a copy with a
 *    sampling slip), and the kernels of the last steps.
 * Needs a GPU (the evaluator times the kernels), nvcc and build/rlc-kernel-worker. */
#ifndef RL_TRAIN_DEMO_KERNEL_H
#define RL_TRAIN_DEMO_KERNEL_H

#include "backend/ctx.h"
#include "core/error.h"
#include "reward/kernel_env/kreward.h"
#include "train/loop.h"

#define RL_DEMO_KERNEL_TASKS 3
#define RL_DEMO_KERNEL_VARIANTS 4

typedef struct rl_demo_kernel_config {
    const char *out, *tokenizer, *variants, *tasks_dir;
    int seed;
    int hidden, layers, heads, kv_heads, head_dim, ffn;
    int sft_steps, grpo_steps, group, max_new;
    double sft_lr, grpo_lr, temperature, gpu_memory, kl_beta;
    int loss_norm;          /* rl_loss_norm of the GRPO phase */
    rl_kreward_opts kernel; /* the evaluator's tools (memo is set by the demo) */
} rl_demo_kernel_config;

rl_demo_kernel_config rl_demo_kernel_defaults(void);

typedef struct rl_demo_kernel_step {
    int n, n_correct, n_best;
    double reward_sum;
} rl_demo_kernel_step;

typedef struct rl_demo_kernel_result {
    int n_steps;
    rl_demo_kernel_step steps[512];
    char task[RL_DEMO_KERNEL_TASKS][32];
    char variant[RL_DEMO_KERNEL_TASKS][RL_DEMO_KERNEL_VARIANTS][16];
    double speedup[RL_DEMO_KERNEL_TASKS][RL_DEMO_KERNEL_VARIANTS]; /* measured (0: incorrect / never sampled) */
    int first[RL_DEMO_KERNEL_TASKS][RL_DEMO_KERNEL_VARIANTS + 1];  /* samples of each variant (+ other), first 3 steps */
    int last[RL_DEMO_KERNEL_TASKS][RL_DEMO_KERNEL_VARIANTS + 1];   /* and last 3 steps */
    double best[RL_DEMO_KERNEL_TASKS];
} rl_demo_kernel_result;

/* Runs the demo (steps 1-3). 0 done, 1 stopped through the watcher, -1 on error. */
int rl_demo_kernel_run(const rl_demo_kernel_config *c, rl_ctx *ctx, const rl_loop_watch *watch,
                       rl_demo_kernel_result *r, rl_err *err);

/* Step 3 alone: the summary of an attempt database against the variants. */
int rl_demo_kernel_summarize(const rl_demo_kernel_config *c, const char *attempts, rl_demo_kernel_result *r,
                             rl_err *err);

#endif
