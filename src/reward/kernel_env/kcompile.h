/* kcompile.h — compiles a reference or candidate .cu into a shared object with fixed nvcc
 * flags (docs/kernel-env.md), cached by a hash of the source and the flags.
 *
 * The module lands in <cache>/<hash>.so (written under a temporary name and renamed, so
 * concurrent compiles of the same source are safe). nvcc runs as a limited child (kproc.h):
 * wall-time limit, output cap. Candidates are linked without any library and with
 * --no-undefined, so a call into cuBLAS fails at link time; the reference is linked with the
 * libraries its task lists. */
#ifndef RL_REWARD_KENV_KCOMPILE_H
#define RL_REWARD_KENV_KCOMPILE_H

#include <stddef.h>

#include "core/error.h"

typedef struct rl_kcompile_opts {
    const char *nvcc;        /* path or name in PATH */
    const char *cache_dir;   /* created if missing */
    const char *include_dir; /* holds rl_kernel.h */
    const char *arch;        /* e.g. "90a" */
    double timeout_s;
    int sandbox;             /* 1: nvcc runs in ksandbox.h's sandbox, writing only in cache_dir */
} rl_kcompile_opts;

typedef struct rl_kcompile_result {
    int ok;           /* 1: so_path is a module; 0: compile error, see log */
    int cached;
    double seconds;
    char so_path[4096];
    char *log;        /* malloc'd compiler output (empty when cached) */
} rl_kcompile_result;

/* library: RL_KLIB_* bits to link (reference only; pass 0 for candidates). Fails (-1) only for
 * evaluator problems (cache not writable, nvcc missing); a compile error is res->ok = 0. */
int rl_kcompile(const char *source, size_t len, int library, const rl_kcompile_opts *opt,
                rl_kcompile_result *res, rl_err *err);
void rl_kcompile_result_free(rl_kcompile_result *res);

#endif
