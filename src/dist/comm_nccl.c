/* comm_nccl.c — the NCCL communicator: comm.h's table over backend/cuda/nccl.h. In a build
 * without CUDA the entry points fail with a message saying so. */
#include <stdlib.h>

#include "dist/comm.h"

#ifdef RL_HAVE_CUDA
#include "backend/cuda/nccl.h"

_Static_assert(RL_COMM_NCCL_ID_BYTES == RL_NCCL_ID_BYTES, "NCCL unique id size");

static rl_nccl *impl(rl_comm *c) { return c->impl; }

static int n_allreduce(rl_comm *c, float *buf, size_t n, rl_err *err) { return rl_nccl_allreduce(impl(c), buf, n, err); }

static int n_reduce(rl_comm *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err)
{
    return rl_nccl_reduce(impl(c), dst, src, n, root, accumulate, err);
}

static int n_broadcast(rl_comm *c, void *buf, size_t bytes, int root, rl_err *err)
{
    return rl_nccl_broadcast(impl(c), buf, bytes, root, err);
}

static int n_allgatherv(rl_comm *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err)
{
    return rl_nccl_allgatherv(impl(c), buf, offsets, elem_bytes, err);
}

static int n_send(rl_comm *c, const void *buf, size_t bytes, int peer, rl_err *err)
{
    return rl_nccl_send(impl(c), buf, bytes, peer, err);
}

static int n_recv(rl_comm *c, void *buf, size_t bytes, int peer, rl_err *err)
{
    return rl_nccl_recv(impl(c), buf, bytes, peer, err);
}

static int n_host_reduce(rl_comm *c, double *x, int n, rl_comm_op op, rl_err *err)
{
    return rl_nccl_host_reduce(impl(c), x, n, op == RL_COMM_MAX, err);
}

static uint64_t n_ticket(rl_comm *c) { return rl_nccl_ticket(impl(c)); }

static int n_wait(rl_comm *c, uint64_t ticket, rl_err *err) { return rl_nccl_wait(impl(c), ticket, err); }

static void n_abort(rl_comm *c) { rl_nccl_abort(impl(c)); }

static void n_free(rl_comm *c)
{
    rl_nccl_free(impl(c));
    free(c);
}

static const rl_comm_ops nccl_ops = {"nccl", n_allreduce, n_reduce, n_broadcast, n_allgatherv, n_send,
                                     n_recv, n_host_reduce, n_ticket, n_wait, n_abort, n_free};

int rl_comm_nccl_load(rl_err *err) { return rl_nccl_load(err); }

int rl_comm_nccl_id(void *id, rl_err *err) { return rl_nccl_unique_id(id, err); }

int rl_comm_nccl_create(rl_comm **out, rl_ctx *ctx, int rank, int world, const void *id, rl_err *err)
{
    *out = NULL;
    if (ctx->kind != RL_BACKEND_CUDA) return rl_err_set(err, "NCCL needs a CUDA rank (this one runs on the CPU)");
    rl_comm *c = calloc(1, sizeof *c);
    if (!c) return rl_err_oom(err, "NCCL communicator", sizeof *c);
    rl_nccl *n;
    if (rl_nccl_create(&n, ctx, rank, world, id, err) != 0) {
        free(c);
        return -1;
    }
    *c = (rl_comm){&nccl_ops, rank, world, ctx, n};
    *out = c;
    return 0;
}

#else

static int no_cuda(rl_err *err) { return rl_err_set(err, "NCCL: this rlc was built without CUDA"); }

int rl_comm_nccl_load(rl_err *err) { return no_cuda(err); }

int rl_comm_nccl_id(void *id, rl_err *err) { return no_cuda(err); }

int rl_comm_nccl_create(rl_comm **out, rl_ctx *ctx, int rank, int world, const void *id, rl_err *err)
{
    *out = NULL;
    return no_cuda(err);
}

#endif
