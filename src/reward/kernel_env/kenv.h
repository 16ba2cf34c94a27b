/* kenv.h — the kernel environment: one candidate CUDA source scored against a task.
 *
 * rl_kenv_eval: load the task (kspec.h), static checks (kstatic.h), compile reference and
 * candidate (kcompile.h, cached), run build/rlc-kernel-worker in a limited child (kproc.h)
 * with the task's plan, and turn its JSON into the result object and reward of
 * docs/kernel-env.md. A misbehaving candidate (crash, hang, flood of output) fails itself
 * only; an evaluator problem gives status "error" and a null reward. */
#ifndef RL_REWARD_KENV_KENV_H
#define RL_REWARD_KENV_KENV_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct rl_kenv_opts {
    const char *worker;      /* path of rlc-kernel-worker */
    const char *nvcc;
    const char *cache_dir;
    const char *include_dir; /* holds rl_kernel.h */
    const char *arch;
    double timeout_s;        /* worker wall time per candidate */
    double compile_timeout_s;
    int trials, timed, warmup;
    int watchdog_ms, mem_cap_mb;
    int keep_going;          /* run the worker even after a fatal static finding */
    const char *devices;     /* CUDA_VISIBLE_DEVICES for the worker; NULL: inherit */
    /* Optional GPU pool (batch mode): called around the worker run only, so compiles of
     * several candidates overlap while each GPU runs one worker at a time. acquire returns
     * the CUDA_VISIBLE_DEVICES value to use (overrides devices). */
    const char *(*gpu_acquire)(void *ctx);
    void (*gpu_release)(void *ctx, const char *device);
    void *gpu_ctx;
    uint64_t seed;
} rl_kenv_opts;

/* Defaults: worker and include dir found beside the running executable (build/ and
 * ../src/reward/kernel_env/include), cache ~/.cache/rlc/kernels, nvcc from PATH, arch 90a. The
 * strings point into static storage. */
void rl_kenv_opts_default(rl_kenv_opts *o);

/* Scores source (len bytes) against the task in task_dir. Returns the result object (caller
 * frees with cJSON_Delete); NULL only when out of memory (err set). */
cJSON *rl_kenv_eval(const rl_kenv_opts *o, const char *task_dir, const char *source, size_t len,
                    rl_err *err);

/* The reward of docs/kernel-env.md. Returns 0 and sets *reward, or -1 for status "error" (no
 * reward) or an unknown status. */
int rl_kenv_reward(const char *status, double speedup, int noisy, double *reward);

/* GPUs the worker sees (runs `worker --count-devices`); 0 when none or the worker fails. */
int rl_kenv_count_gpus(const rl_kenv_opts *o);

#endif
