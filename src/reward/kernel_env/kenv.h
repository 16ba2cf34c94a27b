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
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "reward/kernel_env/kproto.h"
#include "reward/kernel_env/kstatic.h"

/* Where the default paths of rl_kenv_opts_default live: the caller owns it, for as long as the
 * options that point into it. */
typedef struct rl_kenv_paths {
    char worker[PATH_MAX + 64], include_dir[PATH_MAX + 64], protocol[PATH_MAX + 64], kb_worker[PATH_MAX + 64];
    char cache_dir[PATH_MAX + 64], nvcc[PATH_MAX + 64];
} rl_kenv_paths;

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
     * several candidates overlap with the workers. acquire returns the CUDA_VISIBLE_DEVICES
     * value to use (overrides devices). Every worker run gets --gpu-lock
     * $TMPDIR/rlc-gpu-<device>.lock: correctness shared, timing exclusive on that GPU. */
    const char *(*gpu_acquire)(void *ctx);
    void (*gpu_release)(void *ctx, const char *device);
    /* Optional compile slots (the pool), called with gpu_ctx around each candidate's compiles
     * (nvcc; KernelBench: the build-only runs): at most the pool's compile count at once, while
     * more candidates in flight wait for a GPU without holding a core. */
    void (*build_acquire)(void *ctx);
    void (*build_release)(void *ctx);
    void *gpu_ctx;
    uint64_t seed;
    int require_kernel;        /* KernelBench: ModelNew must launch a kernel its own code defines */
    int no_sandbox;            /* 1: workers and nvcc run without ksandbox.h's sandbox (debugging) */
    const char *kb_pch;        /* KernelBench: the precompiled torch/extension.h's directory (kbpch.h;
                                * NULL: <cache_dir>/kb-pch-<hash>) */
    int kb_no_pch;             /* 1: load_inline builds parse torch's headers every time */
    int kb_no_light;           /* 1: KernelBench builds' nvcc step gets the candidate's torch/extension.h
                                * as it is, not the lighter one first (kblight.h) */
    int profile;               /* 1: full evaluations also time each kernel launched (workers get
                                * --profile): the result's "profile" {"candidate": [{"name",
                                * "calls", "ms"}, ...], "reference": [...]} (the profile tool) */
    int gpu_workers;           /* pool: workers at once per GPU (0: 4). They share the GPU for
                                * correctness; timing is exclusive by the GPU's lock file */
    int gpu_workers_idle;      /* pool: workers at once per GPU while compile slots idle (kpool.h;
                                * 0: 2 x gpu_workers; -1: gpu_workers) */
} rl_kenv_opts;

/* Defaults: the worker beside the running executable; the include dir, protocol.json and
 * kernelbench_worker.py in src/reward/kernel_env/ found from the executable's directory (up to
 * three levels up, else relative to the working directory); python3 from PATH; cache
 * ~/.cache/rlc/kernels, nvcc from $CUDA_HOME or PATH, arch 90a. The strings point into *paths.
 * The protocol is not loaded yet. */
void rl_kenv_opts_default(rl_kenv_opts *o, rl_kenv_paths *paths);

/* Loads o->protocol_path into o->proto (callers then override single values). */
int rl_kenv_load_protocol(rl_kenv_opts *o, rl_err *err);

/* 1 if task names a KernelBench problem file (ends in .py) rather than a task directory. */
int rl_kenv_is_kernelbench(const char *task);

typedef enum {
    RL_KENV_OK, RL_KENV_COMPILE_ERROR, RL_KENV_INCORRECT, RL_KENV_CHEAT, RL_KENV_CRASH, RL_KENV_TIMEOUT,
    RL_KENV_ERROR, /* the evaluator's problem, not the candidate's: no reward */
    RL_KENV_DISALLOWED /* a pattern the rules do not allow (a fatal static finding, no own kernel
                        * under require_kernel): not a faked result or time, which is RL_KENV_CHEAT */
} rl_kenv_status;
extern const char *const rl_kenv_status_names[]; /* "ok", "compile_error", ..., "error", "disallowed", NULL */

/* What one evaluation found. The typed fields are what callers use; json is the whole record of
 * docs/kernel-env.md (every measurement, the compile logs), which `rlc kernel-eval --json` and
 * the batch mode print. Strings point into json. */
typedef struct rl_kenv_result {
    rl_kenv_status status;
    const char *failure;     /* why the candidate (or the evaluation) failed; NULL when it did not */
    int has_reward;          /* 0 for RL_KENV_ERROR */
    double reward;
    int timed;               /* status ok: the medians and the speedup below are measured */
    double ref_ms, cand_ms, speedup;
    int noisy;               /* the timing spread stayed high: speedup above 1 counts as 1 */
    rl_kstatic findings;     /* the static checks */
    const char *compile_log; /* RL_KENV_COMPILE_ERROR: the compiler's output, else NULL */
    cJSON *json;
} rl_kenv_result;

/* Scores source (len bytes; CUDA for a task directory, Python for a KernelBench problem file)
 * against the task into *res (rl_kenv_result_free). Returns -1 only when out of memory (err
 * set); any other problem is status RL_KENV_ERROR with the reason in failure (the protocol not
 * loaded, a bad task, no GPU, ...). */
int rl_kenv_eval(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *res,
                 rl_err *err);
void rl_kenv_result_free(rl_kenv_result *res);

/* The three tools of a multi-turn kernel episode, on the same task and source arguments and
 * the same result (rl_kenv_result_free):
 *   rl_kenv_compile  compile only (native: the static checks and nvcc, the compiler's output in
 *                    compile_log / json "compile.log"; KernelBench: the static checks and the
 *                    Python worker with --build-only, no GPU: it imports the candidate, which
 *                    builds its load_inline extensions; a build error is compile_error with the
 *                    message in failure). Status ok: it compiles. Nothing runs on a GPU.
 *   rl_kenv_check    correctness only: every trial of the protocol, no timing; status ok means
 *                    correct, else failure names the first mismatch (no speedup; timed = 0).
 *   rl_kenv_profile  the whole protocol, timing against the reference included (= rl_kenv_eval);
 *                    KernelBench results with --require-kernel also list the kernels launched.
 * The reward field follows the status as in rl_kenv_eval (for compile/check an ok is 0.2, the
 * reward of an ok at speedup 1: use the status there, not the reward). */
int rl_kenv_compile(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *res,
                    rl_err *err);
int rl_kenv_check(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *res,
                  rl_err *err);
int rl_kenv_profile(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *res,
                    rl_err *err);

/* The reward of docs/kernel-env.md. Returns 0 and sets *reward, or -1 for status "error" (no
 * reward) or an unknown status. */
int rl_kenv_reward(const char *status, double speedup, int noisy, double *reward);

#endif
