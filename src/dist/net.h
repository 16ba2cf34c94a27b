/* net.h — the TCP plumbing of the rendezvous and the CPU communicator: listen, connect with a
 * deadline, and whole-buffer sends and receives that give up when an abort flag is raised.
 *
 * IPv4 only. Every socket is non-blocking with TCP_NODELAY and keep-alive probes every few
 * seconds, so a machine that vanishes (not only a process that exits, whose sockets the kernel
 * closes) is noticed within about 15 s. Sends never raise SIGPIPE. Messages say what failed
 * (connection closed, timed out, refused, aborted); callers put the peer in front. */
#ifndef RL_DIST_NET_H
#define RL_DIST_NET_H

#include <stddef.h>

#include "core/error.h"

/* Listens on every interface at port (SO_REUSEADDR). */
int rl_net_listen(int port, int *fd, rl_err *err);
/* The port a listening socket got (after listening on port 0). */
int rl_net_local_port(int fd, int *port, rl_err *err);
/* Connects to host:port (a name or dotted address), retrying refused or unreachable attempts
 * until timeout_s has passed since the call; on failure err holds the last attempt's reason
 * alone ("Connection refused"), for the caller's message. */
int rl_net_connect(const char *host, int port, double timeout_s, int *fd, rl_err *err);
/* Waits up to timeout_s (< 0: forever) for one incoming connection. */
int rl_net_accept(int listen_fd, double timeout_s, int *fd, rl_err *err);

/* Sends / receives exactly n bytes. They wait up to timeout_s (< 0: forever) and stop early,
 * failing with "aborted", when *abort becomes non-zero (abort may be NULL). */
int rl_net_send(int fd, const void *buf, size_t n, double timeout_s, const volatile int *abort, rl_err *err);
int rl_net_recv(int fd, void *buf, size_t n, double timeout_s, const volatile int *abort, rl_err *err);

void rl_net_close(int fd);

#endif
