/* train_common.h — what the training commands share between parsing their options and the
 * library's rl_train_run (train/run.h, which also describes a run directory's layout): a
 * checkpoint's saved options as the defaults of a resumed run, progress lines with Ctrl-C, the
 * device, and running as one rank of several (docs/distributed.md):
 *   - --gpus N (N > 1) in a process that no launcher started: this process becomes the
 *     supervisor of N local ranks (dist/launch.h) and returns their exit status;
 *   - a process a launcher started (dist/dist.h: rlc's own --gpus, torchrun-style variables,
 *     mpirun; the launcher decides the ranks, --gpus is not used): it takes the GPU of its local
 *     rank, joins the others with its options as the run configuration (a rank started with
 *     different options is refused), and trains as one rank: progress shown by rank 0 only;
 *   - otherwise the single-process run, unchanged. */
#ifndef RL_CLI_TRAIN_COMMON_H
#define RL_CLI_TRAIN_COMMON_H

#include "backend/ctx.h"
#include "cli/device.h"
#include "cli/options.h"
#include "train/run.h"

/* rl_opts_parse, after applying the options saved in the checkpoint that --resume names (so the
 * command line only needs what changes). */
int rl_cli_parse_resumable(rl_opts *o, int argc, char **argv);
/* Where and how a training command runs: --device, --threads, --gpus, --zero, and (grpo)
 * --deterministic, the context's batch-invariant mode (rl_ctx.deterministic). */
typedef struct rl_cli_ranks {
    int device, precision, threads, gpus, zero, deterministic;
} rl_cli_ranks;

#define RL_OPT_GPUS(p) RL_OPT_I("gpus", p, 1, 4096, "ranks on this machine, one per GPU (with --device cpu: CPU processes)")
#define RL_OPT_ZERO(p) RL_OPT_I("zero", p, 0, 2, "with several ranks: 1 shards the optimizer state, 2 the gradients too")
#define RL_OPT_REWARD_ERRORS(p)                                                                                 \
    RL_OPT_C("reward-errors", p, rl_reward_errors_names,                                                       \
             "a broken reward answer (garbage, NaN/inf, timeout, crash): stop the run, or score it 0, count it "   \
             "and log it to OUT/reward_errors.jsonl")
#define RL_OPT_LOG_SAMPLES(p) \
    RL_OPT_I("log-samples", p, 0, 1 << 20, "examples (SFT) or completions (RL) per step written to OUT/samples.jsonl")
#define RL_OPT_NO_SAVE(p) RL_OPT_F("save", p, "write checkpoints (--no-save: none, e.g. for benchmarks)")

/* The kernel reward's options (reward/kernel_env/kreward.h), for the RL commands; k is their
 * rl_kreward_opts. */
#define RL_OPTS_KERNEL(k)                                                                                          \
    RL_OPT_S("kernel-worker", &(k).worker, "PATH", "kernel reward: rlc-kernel-worker (default: beside rlc)"),      \
        RL_OPT_S("kernel-nvcc", &(k).nvcc, "PATH", "kernel reward: nvcc (default: $CUDA_HOME/bin/nvcc or PATH)"),  \
        RL_OPT_S("kernel-python", &(k).python, "PATH", "kernel reward: Python with torch for KernelBench tasks"), \
        RL_OPT_S("kernel-cache", &(k).cache_dir, "DIR",                                                            \
                 "kernel reward: compiled modules (default ~/.cache/rlc/kernels)"),                                \
        RL_OPT_S("kernel-protocol", &(k).protocol, "FILE", "kernel reward: protocol.json"),                        \
        RL_OPT_I("kernel-gpus", &(k).gpus, 0, 16,                                                                  \
                 "kernel reward: GPUs timing candidates (0 = all the worker sees; with --gpus N, each rank's own)"), \
        RL_OPT_I("kernel-jobs", &(k).jobs, 0, 64,                                                                  \
                 "kernel reward: compiles at once (0 = 2 per GPU worker or 1 per core, the more)"),          \
        RL_OPT_F("kernel-no-sandbox", &(k).no_sandbox,                                                             \
                 "kernel reward: workers and nvcc run without the sandbox (debugging)"),                           \
        RL_OPT_F("kernel-memo", &(k).memo,                                                                         \
                 "kernel reward: a code seen before in the run keeps its first verdict (not re-timed)")

/* The options every trainer has, in one place: micro-batches, the optimizer and its schedule,
 * the data order, checkpoints and where the ranks run. o is the command's options struct: its
 * trainer config in o.c (max_tokens, optim, shuffle, recompute), and schedule, seed,
 * save_every, save and ranks beside it. */
#define RL_OPTS_TRAINER(o, seed_help)                                                                              \
    RL_OPT_I("max-tokens", &(o).c.max_tokens, 2, 1 << 30, "tokens per packed micro-batch"),                        \
        RL_OPT_D("lr", &(o).c.optim.schedule.peak, 0, 10, "peak learning rate"),                                   \
        RL_OPT_C("schedule", &(o).schedule, rl_lr_kind_names, "learning-rate schedule (after the warmup)"),       \
        RL_OPT_I("warmup", &(o).c.optim.schedule.warmup_steps, 0, 1 << 30, "warmup steps"),                        \
        RL_OPT_D("min-lr-ratio", &(o).c.optim.schedule.min_ratio, 0, 1, "cosine floor as a fraction of --lr"),    \
        RL_OPT_D("weight-decay", &(o).c.optim.weight_decay, 0, 10, "AdamW weight decay (not on norms and biases)"), \
        RL_OPT_D("beta1", &(o).c.optim.beta1, 0, 0.9999999, "AdamW beta1"),                                        \
        RL_OPT_D("beta2", &(o).c.optim.beta2, 0, 0.9999999, "AdamW beta2"),                                        \
        RL_OPT_D("max-grad-norm", &(o).c.optim.max_grad_norm, 0, 1e9, "clip the global gradient norm (0 = off)"), \
        RL_OPT_I("seed", &(o).seed, 0, 2147483647, seed_help),                                                     \
        RL_OPT_F("shuffle", &(o).c.shuffle, "shuffle the data every epoch (--no-shuffle: file order)"),           \
        RL_OPT_F("recompute", &(o).c.recompute, "activation checkpointing (less memory, more compute)"),          \
        RL_OPT_I("save-every", &(o).save_every, 0, 1 << 30, "checkpoint every N steps (0 = at the end only)"),     \
        RL_OPT_NO_SAVE(&(o).save), RL_OPT_DEVICE(&(o).ranks.device), RL_OPT_PRECISION(&(o).ranks.precision),      \
        RL_OPT_THREADS(&(o).ranks.threads),                                                                        \
        RL_OPT_GPUS(&(o).ranks.gpus), RL_OPT_ZERO(&(o).ranks.zero)

/* The RL commands' (grpo, ppo) output, resume, tokenizer and evaluation options; o as above, with
 * out, resume, tokenizer, eval_data and eval_every. */
#define RL_OPTS_RL_RUN(o)                                                                                          \
    RL_OPT_S("out", &(o).out, "DIR", "output directory", .flags = RL_OPT_REQUIRED),                                \
        RL_OPT_S("resume", &(o).resume, "DIR", "continue from a checkpoint (OUT/model of an earlier run)"),       \
        RL_OPT_S("tokenizer", &(o).tokenizer, "FILE", "tokenizer.json (default: the model's)"),                    \
        RL_OPT_S("eval-data", &(o).eval_data, "FILE",                                                              \
                 "prompts with answers: greedy accuracy every --eval-every steps"),                                \
        RL_OPT_I("eval-every", &(o).eval_every, 1, 1 << 30, "steps between evaluations (with --eval-data)")

/* The RL commands' sampling and reward-time options: the generation config in o.c.gen, and
 * max_prompt, temperature, top_p, stop, thinking_off and reward_timeout beside it. */
#define RL_OPTS_SAMPLING(o)                                                                                        \
    RL_OPT_I("max-new-tokens", &(o).c.gen.max_new_tokens, 1, 1 << 30, "completion length limit"),                 \
        RL_OPT_I("max-prompt-len", &(o).max_prompt, 1, 1 << 30, "refuse longer prompts"),                          \
        RL_OPT_D("temperature", &(o).temperature, 1e-4, 1e6, "sampling temperature"),                              \
        RL_OPT_D("top-p", &(o).top_p, 0, 1, "nucleus sampling (1 = off)", .range.above_lo = 1),                    \
        RL_OPT_I("top-k", &(o).c.gen.sample.top_k, 0, 1000000000, "top-k sampling (0 = off)"),                     \
        RL_OPT_LST("stop", &(o).stop, "STR", "stop string, besides end-of-sequence (repeatable)"),                 \
        RL_OPT_THINKING(&(o).thinking_off),                                                                        \
        RL_OPT_D("reward-timeout", &(o).reward_timeout, 0, 1e6, "cmd rewards: seconds per completion",             \
                 .range.above_lo = 1)

/* rl_train_run as described above, with progress lines and Ctrl-C; argv is the command's (to
 * start the ranks). Returns the command's exit status. */
int rl_cli_train(const char *cmd, const rl_cli_ranks *p, rl_run_config *c, char **argv);

#endif
