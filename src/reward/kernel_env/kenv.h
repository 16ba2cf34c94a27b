/* kenv.h — the kernel environment: one candidate scored against a task.
 *
 * rl_kenv_eval takes two kinds of task. A native task (a directory with spec.json and
 * reference.cu): load the task (kspec.h), static checks (kstatic.h), compile reference and
 * candidate (kcompile.h, cached), run build/rlc-kernel-worker in a limited child (kproc.h) with
 * the task's plan. A KernelBench task (a problem file *.py: Model, get_inputs,
 * get_init_inputs) with a Python candidate (ModelNew): static checks of the Python and of its
 * inline CUDA, then kernelbench_worker.py under the same child limits. Both workers get the
 * protocol's parameters (kproto.h) from rlc and print one JSON line carrying a nonce; rlc turns
 * it into the result object and reward of docs/kernel-env.md. A misbehaving candidate (crash,
 * hang, flood of output, garbage) fails itself only; an evaluator problem (no GPU, no python or
 * torch, a bad task) gives status "error" and a null reward. */
#ifndef RL_REWARD_KENV_KENV_H
#define RL_REWARD_KENV_KENV_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "reward/kernel_env/kproto.h"

typedef struct rl_kenv_opts {
    const char *worker;        /* path of rlc-kernel-worker */
    const char *python;        /* interpreter for KernelBench tasks (needs torch) */
    const char *kb_worker;     /* kernelbench_worker.py */
    const char *protocol_path; /* protocol.json */
    const char *nvcc;
    const char *cache_dir;
    const char *include_dir;   /* holds rl_kernel.h */
    const char *arch;
    rl_kproto proto;           /* every protocol parameter (rl_kenv_load_protocol) */
    int proto_loaded;
    int keep_going;            /* run the worker even after a fatal static finding */
    const char *devices;       /* CUDA_VISIBLE_DEVICES for the worker; NULL: inherit */
    /* Optional GPU pool (batch mode): called around the worker run only, so compiles of
     * several candidates overlap while each GPU runs one worker at a time. acquire returns
     * the CUDA_VISIBLE_DEVICES value to use (overrides devices). */
    const char *(*gpu_acquire)(void *ctx);
    void (*gpu_release)(void *ctx, const char *device);
    void *gpu_ctx;
    uint64_t seed;
} rl_kenv_opts;

/* Defaults: the worker beside the running executable; the include dir, protocol.json and
 * kernelbench_worker.py in src/reward/kernel_env/ found from the executable's directory (up to
 * three levels up, else relative to the working directory); python3 from PATH; cache
 * ~/.cache/rlc/kernels, nvcc from $CUDA_HOME or PATH, arch 90a. The strings point into static
 * storage. The protocol is not loaded yet. */
void rl_kenv_opts_default(rl_kenv_opts *o);

/* Loads o->protocol_path into o->proto (callers then override single values). */
int rl_kenv_load_protocol(rl_kenv_opts *o, rl_err *err);

/* 1 if task names a KernelBench problem file (ends in .py) rather than a task directory. */
int rl_kenv_is_kernelbench(const char *task);

/* Scores source (len bytes; CUDA for a task directory, Python for a KernelBench problem file)
 * against the task. Returns the result object (caller frees with cJSON_Delete); NULL only
 * when out of memory (err set). Status "error" when the protocol was not loaded. */
cJSON *rl_kenv_eval(const rl_kenv_opts *o, const char *task_dir, const char *source, size_t len,
                    rl_err *err);

/* The reward of docs/kernel-env.md. Returns 0 and sets *reward, or -1 for status "error" (no
 * reward) or an unknown status. */
int rl_kenv_reward(const char *status, double speedup, int noisy, double *reward);

/* GPUs the worker sees (runs `worker --count-devices`; if that fails, asks torch through
 * o->python); 0 when none or both fail. */
int rl_kenv_count_gpus(const rl_kenv_opts *o);

#endif
