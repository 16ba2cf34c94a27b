/* ranks.h — runs a function on several ranks of one run, each rank a forked process that
 * joins the others through the real rendezvous on 127.0.0.1 and a free port, as `rlc --gpus`
 * ranks do. A rank reports through its exit status (0 = its checks passed) and a message
 * (what failed, or what the test wants to read back, e.g. an error text). Ranks never call
 * Criterion's asserts (they run outside its worker); the test asserts on what came back. */
#ifndef RL_TESTS_DIST_RANKS_H
#define RL_TESTS_DIST_RANKS_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timer.h"
#include "dist/dist.h"
#include "dist/net.h"
#include "test_util.h"

#define TR_MAX_RANKS 8
#define TR_MSG 1024

typedef struct tr_rank {
    int rank, world;
    rl_dist_config cfg;
    char msg[TR_MSG]; /* sent back to the test */
} tr_rank;

/* A rank's body: returns its exit status. */
typedef int (*tr_fn)(tr_rank *r, void *user);

typedef struct tr_result {
    int status[TR_MAX_RANKS]; /* exit status, or 128 + signal */
    char msg[TR_MAX_RANKS][TR_MSG];
    double seconds;           /* until the last rank ended */
} tr_result;

static inline int tr_fail(tr_rank *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return 1;
}

static inline int tr_free_port(void)
{
    int fd, port = 0;
    rl_err err;
    cr_assert_eq(rl_net_listen(0, &fd, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_net_local_port(fd, &port, &err), 0, "%s", err.msg);
    rl_net_close(fd);
    return port;
}

static inline rl_dist_config tr_config(int rank, int world, int port, double timeout_s)
{
    rl_dist_config c;
    memset(&c, 0, sizeof c);
    c.rank = rank;
    c.world = world;
    c.local_rank = rank;
    c.local_world = world;
    snprintf(c.master_addr, sizeof c.master_addr, "127.0.0.1");
    c.master_port = port;
    c.timeout_s = timeout_s;
    snprintf(c.launcher, sizeof c.launcher, "test");
    return c;
}

/* Runs fn on ranks [0, world) (only those with run[r] != 0 when run is not NULL). */
static inline void tr_run(int world, const int *run, tr_fn fn, void *user, tr_result *res)
{
    cr_assert(world >= 1 && world <= TR_MAX_RANKS);
    memset(res, 0, sizeof *res);
    int port = tr_free_port();
    pid_t pid[TR_MAX_RANKS] = {0};
    int pipes[TR_MAX_RANKS][2];
    double t0 = rl_time_now();
    fflush(NULL);
    for (int r = 0; r < world; r++) {
        if (run && !run[r]) continue;
        cr_assert_eq(pipe(pipes[r]), 0);
        pid[r] = fork();
        cr_assert(pid[r] >= 0);
        if (pid[r] == 0) {
            close(pipes[r][0]);
            tr_rank me;
            memset(&me, 0, sizeof me);
            me.rank = r;
            me.world = world;
            me.cfg = tr_config(r, world, port, 20.0);
            int code = fn(&me, user);
            if (write(pipes[r][1], me.msg, strlen(me.msg)) < 0) code = 99;
            close(pipes[r][1]);
            _exit(code);
        }
        close(pipes[r][1]);
    }
    for (int r = 0; r < world; r++) {
        if (!pid[r]) continue;
        size_t n = 0;
        ssize_t k;
        while (n < TR_MSG - 1 && (k = read(pipes[r][0], res->msg[r] + n, TR_MSG - 1 - n)) > 0) n += (size_t)k;
        close(pipes[r][0]);
        int st;
        waitpid(pid[r], &st, 0);
        res->status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    res->seconds = rl_time_now() - t0;
}

#endif
