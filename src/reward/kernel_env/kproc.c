/* kproc.c — see kproc.h. */
#include "reward/kernel_env/kproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timer.h"

extern char **environ;

typedef struct capture {
    char *buf;
    size_t len, cap, limit;
    int over;
} capture;

static int capture_add(capture *c, const char *data, size_t n)
{
    if (c->len + n > c->limit) {
        c->over = 1;
        n = c->limit > c->len ? c->limit - c->len : 0;
    }
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1) cap *= 2;
        char *g = realloc(c->buf, cap);
        if (!g) return -1;
        c->buf = g;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    c->buf[c->len] = 0;
    return 0;
}

/* environ plus opt->env_set (replacing entries of the same name); one malloc'd array. */
static char **build_env(const rl_kproc_opts *opt)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **env = malloc((n + RL_KPROC_MAX_ENV + 1) * sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (int j = 0; j < RL_KPROC_MAX_ENV && opt->env_set[j]; j++) {
            const char *eq = strchr(opt->env_set[j], '=');
            size_t nl = eq ? (size_t)(eq - opt->env_set[j]) : 0;
            if (nl && !strncmp(environ[i], opt->env_set[j], nl) && environ[i][nl] == '=') replaced = 1;
        }
        if (!replaced) env[k++] = environ[i];
    }
    for (int j = 0; j < RL_KPROC_MAX_ENV && opt->env_set[j]; j++) env[k++] = (char *)opt->env_set[j];
    env[k] = NULL;
    return env;
}

static void set_limit(int resource, size_t value)
{
    struct rlimit rl = {(rlim_t)value, (rlim_t)value};
    setrlimit(resource, &rl);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const argv[], const rl_kproc_opts *opt, char **env, int in_fd, int out_fd, int err_fd)
{
    setpgid(0, 0);
    set_limit(RLIMIT_CORE, 0);
    if (opt->fsize_limit) set_limit(RLIMIT_FSIZE, opt->fsize_limit);
    if (opt->as_limit) set_limit(RLIMIT_AS, opt->as_limit);
    if (opt->nice > 0 && getpriority(PRIO_PROCESS, 0) < opt->nice) setpriority(PRIO_PROCESS, 0, opt->nice);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(opt->merge_stderr ? out_fd : err_fd, 2) < 0) _exit(126);
    const char *why = NULL;
    if (opt->sandbox && rl_ksandbox_enter(opt->sandbox, &why) != 0) {
        ssize_t w = write(2, why, strlen(why));
        (void)w;
        _exit(125);
    }
    execvpe(argv[0], argv, env);
    _exit(127);
}

int rl_kproc_run(char *const argv[], const rl_kproc_opts *opt, rl_kproc_result *res, rl_err *err)
{
    memset(res, 0, sizeof *res);
    int in_fd = memfd_create("rlc-stdin", MFD_CLOEXEC);
    if (in_fd < 0) return rl_err_set(err, "%s: memfd_create: %s", argv[0], strerror(errno));
    size_t off = 0;
    while (off < opt->stdin_len) {
        ssize_t w = write(in_fd, opt->stdin_data + off, opt->stdin_len - off);
        if (w <= 0) {
            close(in_fd);
            return rl_err_set(err, "%s: cannot write its stdin: %s", argv[0], strerror(errno));
        }
        off += (size_t)w;
    }
    lseek(in_fd, 0, SEEK_SET);
    int out_p[2], err_p[2];
    if (pipe2(out_p, O_CLOEXEC)) {
        close(in_fd);
        return rl_err_set(err, "%s: pipe: %s", argv[0], strerror(errno));
    }
    if (pipe2(err_p, O_CLOEXEC)) {
        close(in_fd), close(out_p[0]), close(out_p[1]);
        return rl_err_set(err, "%s: pipe: %s", argv[0], strerror(errno));
    }
    char **env = build_env(opt);
    double t0 = rl_time_now();
    pid_t pid = env ? fork() : -1;
    if (pid == 0) child_exec(argv, opt, env, in_fd, out_p[1], err_p[1]);
    int fork_errno = errno;
    free(env);
    close(in_fd), close(out_p[1]), close(err_p[1]);
    if (pid < 0) {
        close(out_p[0]), close(err_p[0]);
        return rl_err_set(err, "%s: cannot start: %s", argv[0], strerror(fork_errno));
    }
    setpgid(pid, pid);

    capture out = {0}, errc = {0};
    out.limit = opt->max_stdout;
    errc.limit = opt->max_stderr;
    struct pollfd fds[2] = {{out_p[0], POLLIN, 0}, {err_p[0], POLLIN, 0}};
    int open_fds = 2, status = 0, reaped = 0;
    char chunk[65536];
    while (open_fds > 0 || !reaped) {
        double left = opt->timeout_s - (rl_time_now() - t0);
        if (left <= 0) {
            res->timed_out = 1;
            break;
        }
        if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
            reaped = 1;
            kill(-pid, SIGKILL); /* descendants that kept the pipes open */
        }
        if (open_fds == 0) {
            usleep(2000);
            continue;
        }
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        if (poll(fds, 2, ms) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            capture *c = i == 0 ? &out : &errc;
            if (capture_add(c, chunk, (size_t)n)) c->over = 1;
        }
        if (out.over) {
            res->truncated = 1;
            break;
        }
    }
    kill(-pid, SIGKILL);
    if (!reaped) waitpid(pid, &status, 0);
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    res->seconds = rl_time_now() - t0;
    if (WIFEXITED(status)) {
        res->exited = 1;
        res->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->signaled = 1;
        res->signal = WTERMSIG(status);
    }
    if (res->timed_out || res->truncated) res->exited = 0;
    res->out = out.buf ? out.buf : calloc(1, 1);
    res->err = errc.buf ? errc.buf : calloc(1, 1);
    res->out_len = out.len;
    res->err_len = errc.len;
    if (!res->out || !res->err) {
        rl_kproc_result_free(res);
        return rl_err_oom(err, "child output", 1);
    }
    return 0;
}

void rl_kproc_result_free(rl_kproc_result *res)
{
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}
