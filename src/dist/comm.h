/* comm.h — the communicator: the collectives data-parallel training needs, between the `world`
 * ranks of one run, each rank one process with its own rl_ctx. Two implementations behind one
 * table of functions: CPU ranks over TCP sockets (comm_cpu.c: CI, and real CPU runs over
 * several processes or machines) and NCCL on CUDA devices (comm_nccl.c over backend/cuda).
 *
 * Memory and ordering. Buffers are backend memory of the communicator's ctx (host memory on the
 * CPU, device memory on CUDA) unless a function says host. A collective is ordered after all
 * work queued on the ctx before the call, and may still be running when the call returns (NCCL
 * runs collectives on a stream of its own, so they overlap the backward); its result is safe
 * to use on the ctx's queue after rl_comm_wait(c, ticket) with the ticket rl_comm_ticket gave
 * right after it, or after rl_comm_wait(c, rl_comm_ticket(c)) for everything issued so far.
 * CPU collectives are complete when they return. Every rank must issue the same collectives in
 * the same order (as with NCCL and MPI).
 *
 * Sums. Every rank gets bit-identical results (NCCL's rings and the CPU's star both reduce each
 * element once and send that value to all), so ranks that apply the same update stay equal.
 * The order of additions differs from one rank's sequential sum: results agree with a
 * one-rank run within fp32 reordering, not bit for bit.
 *
 * Failure. Functions return 0 or -1 with err filled; after a failure or rl_comm_abort the
 * communicator is unusable (the run is over). rl_comm_abort may be called from another thread
 * (the watchdog) to make blocked calls return. */
#ifndef RL_DIST_COMM_H
#define RL_DIST_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "backend/ctx.h"
#include "core/error.h"

typedef enum { RL_COMM_SUM, RL_COMM_MAX } rl_comm_op;

typedef struct rl_comm rl_comm;

typedef struct rl_comm_ops {
    const char *name; /* "cpu" or "nccl" */
    int (*allreduce)(rl_comm *c, float *buf, size_t n, rl_err *err);
    int (*reduce)(rl_comm *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err);
    int (*broadcast)(rl_comm *c, void *buf, size_t bytes, int root, rl_err *err);
    int (*allgatherv)(rl_comm *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err);
    int (*send)(rl_comm *c, const void *buf, size_t bytes, int peer, rl_err *err);
    int (*recv)(rl_comm *c, void *buf, size_t bytes, int peer, rl_err *err);
    int (*host_reduce)(rl_comm *c, double *x, int n, rl_comm_op op, rl_err *err);
    uint64_t (*ticket)(rl_comm *c);
    int (*wait)(rl_comm *c, uint64_t ticket, rl_err *err);
    void (*abort)(rl_comm *c);
    void (*free)(rl_comm *c);
} rl_comm_ops;

struct rl_comm {
    const rl_comm_ops *ops;
    int rank, world;
    rl_ctx *ctx; /* not owned */
    void *impl;
};

/* In-place sum of n fp32 values over all ranks. */
int rl_comm_allreduce(rl_comm *c, float *buf, size_t n, rl_err *err);
/* The sum over ranks of every rank's src[0, n) lands in dst on `root` (dst = sum, or dst +=
 * sum when accumulate); dst is not touched (and may be NULL) on the other ranks. On root, dst
 * may equal src only without accumulate, and with accumulate src may serve as scratch (its
 * contents afterwards are unspecified). */
int rl_comm_reduce(rl_comm *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err);
/* root's buf[0, bytes) to every rank. */
int rl_comm_broadcast(rl_comm *c, void *buf, size_t bytes, int root, rl_err *err);
/* buf holds the same array on every rank, elements of elem_bytes; rank r owns elements
 * [offsets[r], offsets[r + 1]) (offsets has world + 1 entries, non-decreasing). Afterwards
 * every rank's buf holds every rank's part. */
int rl_comm_allgatherv(rl_comm *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err);
/* Point to point: a send on one rank matches the recv of the same size on its peer. The CPU
 * communicator connects every rank to rank 0 only, so one side must be rank 0 there. */
int rl_comm_send(rl_comm *c, const void *buf, size_t bytes, int peer, rl_err *err);
int rl_comm_recv(rl_comm *c, void *buf, size_t bytes, int peer, rl_err *err);
/* Small reductions of host values (statistics, flags); blocks until done. */
int rl_comm_host_reduce(rl_comm *c, double *x, int n, rl_comm_op op, rl_err *err);
/* Everyone has arrived. */
int rl_comm_barrier(rl_comm *c, rl_err *err);

/* The ticket of the last collective issued (0 before any). */
uint64_t rl_comm_ticket(rl_comm *c);
/* The ctx's queue waits (without blocking the host) until collective `ticket` is done. */
int rl_comm_wait(rl_comm *c, uint64_t ticket, rl_err *err);

void rl_comm_abort(rl_comm *c);
void rl_comm_free(rl_comm *c);

/* The CPU communicator over connected sockets (rendezvous.h) for a CPU ctx: on rank 0, fds[r]
 * leads to rank r (fds[0] unused); on the others fds[0] leads to rank 0. The sockets belong to
 * the communicator from then on (closed by rl_comm_free, also after a failed create). */
int rl_comm_cpu_create(rl_comm **out, rl_ctx *ctx, int rank, int world, const int *fds, rl_err *err);

/* NCCL on the ctx's CUDA device; id is the unique id rank 0 made with rl_comm_nccl_id and the
 * rendezvous handed to every rank. Fails with a clear message where NCCL cannot be loaded. */
#define RL_COMM_NCCL_ID_BYTES 128
int rl_comm_nccl_load(rl_err *err);
int rl_comm_nccl_id(void *id, rl_err *err);
int rl_comm_nccl_create(rl_comm **out, rl_ctx *ctx, int rank, int world, const void *id, rl_err *err);

#endif
