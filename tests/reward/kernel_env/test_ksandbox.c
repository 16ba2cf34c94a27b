/* test_ksandbox.c — the candidate sandbox (ksandbox.h) against hostile actions, on the CPU: a
 * forked child enters the sandbox and tries to write or delete files outside its private
 * directory, read a secret in $HOME, open a network socket, fork, signal or trace its parent,
 * signal every process, and allocate past its memory limit. Each must fail (an error return,
 * or the child killed by SIGSYS) and leave no trace; what an honest worker needs (threads,
 * files in its own directory, reading the system, exec) must keep working. The file rules need
 * Landlock; on a kernel without it those tests are skipped (and say so). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "reward/kernel_env/ksandbox.h"
#include "test_util.h"

static char root[128], priv[160], home[160], outside[160];

static void make_dirs(void)
{
    snprintf(root, sizeof root, "/tmp/rlc-ksandbox-%d", (int)getpid());
    snprintf(priv, sizeof priv, "%s/private", root);
    snprintf(home, sizeof home, "%s/home", root);
    snprintf(outside, sizeof outside, "%s/outside", root);
    rl_err err;
    cr_assert_eq(rl_mkdir_p(priv, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_mkdir_p(home, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_mkdir_p(outside, &err), 0, "%s", err.msg);
}

static void drop_dirs(void)
{
    rl_err err;
    rl_remove_tree(root, &err);
}

/* Each test makes its own directories (with --jobs a suite's init may run in another process,
 * leaving these paths empty in the test's); they go when the test ends. */
TestSuite(ksandbox, .fini = drop_dirs);

static rl_ksandbox_spec spec_default(void)
{
    if (!root[0]) make_dirs();
    cr_assert(rl_file_exists(priv) && rl_file_exists(outside), "test directories under %s", root);
    rl_ksandbox_spec s;
    memset(&s, 0, sizeof s);
    s.write_dirs[0] = priv;
    s.home = home;
    s.cpu_s = 30;
#ifndef __SANITIZE_ADDRESS__
    s.data_bytes = (size_t)256 << 20; /* AddressSanitizer maps far more than that for itself */
#endif
    return s;
}

typedef int (*action_fn)(void);

/* Runs action in a sandboxed child; returns the wait status. */
static int boxed(const rl_ksandbox_spec *spec, action_fn action)
{
    rl_ksandbox *sb;
    rl_err err;
    cr_assert_eq(rl_ksandbox_prepare(spec, &sb, &err), 0, "%s", err.msg);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        const char *why = NULL;
        if (rl_ksandbox_enter(sb, &why)) _exit(99);
        _exit(action());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    rl_ksandbox_free(sb);
    return status;
}

static void expect_exit(int status, int code, const char *what)
{
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == code, "%s: %s %d, want exit %d", what,
              WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), code);
}

static void expect_sigsys(int status, const char *what)
{
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS, "%s: %s %d, want SIGSYS", what,
              WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static void need_landlock(void)
{
    if (!rl_ksandbox_landlock_abi()) cr_skip_test("this kernel has no Landlock: the file rules are not enforced here");
}

/* 0 when the open for writing failed with EACCES and created nothing. */
static int write_outside(void)
{
    char p[200];
    snprintf(p, sizeof p, "%s/written", outside);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    return fd < 0 && errno == EACCES ? 0 : 1;
}

static int write_inside(void)
{
    char p[200];
    snprintf(p, sizeof p, "%s/scratch", priv);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) return 1;
    int ok = write(fd, "x", 1) == 1;
    close(fd);
    return ok && unlink(p) == 0 ? 0 : 2;
}

Test(ksandbox, writes_only_in_the_private_directory)
{
    need_landlock();
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, write_outside), 0, "write outside");
    char p[200];
    snprintf(p, sizeof p, "%s/written", outside);
    cr_assert(!rl_file_exists(p), "a file appeared outside the private directory");
    expect_exit(boxed(&s, write_inside), 0, "write inside");
}

static int delete_outside(void)
{
    char p[200];
    snprintf(p, sizeof p, "%s/victim", outside);
    return unlink(p) != 0 && errno == EACCES ? 0 : 1;
}

Test(ksandbox, cannot_delete_outside)
{
    need_landlock();
    make_dirs();
    char p[200];
    snprintf(p, sizeof p, "%s/victim", outside);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fclose(f);
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, delete_outside), 0, "unlink outside");
    cr_assert(rl_file_exists(p), "the victim file was deleted");
}

static int read_secret(void)
{
    char p[200];
    snprintf(p, sizeof p, "%s/.secret", home);
    int fd = open(p, O_RDONLY);
    return fd < 0 && errno == EACCES ? 0 : 1;
}

static int read_allowed(void)
{
    char p[200];
    snprintf(p, sizeof p, "%s/lib/module.py", home);
    int fd = open(p, O_RDONLY);
    int fd2 = open("/etc/hostname", O_RDONLY); /* the system stays readable */
    return fd >= 0 && (fd2 >= 0 || errno == ENOENT) ? 0 : 1;
}

Test(ksandbox, home_is_unreadable_but_named_paths)
{
    need_landlock();
    make_dirs();
    char p[200];
    snprintf(p, sizeof p, "%s/.secret", home);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs("token", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/lib", home);
    rl_err err;
    cr_assert_eq(rl_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/lib/module.py", home);
    f = fopen(p, "w");
    cr_assert(f);
    fclose(f);
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, read_secret), 0, "read $HOME");
    char lib[200];
    snprintf(lib, sizeof lib, "%s/lib", home);
    s.read_paths[0] = lib;
    expect_exit(boxed(&s, read_allowed), 0, "read a named path in $HOME");
}

static int open_sockets(void)
{
    int tcp = socket(AF_INET, SOCK_STREAM, 0), tcp6 = socket(AF_INET6, SOCK_DGRAM, 0);
    int raw = socket(AF_PACKET, SOCK_RAW, 0), unix_ok = socket(AF_UNIX, SOCK_STREAM, 0);
    /* an int domain with high bits set must not slip past the filter */
    long sneaky = syscall(SYS_socket, 0x100000002L, SOCK_STREAM, 0);
    if (tcp >= 0 || tcp6 >= 0 || raw >= 0 || sneaky >= 0) return 1;
    return unix_ok >= 0 ? 0 : 2;
}

Test(ksandbox, no_network_sockets)
{
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, open_sockets), 0, "sockets");
}

static int fork_bomb(void)
{
    for (int i = 0; i < 64; i++) {
        pid_t p = fork();
        if (p == 0) _exit(0);
        if (p < 0) return 3;
    }
    return 1;
}

static void *thread_main(void *arg) { return arg; }

static int threads_work(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL)) return 1;
    pthread_join(t, NULL);
    return 0;
}

Test(ksandbox, no_processes_but_threads)
{
    rl_ksandbox_spec s = spec_default();
    s.no_fork = 1;
    expect_sigsys(boxed(&s, fork_bomb), "fork under no_fork");
    expect_exit(boxed(&s, threads_work), 0, "threads under no_fork");
    s.no_fork = 0;
    expect_exit(boxed(&s, threads_work), 0, "threads");
}

static int kill_parent(void) { return kill(getppid(), SIGTERM) == 0 ? 1 : 2; }
static int kill_everyone(void) { return kill(-1, 0) == 0 ? 1 : 2; } /* signal 0: harmless even if let through */
static int trace_parent(void) { return ptrace(PTRACE_ATTACH, getppid(), NULL, NULL) == 0 ? 1 : 2; }
static int kill_own_group(void) { return kill(0, 0) == 0 ? 0 : 1; }

Test(ksandbox, parent_out_of_reach)
{
    rl_ksandbox_spec s = spec_default();
    expect_sigsys(boxed(&s, kill_parent), "kill the parent");
    expect_sigsys(boxed(&s, kill_everyone), "kill(-1)");
    expect_sigsys(boxed(&s, trace_parent), "ptrace the parent");
    expect_exit(boxed(&s, kill_own_group), 0, "signal its own group");
}

static int exhaust_memory(void)
{
    size_t got = 0;
    for (int i = 0; i < 64; i++) {
        char *p = malloc((size_t)64 << 20);
        if (!p) return got < ((size_t)512 << 20) ? 0 : 1;
        p[0] = 1;
        got += (size_t)64 << 20;
    }
    return 1;
}

Test(ksandbox, memory_limit)
{
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("AddressSanitizer's allocator and shadow memory do not live within RLIMIT_DATA");
#endif
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, exhaust_memory), 0, "allocate past RLIMIT_DATA");
}

static int exec_shell(void)
{
    execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
    return 1;
}

Test(ksandbox, exec_still_works)
{
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, exec_shell), 7, "exec /bin/sh");
}

/* The CUDA driver names its threads by writing /proc/self/task/TID/comm with fopen(.., "wb"),
 * which Landlock refuses (/proc is read-only); build/librlc-kenv-preload.so, preloaded into
 * the GPU workers, gives exactly that open /dev/null instead. In a sandboxed child: libc's
 * fopen of the comm file fails with EACCES, the shim's succeeds, and the shim refuses (as libc
 * does) every other write in /proc, and any path that only looks like the comm file. */
typedef FILE *(*fopen_fn)(const char *, const char *);
static fopen_fn shim_fopen;

static int thread_names(void)
{
    char comm[96];
    snprintf(comm, sizeof comm, "/proc/self/task/%ld/comm", (long)syscall(SYS_gettid));
    FILE *f = fopen(comm, "wb");
    if (f || errno != EACCES) return 1;
    f = shim_fopen(comm, "wb");
    if (!f || fputs("rl-driver", f) < 0 || fclose(f) != 0) return 2;
    if (shim_fopen("/proc/self/oom_score_adj", "w") || errno != EACCES) return 3;
    if (shim_fopen("/proc/self/task/1x/comm", "wb") || shim_fopen("/proc/self/task/1/comm/x", "w")) return 4;
    f = shim_fopen(comm, "r"); /* reading stays the real file */
    char name[32] = "";
    if (!f || !fgets(name, sizeof name, f) || strstr(name, "rl-driver")) return 5;
    fclose(f);
    return 0;
}

Test(ksandbox, driver_thread_names_through_the_preload_shim)
{
    need_landlock();
    char path[256];
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    snprintf(path, sizeof path, "%s/librlc-kenv-preload.so", build);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert(h, "%s: %s (make builds it)", path, dlerror());
    shim_fopen = (fopen_fn)dlsym(h, "fopen");
    cr_assert(shim_fopen);
    rl_ksandbox_spec s = spec_default();
    expect_exit(boxed(&s, thread_names), 0, "thread names");
    dlclose(h);
}
