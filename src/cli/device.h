/* device.h — the --device and --threads options of every command that runs a model, and the
 * rl_ctx they make.
 *
 * "cpu": the CPU backend (fp32); "cuda": CUDA device 0 (bf16 activations; fails with the
 * backend's message when this build has no CUDA or no device is visible); "auto" (the default):
 * CUDA when rl_cuda_available(), else the CPU. --precision auto|bf16|fp32 (backend/ctx.h): what
 * CUDA computes in; auto (the default) is fp32 for models under RL_FP32_AUTO_MAX_PARAMS
 * parameters and bf16 above; the CPU is fp32 whatever is asked (bf16 there is refused). A
 * command puts RL_OPT_DEVICE and RL_OPT_PRECISION (and RL_OPT_THREADS where CPU threads matter)
 * in its option table, then calls rl_device_ctx instead of rl_ctx_create; every op, the model and
 * the trainers take the ctx. */
#ifndef RL_CLI_DEVICE_H
#define RL_CLI_DEVICE_H

#include "backend/ctx.h"
#include "cli/options.h"

enum { RL_DEVICE_CPU, RL_DEVICE_CUDA, RL_DEVICE_AUTO };
extern const char *const rl_device_names[]; /* "cpu", "cuda", "auto" */

#define RL_OPT_DEVICE(p) RL_OPT_C("device", p, rl_device_names, "where the model runs (auto: cuda when a GPU is usable)")
#define RL_OPT_PRECISION(p)                                                                                        \
    RL_OPT_C("precision", p, rl_precision_names,                                                                   \
             "CUDA compute dtype (auto: fp32 below 50M parameters, else bf16; the CPU is fp32)")
#define RL_OPT_THREADS(p) RL_OPT_I("threads", p, 0, 4096, "CPU threads (0 = OpenMP default)")

/* Creates *ctx for device (RL_DEVICE_*) with precision (rl_precision) and n_threads CPU threads
 * (0: OpenMP's default), on CUDA device `ordinal` (0 but for the ranks of a multi-GPU run).
 * Returns 0, or prints "rlc <cmd>: --device cuda: <why>" (exit status 1) or "rlc <cmd>:
 * --precision bf16: <why>" (usage, exit status 2). */
int rl_device_ctx(const char *cmd, rl_ctx *ctx, int device, int precision, int n_threads, int ordinal);

#endif
