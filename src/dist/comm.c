/* comm.c — the communicator's calls, dispatched to the implementation (see comm.h). */
#include "dist/comm.h"

int rl_comm_allreduce(rl_comm *c, float *buf, size_t n, rl_err *err) { return c->ops->allreduce(c, buf, n, err); }

int rl_comm_reduce(rl_comm *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err)
{
    if (root < 0 || root >= c->world) return rl_err_set(err, "reduce: root %d outside the %d ranks", root, c->world);
    if (c->rank == root && accumulate && dst == src)
        return rl_err_set(err, "reduce: accumulating into the send buffer would count it twice");
    return c->ops->reduce(c, dst, src, n, root, accumulate, err);
}

int rl_comm_broadcast(rl_comm *c, void *buf, size_t bytes, int root, rl_err *err)
{
    if (root < 0 || root >= c->world) return rl_err_set(err, "broadcast: root %d outside the %d ranks", root, c->world);
    return c->ops->broadcast(c, buf, bytes, root, err);
}

int rl_comm_allgatherv(rl_comm *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err)
{
    for (int r = 0; r < c->world; r++)
        if (offsets[r + 1] < offsets[r]) return rl_err_set(err, "allgather: rank %d's part ends before it starts", r);
    return c->ops->allgatherv(c, buf, offsets, elem_bytes, err);
}

int rl_comm_send(rl_comm *c, const void *buf, size_t bytes, int peer, rl_err *err)
{
    if (peer < 0 || peer >= c->world || peer == c->rank)
        return rl_err_set(err, "send: peer %d is not another of the %d ranks", peer, c->world);
    return c->ops->send(c, buf, bytes, peer, err);
}

int rl_comm_recv(rl_comm *c, void *buf, size_t bytes, int peer, rl_err *err)
{
    if (peer < 0 || peer >= c->world || peer == c->rank)
        return rl_err_set(err, "recv: peer %d is not another of the %d ranks", peer, c->world);
    return c->ops->recv(c, buf, bytes, peer, err);
}

int rl_comm_host_reduce(rl_comm *c, double *x, int n, rl_comm_op op, rl_err *err)
{
    return c->ops->host_reduce(c, x, n, op, err);
}

int rl_comm_barrier(rl_comm *c, rl_err *err)
{
    double one = 1;
    return c->ops->host_reduce(c, &one, 1, RL_COMM_SUM, err);
}

uint64_t rl_comm_ticket(rl_comm *c) { return c->ops->ticket(c); }

int rl_comm_wait(rl_comm *c, uint64_t ticket, rl_err *err) { return c->ops->wait(c, ticket, err); }

void rl_comm_abort(rl_comm *c)
{
    if (c) c->ops->abort(c);
}

void rl_comm_free(rl_comm *c)
{
    if (c) c->ops->free(c);
}
