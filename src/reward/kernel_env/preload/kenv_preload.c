/* kenv_preload.c — build/librlc-kenv-preload.so, preloaded (LD_PRELOAD) into every sandboxed
 * GPU worker run and sandbox probe (kworker.c; docs/kernel-env.md, "Sandbox").
 *
 * The CUDA driver (580, H100/H200) names each helper thread it starts by writing the name to
 * /proc/self/task/TID/comm through fopen(..., "wb"). Landlock keeps /proc read-only, the open
 * fails with EACCES, and the driver then refuses to start (cudaErrorOperatingSystem); `rlc
 * kernel-eval --sandbox-diag --sandbox-trace` showed this as the one call the sandbox refused.
 * A thread's name is cosmetic, so here exactly that open, when refused, gets /dev/null (always
 * writable in the sandbox) instead: the driver writes the name nowhere and starts, with every
 * layer of the sandbox in place. The alternative, a Landlock write rule on the process's own
 * /proc/PID/task, would also open oom_score_adj and the like to a worker running as root. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "/proc/self/task/<digits>/comm" or "/proc/thread-self/comm", opened for writing. */
static int thread_name_write(const char *path, const char *mode)
{
    if (!path || !mode || !strpbrk(mode, "wa+")) return 0;
    if (!strcmp(path, "/proc/thread-self/comm")) return 1;
    const char *p = "/proc/self/task/";
    if (strncmp(path, p, strlen(p))) return 0;
    path += strlen(p);
    size_t n = strspn(path, "0123456789");
    return n > 0 && !strcmp(path + n, "/comm");
}

#define WRAP(name)                                                                  \
    FILE *name(const char *path, const char *mode)                                  \
    {                                                                               \
        FILE *(*real)(const char *, const char *) =                                 \
            (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, #name);       \
        if (!real) return errno = ENOSYS, (FILE *)NULL;                             \
        FILE *f = real(path, mode);                                                 \
        if (!f && (errno == EACCES || errno == EPERM) && thread_name_write(path, mode)) \
            f = real("/dev/null", "w");                                             \
        return f;                                                                   \
    }
WRAP(fopen)
WRAP(fopen64)
