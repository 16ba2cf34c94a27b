/* comm_cpu.c — the CPU communicator: ranks are processes (on one machine or several) joined to
 * rank 0 by one TCP socket each, a star. Every collective goes through rank 0: the others send
 * their data, rank 0 combines the contributions in rank order (rank 0's first, then 1, 2, ...)
 * and sends the result back. One fixed order makes the sums identical on every rank and from
 * run to run. Large buffers move in chunks of CHUNK floats, so rank 0 needs two chunk-sized
 * buffers whatever the size; each rank waits for a chunk's result before sending the next.
 *
 * This is the CI's communicator and is fine for CPU-sized models; it is not meant to be fast
 * (rank 0 carries all the traffic). Collectives complete before they return (tickets are 0). */
#include <stdlib.h>
#include <string.h>

#include "dist/comm.h"
#include "dist/net.h"

#define CHUNK ((size_t)1 << 20)

typedef struct cpu_comm {
    int *fds;         /* rank 0: [world], fds[r] to rank r; others: fds[0] to rank 0 */
    float *tmp, *sum; /* [CHUNK] each */
    volatile int aborted;
} cpu_comm;

static cpu_comm *impl(rl_comm *c) { return c->impl; }

static int fd_to(rl_comm *c, int peer) { return impl(c)->fds[c->rank == 0 ? peer : 0]; }

/* Network failures name the peer and what it likely means. */
static int io(rl_comm *c, int send, int peer, void *buf, size_t bytes, const char *what, rl_err *err)
{
    cpu_comm *p = impl(c);
    int rc = send ? rl_net_send(fd_to(c, peer), buf, bytes, -1, &p->aborted, err)
                  : rl_net_recv(fd_to(c, peer), buf, bytes, -1, &p->aborted, err);
    if (rc == 0) return 0;
    if (strstr(err->msg, "closed"))
        return rl_err_set(err, "%s: rank %d closed its connection to rank %d (it exited or failed)", what,
                          peer, c->rank);
    return rl_err_prefix(err, "%s: rank %d <-> rank %d: ", what, c->rank, peer);
}

static int cpu_allreduce(rl_comm *c, float *buf, size_t n, rl_err *err)
{
    cpu_comm *p = impl(c);
    for (size_t at = 0; at < n; at += CHUNK) {
        size_t k = n - at < CHUNK ? n - at : CHUNK, bytes = k * sizeof(float);
        if (c->rank != 0) {
            if (io(c, 1, 0, buf + at, bytes, "allreduce", err) || io(c, 0, 0, buf + at, bytes, "allreduce", err))
                return -1;
            continue;
        }
        for (int r = 1; r < c->world; r++) {
            if (io(c, 0, r, p->tmp, bytes, "allreduce", err)) return -1;
            for (size_t i = 0; i < k; i++) buf[at + i] += p->tmp[i];
        }
        for (int r = 1; r < c->world; r++)
            if (io(c, 1, r, buf + at, bytes, "allreduce", err)) return -1;
    }
    return 0;
}

static int cpu_reduce(rl_comm *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err)
{
    cpu_comm *p = impl(c);
    for (size_t at = 0; at < n; at += CHUNK) {
        size_t k = n - at < CHUNK ? n - at : CHUNK, bytes = k * sizeof(float);
        float *sum = p->sum;
        if (c->rank != 0) {
            if (io(c, 1, 0, src + at, bytes, "reduce", err)) return -1;
            if (c->rank == root && io(c, 0, 0, sum, bytes, "reduce", err)) return -1;
        } else {
            memcpy(sum, src + at, bytes);
            for (int r = 1; r < c->world; r++) {
                if (io(c, 0, r, p->tmp, bytes, "reduce", err)) return -1;
                for (size_t i = 0; i < k; i++) sum[i] += p->tmp[i];
            }
            if (root != 0 && io(c, 1, root, sum, bytes, "reduce", err)) return -1;
        }
        if (c->rank == root) {
            if (accumulate)
                for (size_t i = 0; i < k; i++) dst[at + i] += sum[i];
            else
                memcpy(dst + at, sum, bytes);
        }
    }
    return 0;
}

static int cpu_broadcast(rl_comm *c, void *buf, size_t bytes, int root, rl_err *err)
{
    if (root != 0 && (c->rank == root || c->rank == 0) &&
        io(c, c->rank == root, c->rank == root ? 0 : root, buf, bytes, "broadcast", err))
        return -1;
    if (c->rank != 0) return c->rank == root ? 0 : io(c, 0, 0, buf, bytes, "broadcast", err);
    for (int r = 1; r < c->world; r++)
        if (r != root && io(c, 1, r, buf, bytes, "broadcast", err)) return -1;
    return 0;
}

static int cpu_allgatherv(rl_comm *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err)
{
    char *b = buf;
    size_t total = offsets[c->world] * elem_bytes;
    if (c->rank != 0) {
        size_t at = offsets[c->rank] * elem_bytes, bytes = (offsets[c->rank + 1] - offsets[c->rank]) * elem_bytes;
        if (io(c, 1, 0, b + at, bytes, "allgather", err)) return -1;
        return io(c, 0, 0, b, total, "allgather", err);
    }
    for (int r = 1; r < c->world; r++)
        if (io(c, 0, r, b + offsets[r] * elem_bytes, (offsets[r + 1] - offsets[r]) * elem_bytes, "allgather", err))
            return -1;
    for (int r = 1; r < c->world; r++)
        if (io(c, 1, r, b, total, "allgather", err)) return -1;
    return 0;
}

static int p2p_check(rl_comm *c, int peer, rl_err *err)
{
    if (c->rank != 0 && peer != 0)
        return rl_err_set(err, "the CPU communicator joins ranks through rank 0 only: rank %d cannot reach rank %d",
                          c->rank, peer);
    return 0;
}

static int cpu_send(rl_comm *c, const void *buf, size_t bytes, int peer, rl_err *err)
{
    return p2p_check(c, peer, err) || io(c, 1, peer, (void *)buf, bytes, "send", err) ? -1 : 0;
}

static int cpu_recv(rl_comm *c, void *buf, size_t bytes, int peer, rl_err *err)
{
    return p2p_check(c, peer, err) || io(c, 0, peer, buf, bytes, "recv", err) ? -1 : 0;
}

static int cpu_host_reduce(rl_comm *c, double *x, int n, rl_comm_op op, rl_err *err)
{
    size_t bytes = (size_t)n * sizeof(double);
    if (c->rank != 0) return io(c, 1, 0, x, bytes, "reduce", err) || io(c, 0, 0, x, bytes, "reduce", err) ? -1 : 0;
    double *in = malloc(bytes ? bytes : 1);
    if (!in) return rl_err_oom(err, "host reduction", bytes);
    int rc = 0;
    for (int r = 1; r < c->world && rc == 0; r++) {
        rc = io(c, 0, r, in, bytes, "reduce", err);
        for (int i = 0; rc == 0 && i < n; i++) x[i] = op == RL_COMM_SUM ? x[i] + in[i] : (in[i] > x[i] ? in[i] : x[i]);
    }
    for (int r = 1; r < c->world && rc == 0; r++) rc = io(c, 1, r, x, bytes, "reduce", err);
    free(in);
    return rc;
}

static uint64_t cpu_ticket(rl_comm *c) { return 0; }

static int cpu_wait(rl_comm *c, uint64_t ticket, rl_err *err) { return 0; }

static void cpu_abort(rl_comm *c) { impl(c)->aborted = 1; }

static void cpu_free(rl_comm *c)
{
    cpu_comm *p = impl(c);
    for (int r = 0; p && r < (c->rank == 0 ? c->world : 1); r++) rl_net_close(p->fds[r]);
    if (p) {
        free(p->fds);
        free(p->tmp);
        free(p->sum);
        free(p);
    }
    free(c);
}

static const rl_comm_ops cpu_ops = {"cpu", cpu_allreduce, cpu_reduce, cpu_broadcast, cpu_allgatherv, cpu_send,
                                    cpu_recv, cpu_host_reduce, cpu_ticket, cpu_wait, cpu_abort, cpu_free};

int rl_comm_cpu_create(rl_comm **out, rl_ctx *ctx, int rank, int world, const int *fds, rl_err *err)
{
    *out = NULL;
    int n_fds = rank == 0 ? world : 1;
    rl_comm *c = calloc(1, sizeof *c);
    cpu_comm *p = calloc(1, sizeof *p);
    int *own = malloc((size_t)n_fds * sizeof *own);
    if (own) memcpy(own, fds, (size_t)n_fds * sizeof *own);
    if (!c || !p || !own || !(p->tmp = malloc(CHUNK * sizeof(float))) || !(p->sum = malloc(CHUNK * sizeof(float)))) {
        for (int r = 0; r < n_fds; r++) rl_net_close(fds[r]);
        if (p) free(p->tmp);
        free(own);
        free(p);
        free(c);
        return rl_err_oom(err, "CPU communicator", 2 * CHUNK * sizeof(float));
    }
    if (rank == 0) own[0] = -1;
    *c = (rl_comm){&cpu_ops, rank, world, ctx, p};
    p->fds = own;
    if (ctx->kind != RL_BACKEND_CPU) {
        cpu_free(c);
        return rl_err_set(err, "the CPU communicator works on CPU ranks only (this rank runs on %s)",
                          rl_backend_name(ctx));
    }
    *out = c;
    return 0;
}
