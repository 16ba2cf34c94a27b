/* kproc.h — runs one untrusted child program with limits and collects its output.
 *
 * The child gets its own process group; when the wall-time limit passes, or it has written
 * more than the output cap, the whole group is killed (SIGKILL), and it is killed again after
 * the child exits so that no grandchild survives. Limits: RLIMIT_CORE 0, RLIMIT_FSIZE and
 * optionally RLIMIT_AS. stdin comes from a memory file (no pipe to block on or SIGPIPE),
 * stdout and stderr are read through pipes, each capped. Safe to call from several threads at
 * once (descriptors are close-on-exec; the environment is built before fork). */
#ifndef RL_REWARD_KENV_KPROC_H
#define RL_REWARD_KENV_KPROC_H

#include <stddef.h>

#include "core/error.h"
#include "reward/kernel_env/ksandbox.h"

#define RL_KPROC_MAX_ENV 12
/* The niceness of compiles (nvcc, KernelBench build-only runs): a batch's compiles fill every
 * core while GPU workers check and time other candidates; the workers, at the caller's
 * niceness, get the CPU first, so the GPU never waits for them and their timed phase, which
 * measures host wall time, is not stretched by compiles. */
#define RL_KPROC_BUILD_NICE 10

typedef struct rl_kproc_opts {
    double timeout_s;       /* wall time; > 0 */
    size_t max_stdout;      /* bytes kept; more kills the child (truncated = 1) */
    size_t max_stderr;      /* bytes kept; more are read and dropped */
    size_t as_limit;        /* RLIMIT_AS in bytes, 0 = none */
    size_t fsize_limit;     /* RLIMIT_FSIZE in bytes, 0 = none */
    const char *stdin_data; /* may be NULL (empty stdin) */
    size_t stdin_len;
    const char *env_set[RL_KPROC_MAX_ENV]; /* "NAME=VALUE" added (replacing NAME), NULL-terminated early */
    int merge_stderr;       /* 1: stderr goes into the stdout capture */
    const rl_ksandbox *sandbox; /* entered in the child before exec (NULL: none); failing to
                                 * enter it exits 125 with the reason on stderr */
    int nice;               /* > 0: the child's niceness (RL_KPROC_BUILD_NICE for compiles) */
} rl_kproc_opts;

typedef struct rl_kproc_result {
    int exited, exit_code;  /* normal exit */
    int signaled, signal;   /* killed by a signal (includes our SIGKILL on timeout) */
    int timed_out, truncated;
    char *out, *err;        /* malloc'd, NUL-terminated */
    size_t out_len, err_len;
    double seconds;
} rl_kproc_result;

/* argv[0] is looked up in PATH. Fails (-1) only when the child cannot be started. */
int rl_kproc_run(char *const argv[], const rl_kproc_opts *opt, rl_kproc_result *res, rl_err *err);
void rl_kproc_result_free(rl_kproc_result *res);

#endif
