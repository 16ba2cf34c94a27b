/* net.c — see net.h. Waits are poll() loops in slices of at most 200 ms, so an abort flag
 * raised by another thread (the watchdog) is seen promptly without signals. */
#include "dist/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"

#define SLICE_MS 200

static int set_options(int fd)
{
    int one = 1, idle = 5, interval = 2, count = 4;
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    return 0;
}

void rl_net_close(int fd)
{
    if (fd >= 0) close(fd);
}

int rl_net_listen(int port, int *fd, rl_err *err)
{
    *fd = -1;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return rl_err_set(err, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 256) != 0 || set_options(s) != 0) {
        int e = errno;
        close(s);
        return rl_err_set(err, "cannot listen on port %d: %s", port, strerror(e));
    }
    *fd = s;
    return 0;
}

int rl_net_local_port(int fd, int *port, rl_err *err)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0) return rl_err_set(err, "getsockname: %s", strerror(errno));
    *port = ntohs(a.sin_port);
    return 0;
}

static void nap(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One connection attempt within `remaining` seconds: 0, or an errno-like code. */
static int try_connect(const struct sockaddr_in *a, double remaining, int *fd)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    if (set_options(s) != 0) {
        int e = errno;
        close(s);
        return e;
    }
    if (connect(s, (const struct sockaddr *)a, sizeof *a) != 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(s);
            return e;
        }
        struct pollfd p = {s, POLLOUT, 0};
        int ms = remaining > 0 ? (int)(remaining * 1000) + 1 : 0;
        int r = poll(&p, 1, ms);
        int e = 0;
        socklen_t len = sizeof e;
        if (r == 0) e = ETIMEDOUT;
        else if (r < 0) e = errno;
        else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
        if (e) {
            close(s);
            return e;
        }
    }
    *fd = s;
    return 0;
}

int rl_net_connect(const char *host, int port, double timeout_s, int *fd, rl_err *err)
{
    *fd = -1;
    double deadline = rl_time_now() + timeout_s;
    char last[256] = "no attempt";
    for (;;) {
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
        int g = getaddrinfo(host, NULL, &hints, &res);
        if (g != 0) {
            snprintf(last, sizeof last, "cannot resolve the name: %s", gai_strerror(g));
        } else {
            struct sockaddr_in a = *(struct sockaddr_in *)res->ai_addr;
            freeaddrinfo(res);
            a.sin_port = htons((uint16_t)port);
            int e = try_connect(&a, deadline - rl_time_now(), fd);
            if (e == 0) return 0;
            snprintf(last, sizeof last, "%s", strerror(e));
        }
        double left = deadline - rl_time_now();
        if (left <= 0)
            return rl_err_set(err, "%s", last);
        nap(left < 0.1 ? left : 0.1);
    }
}

int rl_net_accept(int listen_fd, double timeout_s, int *fd, rl_err *err)
{
    *fd = -1;
    struct pollfd p = {listen_fd, POLLIN, 0};
    int r = poll(&p, 1, timeout_s < 0 ? -1 : (int)(timeout_s * 1000));
    if (r == 0) return rl_err_set(err, "timed out after %g s", timeout_s);
    if (r < 0) return rl_err_set(err, "poll: %s", strerror(errno));
    int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0 || set_options(s) != 0) {
        int e = errno;
        if (s >= 0) close(s);
        return rl_err_set(err, "accept: %s", strerror(e));
    }
    *fd = s;
    return 0;
}

/* Waits for fd to become ready for `events`; 0 ready, -1 with err set. */
static int wait_ready(int fd, short events, double deadline, const volatile int *abort, rl_err *err)
{
    for (;;) {
        if (abort && *abort) return rl_err_set(err, "aborted");
        int ms = SLICE_MS;
        if (deadline > 0) {
            double left = deadline - rl_time_now();
            if (left <= 0) return rl_err_set(err, "timed out");
            if (left * 1000 < ms) ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, ms);
        if (r < 0 && errno != EINTR) return rl_err_set(err, "poll: %s", strerror(errno));
        if (r > 0) return 0;
    }
}

int rl_net_send(int fd, const void *buf, size_t n, double timeout_s, const volatile int *abort, rl_err *err)
{
    const char *p = buf;
    double deadline = timeout_s < 0 ? 0 : rl_time_now() + timeout_s;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            if (errno == EPIPE || errno == ECONNRESET) return rl_err_set(err, "connection closed by the other side");
            return rl_err_set(err, "send: %s", strerror(errno));
        }
        if (wait_ready(fd, POLLOUT, deadline, abort, err) != 0) return -1;
    }
    return 0;
}

int rl_net_recv(int fd, void *buf, size_t n, double timeout_s, const volatile int *abort, rl_err *err)
{
    char *p = buf;
    double deadline = timeout_s < 0 ? 0 : rl_time_now() + timeout_s;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0) return rl_err_set(err, "connection closed by the other side");
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            if (errno == ECONNRESET) return rl_err_set(err, "connection closed by the other side");
            return rl_err_set(err, "recv: %s", strerror(errno));
        }
        if (wait_ready(fd, POLLIN, deadline, abort, err) != 0) return -1;
    }
    return 0;
}
