/* ksandbox.h — the sandbox a candidate's process runs in (a kernel worker, the Python worker,
 * nvcc): model-written code is untrusted.
 *
 * Layers, each applied between fork and exec (rl_ksandbox_enter), all unprivileged:
 *   - resource limits: CPU time, file size, data segment (heap and private writable maps:
 *     CUDA's large address-space reservations are not data), open files, processes (enforced
 *     by the kernel only for non-root users), no core files;
 *   - Landlock (Linux >= 5.13, when the kernel has it): files may be written only beneath the
 *     private directories (and /dev/null, /dev/shm, the /dev/nvidia* nodes), read anywhere but
 *     in $HOME (except the paths the caller names there: the rlc tree, the module cache, the
 *     Python prefix); TCP bind/connect denied (ABI >= 4); signals to processes outside the
 *     sandbox and abstract Unix sockets refused (ABI >= 6: the parent and the other workers
 *     are out of reach);
 *   - seccomp (libseccomp): socket() for any domain but AF_UNIX and AF_NETLINK fails with
 *     EACCES (no network); ptrace, process_vm_readv/writev, pidfd_*, signals to the parent or
 *     its group or to every process (kill(-1)), and system administration calls (mount,
 *     namespaces, modules, bpf, keys, reboot, clocks) kill the process (SIGSYS: a clear
 *     verdict); with no_fork, so do fork, vfork and clone without CLONE_THREAD (threads stay
 *     allowed); clone3 answers ENOSYS, so that libc falls back to clone, which the filter can
 *     inspect. setpgid stays allowed (ninja's children call it), and /proc stays readable (the
 *     CUDA driver reads /proc/<pid>).
 * The working directory stays the caller's (read-only under Landlock): relative paths in argv
 * keep working. The filter and the rule list are built in the parent (rl_ksandbox_prepare: allocation,
 * libseccomp); the child only makes system calls. */
#ifndef RL_REWARD_KENV_KSANDBOX_H
#define RL_REWARD_KENV_KSANDBOX_H

#include <stddef.h>

#include "core/error.h"

#define RL_KSANDBOX_MAX_PATHS 12

typedef struct rl_ksandbox_spec {
    const char *write_dirs[RL_KSANDBOX_MAX_PATHS]; /* private directories (NULL-terminated early) */
    const char *read_paths[RL_KSANDBOX_MAX_PATHS]; /* also readable inside $HOME */
    const char *home;        /* the directory no read may reach, NULL: $HOME */
    int no_fork;             /* threads only: a new process kills the child (SIGSYS) */
    double cpu_s;            /* RLIMIT_CPU, 0 = none */
    size_t data_bytes;       /* RLIMIT_DATA, 0 = none */
    size_t fsize_bytes;      /* RLIMIT_FSIZE, 0 = none */
    int nproc;               /* RLIMIT_NPROC, 0 = none */
    int no_ioctl_rule;       /* Landlock: leave ioctl on devices unhandled (ABI >= 5 would handle it) */
    int no_landlock;         /* no Landlock layer at all */
    /* Diagnosis only (rl_kdiag): one layer or rule changed at a time. */
    int no_seccomp;          /* no system-call filter */
    int no_scope;            /* Landlock: no signal / abstract-socket scoping (ABI >= 6) */
    int write_all;           /* Landlock: every path writable (file rules still handled) */
} rl_ksandbox_spec;

typedef struct rl_ksandbox rl_ksandbox;

/* Builds the rule list and the seccomp program for a child of the calling process (the
 * parent is the caller: its pid and process group are protected). -1 with err when libseccomp
 * fails. */
int rl_ksandbox_prepare(const rl_ksandbox_spec *spec, rl_ksandbox **out, rl_err *err);
void rl_ksandbox_free(rl_ksandbox *sb);

/* In the child, after fork and before exec: system calls only (async-signal-safe). Returns 0,
 * or -1 with *why naming the step that failed (the child should then _exit). */
int rl_ksandbox_enter(const rl_ksandbox *sb, const char **why);

/* The Landlock ABI this kernel offers (0: none) and a one-line description of the layers a
 * sandbox gets here, e.g. "landlock abi 6, seccomp, rlimits". */
int rl_ksandbox_landlock_abi(void);
void rl_ksandbox_describe(char *out, size_t size);

#endif
