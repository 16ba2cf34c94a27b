/* launch.c — the environment of launched ranks (rl_dist_from_env, dist.h) and the `--gpus N`
 * supervisor (launch.h). */
#include "dist/launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timer.h"
#include "dist/dist.h"
#include "dist/net.h"

#define TERM_AFTER 5.0  /* seconds the other ranks get to stop by themselves after a failure */
#define KILL_AFTER 10.0 /* then seconds between SIGTERM and SIGKILL */

extern char **environ;

/* ---- environment --------------------------------------------------------------------------- */

/* *out = integer value of variable name; 0 when unset (*out untouched), 1 when read, -1 bad. */
static int env_int(const char *name, int *out, rl_err *err)
{
    const char *s = getenv(name);
    if (!s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 1000000)
        return rl_err_set(err, "environment: %s='%s' is not a count", name, s);
    *out = (int)v;
    return 1;
}

typedef struct launcher_vars {
    const char *name, *rank, *world, *local_rank, *local_world;
} launcher_vars;

static const launcher_vars launchers[] = {
    {"torchrun-style environment", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI (mpirun)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH / Intel MPI (mpirun)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
};

int rl_dist_from_env(rl_dist_config *cfg, rl_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t k = 0; k < sizeof launchers / sizeof launchers[0]; k++) {
        const launcher_vars *L = &launchers[k];
        if (!getenv(L->world)) continue;
        if (!getenv(L->rank)) return rl_err_set(err, "environment: %s is set but %s is not", L->world, L->rank);
        cfg->local_rank = -1;
        cfg->local_world = -1;
        if (env_int(L->world, &cfg->world, err) < 0 || env_int(L->rank, &cfg->rank, err) < 0 ||
            env_int(L->local_rank, &cfg->local_rank, err) < 0 || env_int(L->local_world, &cfg->local_world, err) < 0)
            return -1;
        if (cfg->world < 1 || cfg->rank >= cfg->world)
            return rl_err_set(err, "environment: %s=%d is not a rank of %s=%d", L->rank, cfg->rank, L->world, cfg->world);
        /* One process per machine (Kubernetes jobs) sets no local rank. */
        if (cfg->local_rank < 0) cfg->local_rank = 0;
        if (cfg->local_world < 0) cfg->local_world = cfg->local_rank + 1;
        const char *who = getenv("RLC_DIST_LAUNCHER");
        snprintf(cfg->launcher, sizeof cfg->launcher, "%s", who ? who : L->name);
        const char *addr = getenv("MASTER_ADDR");
        if (!addr && cfg->world > 1 && cfg->local_world < cfg->world)
            return rl_err_set(err, "environment: %s starts %d ranks on several machines but MASTER_ADDR is not set "
                                   "(the address of rank 0's machine; with mpirun: -x MASTER_ADDR=host)",
                              cfg->launcher, cfg->world);
        snprintf(cfg->master_addr, sizeof cfg->master_addr, "%s", addr ? addr : "127.0.0.1");
        cfg->master_port = RL_DIST_DEFAULT_PORT;
        if (env_int("MASTER_PORT", &cfg->master_port, err) < 0) return -1;
        if (cfg->master_port < 1 || cfg->master_port > 65535)
            return rl_err_set(err, "environment: MASTER_PORT=%d is not a TCP port", cfg->master_port);
        const char *t = getenv("RLC_DIST_TIMEOUT");
        cfg->timeout_s = RL_DIST_DEFAULT_TIMEOUT;
        if (t) {
            char *end;
            cfg->timeout_s = strtod(t, &end);
            if (end == t || *end || !(cfg->timeout_s > 0) || cfg->timeout_s > 1e6)
                return rl_err_set(err, "environment: RLC_DIST_TIMEOUT='%s' is not a number of seconds", t);
        }
        return 1;
    }
    return 0;
}

/* ---- the --gpus supervisor ------------------------------------------------------------------ */

static volatile sig_atomic_t pending_signal;

static void on_signal(int sig) { pending_signal = sig; }

/* A copy of environ with the rank's variables in front (replacing inherited ones). */
static char **rank_env(int rank, int world, int port)
{
    static const char *const ours[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=",
                                       "MASTER_PORT=", "RLC_DIST_LAUNCHER="};
    size_t n_ours = sizeof ours / sizeof ours[0], n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + n_ours + 1, sizeof *env);
    if (!env) return NULL;
    char vals[7][96];
    snprintf(vals[0], 96, "RANK=%d", rank);
    snprintf(vals[1], 96, "WORLD_SIZE=%d", world);
    snprintf(vals[2], 96, "LOCAL_RANK=%d", rank);
    snprintf(vals[3], 96, "LOCAL_WORLD_SIZE=%d", world);
    snprintf(vals[4], 96, "MASTER_ADDR=127.0.0.1");
    snprintf(vals[5], 96, "MASTER_PORT=%d", port);
    snprintf(vals[6], 96, "RLC_DIST_LAUNCHER=rlc --gpus %d", world);
    size_t k = 0;
    for (size_t i = 0; i < n_ours; i++)
        if (!(env[k++] = strdup(vals[i]))) return env; /* caller sees the NULL and fails */
    for (size_t i = 0; i < n; i++) {
        int shadowed = 0;
        for (size_t j = 0; j < n_ours; j++) shadowed |= !strncmp(environ[i], ours[j], strlen(ours[j]));
        /* other launchers' variables would make the rank think it is someone else's */
        shadowed |= !strncmp(environ[i], "OMPI_COMM_WORLD_", 16) || !strncmp(environ[i], "PMI_", 4);
        if (!shadowed) env[k++] = environ[i];
    }
    return env;
}

static int free_port(int *port, rl_err *err)
{
    int fd;
    if (rl_net_listen(0, &fd, err) != 0) return -1;
    int rc = rl_net_local_port(fd, port, err);
    rl_net_close(fd);
    return rc;
}

static int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

static void signal_all(const pid_t *pid, int n, int sig)
{
    for (int r = 0; r < n; r++)
        if (pid[r] > 0) kill(pid[r], sig);
}

int rl_dist_spawn_local(int n, char **args, rl_err *err)
{
    int port, n_args = 0;
    if (free_port(&port, err) != 0) return rl_err_prefix(err, "--gpus %d: ", n);
    while (args[n_args]) n_args++;
    pid_t *pid = calloc((size_t)n, sizeof *pid);
    char **argv = calloc((size_t)n_args + 2, sizeof *argv);
    if (!pid || !argv) {
        free(pid);
        free(argv);
        return rl_err_oom(err, "--gpus", (size_t)n * sizeof *pid);
    }
    argv[0] = "rlc";
    memcpy(argv + 1, args, (size_t)n_args * sizeof *argv);
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    pending_signal = 0;
    pid_t self = getpid();
    int started = 0, rc = 0;
    for (int r = 0; r < n; r++) {
        char **env = rank_env(r, n, port);
        int ok = env != NULL;
        for (int i = 0; ok && i < 7; i++) ok = env[i] != NULL;
        pid_t p = ok ? fork() : -1;
        if (p == 0) {
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != self) _exit(1);
            execve("/proc/self/exe", argv, env);
            rl_log_error("rank %d: cannot start /proc/self/exe: %s", r, strerror(errno));
            _exit(127);
        }
        for (int i = 0; env && i < 7; i++) free(env[i]);
        free(env);
        if (p < 0) {
            rc = rl_err_set(err, "--gpus %d: cannot start rank %d: %s", n, r, ok ? strerror(errno) : "out of memory");
            break;
        }
        pid[r] = p;
        started++;
    }
    if (rc != 0) signal_all(pid, n, SIGKILL);
    /* After a first failure the others usually stop by themselves within seconds (their
     * watchdogs): they get TERM_AFTER to do so, then SIGTERM, then SIGKILL. Every failure seen
     * before our own signals is reported; the command's status is that of the first rank killed
     * by a signal (the likeliest cause: the others exit 1 because it went), else the first
     * failure's. */
    int alive = started, first = 0, by_signal = 0, interrupted = 0, signalled = rc != 0;
    double term_at = 0, kill_at = rc != 0 ? rl_time_now() : 0;
    while (alive > 0) {
        if (pending_signal) {
            signal_all(pid, n, pending_signal);
            pending_signal = 0;
        }
        double now = rl_time_now();
        if (term_at > 0 && now > term_at && !signalled) {
            signal_all(pid, n, SIGTERM);
            signalled = 1;
        }
        if (kill_at > 0 && now > kill_at) signal_all(pid, n, SIGKILL);
        int status;
        pid_t p = waitpid(-1, &status, term_at > 0 || kill_at > 0 ? WNOHANG : 0);
        if (p <= 0) {
            if (p < 0 && errno != EINTR) break;
            if (p == 0) nanosleep(&(struct timespec){0, 50000000}, NULL);
            continue;
        }
        int r = 0;
        while (r < n && pid[r] != p) r++;
        if (r == n) continue;
        pid[r] = 0;
        alive--;
        int code = exit_code(status);
        interrupted |= code == 130;
        if (code == 0 || code == 130 || signalled) continue;
        if (WIFSIGNALED(status))
            rl_log_error("rank %d (pid %d) was killed by signal %d (%s)", r, (int)p, WTERMSIG(status),
                    strsignal(WTERMSIG(status)));
        else
            rl_log_error("rank %d (pid %d) failed with exit status %d", r, (int)p, code);
        if (!first || (WIFSIGNALED(status) && !by_signal)) first = code;
        by_signal |= WIFSIGNALED(status);
        if (term_at == 0) {
            term_at = rl_time_now() + TERM_AFTER;
            kill_at = term_at + KILL_AFTER;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(pid);
    free(argv);
    if (rc != 0) return -1;
    return first ? first : interrupted ? 130 : 0;
}
