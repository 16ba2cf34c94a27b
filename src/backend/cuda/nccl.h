/* nccl.h — NCCL (NVIDIA's collective library) seen from C, for dist/comm_nccl.c: a
 * communicator on the ctx's device whose collectives run on a stream of their own, ordered
 * after the ctx's queued work and waited for by ticket (dist/comm.h describes the contract).
 * Implemented in nccl.cu; this header includes no CUDA or NCCL header.
 *
 * libnccl.so.2 is loaded when first needed (dlopen), not linked, so that rlc starts on
 * machines that have a GPU but no NCCL and runs single-GPU work there. Where it is looked for,
 * in order: $RLC_NCCL_LIBRARY (a path), the loader's search (LD_LIBRARY_PATH, ldconfig), the
 * CUDA toolkit rlc was built with ($CUDA_HOME/lib64). NCCL 2.18 or newer. */
#ifndef RL_BACKEND_CUDA_NCCL_H
#define RL_BACKEND_CUDA_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/ctx.h"
#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_NCCL_ID_BYTES 128

typedef struct rl_nccl rl_nccl;

/* Loads the library (once); fails naming every place it looked. */
int rl_nccl_load(rl_err *err);
int rl_nccl_unique_id(void *id, rl_err *err);
int rl_nccl_create(rl_nccl **out, rl_ctx *ctx, int rank, int world, const void *id, rl_err *err);
int rl_nccl_allreduce(rl_nccl *c, float *buf, size_t n, rl_err *err);
int rl_nccl_reduce(rl_nccl *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err);
int rl_nccl_broadcast(rl_nccl *c, void *buf, size_t bytes, int root, rl_err *err);
int rl_nccl_allgatherv(rl_nccl *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err);
int rl_nccl_send(rl_nccl *c, const void *buf, size_t bytes, int peer, rl_err *err);
int rl_nccl_recv(rl_nccl *c, void *buf, size_t bytes, int peer, rl_err *err);
/* op: 0 sum, 1 max (dist/comm.h's rl_comm_op). Blocks. */
int rl_nccl_host_reduce(rl_nccl *c, double *x, int n, int op, rl_err *err);
uint64_t rl_nccl_ticket(rl_nccl *c);
int rl_nccl_wait(rl_nccl *c, uint64_t ticket, rl_err *err);
/* Thread-safe: makes pending and later calls fail. */
void rl_nccl_abort(rl_nccl *c);
void rl_nccl_free(rl_nccl *c);

#ifdef __cplusplus
}
#endif

#endif
