/* watchdog.c — see watchdog.h. The thread sleeps in poll() on the control sockets and on a
 * pipe through which the main thread asks it to finish ('F') or stop ('S'). Control messages
 * are 8 bytes: a code ('B' bye, 'A' abort) and a rank. */
#include "dist/watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timer.h"
#include "dist/net.h"

#define FINISH_WAIT 10.0 /* seconds rank 0 waits for the others' byes */

typedef struct ctrl_msg {
    uint8_t code, pad[3];
    int32_t rank;
} ctrl_msg;

struct rl_watchdog {
    int rank, world, n_fds;
    int *fds;      /* rank 0: [world] (fds[0] = -1); others: fds[0] */
    uint8_t *bye;  /* rank 0: [world] */
    int pipe_rd, pipe_wr;
    double grace_s;
    void (*on_lost)(void *user);
    void *user;
    volatile int lost;
    pthread_t thread;
    int running;
};

int rl_watchdog_lost(const rl_watchdog *w) { return w ? w->lost : -1; }

static int send_msg(int fd, char code, int rank)
{
    ctrl_msg m = {(uint8_t)code, {0, 0, 0}, rank};
    rl_err e;
    return rl_net_send(fd, &m, sizeof m, 2.0, NULL, &e);
}

/* A rank is gone: tell the others (rank 0), report, abort, and give the main thread grace_s to
 * unwind before ending the process. Returns only when the main thread asked the thread to
 * stop meanwhile. */
static void lose(rl_watchdog *w, int who)
{
    w->lost = who;
    if (w->rank == 0)
        for (int r = 1; r < w->world; r++)
            if (r != who && w->fds[r] >= 0) send_msg(w->fds[r], 'A', who);
    rl_log_error("rank %d of %d: rank %d exited or lost its connection; stopping this rank", w->rank,
            w->world, who);
    if (w->on_lost) w->on_lost(w->user);
    struct pollfd p = {w->pipe_rd, POLLIN, 0};
    if (poll(&p, 1, (int)(w->grace_s * 1000)) > 0) return;
    rl_log_error("rank %d: still running %g s after rank %d was lost; exiting", w->rank, w->grace_s, who);
    _exit(1);
}

static void *watch(void *arg)
{
    rl_watchdog *w = arg;
    struct pollfd *p = malloc((size_t)(w->n_fds + 1) * sizeof *p);
    int *peer = malloc((size_t)(w->n_fds + 1) * sizeof *peer);
    double finish_by = 0;
    while (p && peer) {
        int n = 0, open = 0;
        p[n++] = (struct pollfd){w->pipe_rd, POLLIN, 0};
        for (int i = 0; i < w->n_fds; i++)
            if (w->fds[i] >= 0) {
                peer[n] = w->rank == 0 ? i : 0;
                p[n++] = (struct pollfd){w->fds[i], POLLIN, 0};
                open++;
            }
        if (finish_by > 0 && (open == 0 || rl_time_now() > finish_by)) break;
        if (poll(p, (nfds_t)n, finish_by > 0 ? 100 : -1) <= 0) continue;
        if (p[0].revents) {
            char c = 0;
            if (read(w->pipe_rd, &c, 1) != 1 || c == 'S') break;
            finish_by = rl_time_now() + FINISH_WAIT;
        }
        for (int i = 1; i < n; i++) {
            if (!p[i].revents) continue;
            int who = peer[i], slot = w->rank == 0 ? who : 0;
            ctrl_msg m;
            rl_err e;
            if (rl_net_recv(p[i].fd, &m, sizeof m, 2.0, NULL, &e) != 0) {
                rl_net_close(w->fds[slot]);
                w->fds[slot] = -1;
                if (w->rank == 0 && w->bye[who]) continue;
                lose(w, who);
                goto done;
            }
            if (m.code == 'B' && w->rank == 0) w->bye[who] = 1;
            if (m.code == 'A') {
                lose(w, m.rank);
                goto done;
            }
        }
    }
done:
    free(p);
    free(peer);
    return NULL;
}

int rl_watchdog_start(rl_watchdog **out, int rank, int world, const int *ctrl, double grace_s,
                      void (*on_lost)(void *user), void *user, rl_err *err)
{
    *out = NULL;
    int n = rank == 0 ? world : 1, fds[2];
    rl_watchdog *w = calloc(1, sizeof *w);
    if (w) {
        w->fds = malloc((size_t)n * sizeof *w->fds);
        w->bye = calloc((size_t)n, 1);
    }
    if (!w || !w->fds || !w->bye) {
        for (int r = 0; r < n; r++) rl_net_close(ctrl[r]);
        if (w) free(w->fds), free(w->bye);
        free(w);
        return rl_err_oom(err, "watchdog", (size_t)n * sizeof(int));
    }
    memcpy(w->fds, ctrl, (size_t)n * sizeof *w->fds);
    *w = (rl_watchdog){rank, world, n, w->fds, w->bye, -1, -1, grace_s, on_lost, user, -1, 0, 0};
    if (pipe2(fds, O_CLOEXEC) != 0) {
        rl_watchdog_stop(w);
        return rl_err_set(err, "watchdog: cannot create a pipe");
    }
    w->pipe_rd = fds[0];
    w->pipe_wr = fds[1];
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
        rl_watchdog_stop(w);
        return rl_err_set(err, "watchdog: cannot start a thread");
    }
    w->running = 1;
    *out = w;
    return 0;
}

static void join(rl_watchdog *w, char how)
{
    if (!w->running) return;
    if (write(w->pipe_wr, &how, 1) != 1) return; /* the thread then runs until the process ends */
    pthread_join(w->thread, NULL);
    w->running = 0;
}

int rl_watchdog_finish(rl_watchdog *w, rl_err *err)
{
    if (w->rank == 0) {
        join(w, 'F');
        for (int r = 1; r < w->world; r++)
            if (w->fds[r] >= 0 && !w->bye[r])
                return rl_err_set(err, "rank 0: rank %d did not say goodbye within %g s", r, FINISH_WAIT);
        return 0;
    }
    join(w, 'S');
    if (w->fds[0] >= 0 && send_msg(w->fds[0], 'B', w->rank) != 0)
        return rl_err_set(err, "rank %d: could not say goodbye to rank 0", w->rank);
    return 0;
}

void rl_watchdog_stop(rl_watchdog *w)
{
    if (!w) return;
    join(w, 'S');
    for (int i = 0; i < w->n_fds; i++) rl_net_close(w->fds[i]);
    rl_net_close(w->pipe_rd);
    rl_net_close(w->pipe_wr);
    free(w->fds);
    free(w->bye);
    free(w);
}
