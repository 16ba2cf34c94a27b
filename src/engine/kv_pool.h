/* kv_pool.h — the generation engine's key/value block pool: ONE backend allocation of n_blocks
 * blocks, block-major (model.h rl_kv_pool_view gives the layout: a block holds every layer's
 * keys and values of block_size tokens, so a whole block is one contiguous range and
 * copy-on-write is one copy).
 *
 * How many blocks: on CUDA, a fraction of the device memory that is free when the pool is made
 * (after weights, training state, activations), like vLLM's --gpu-memory-utilization; on the
 * CPU the engine asks for what its requests need, within the same fraction of MemAvailable; a
 * trainer's engine, on both, what one step can use (engine.c). The pool does not know which block belongs to whom: block_manager.h does. */
#ifndef RL_ENGINE_KV_POOL_H
#define RL_ENGINE_KV_POOL_H

#include <stddef.h>

#include "backend/ctx.h"
#include "core/error.h"
#include "model/model.h"

typedef struct rl_kv_pool {
    rl_ctx *ctx;          /* not owned */
    rl_kv_pool_view view; /* base (owned), block_stride, block_size, n_blocks */
    size_t block_bytes;
} rl_kv_pool;

/* Bytes of one block: every layer's keys and values of block_size tokens in dtype. */
size_t rl_kv_pool_block_bytes(const rl_model_config *c, int block_size, rl_dtype dtype);

/* Blocks of block_bytes that fit in utilization (0, 1] of the backend memory free now. */
int rl_kv_pool_budget_blocks(rl_ctx *ctx, size_t block_bytes, double utilization, long *n_blocks, rl_err *err);

int rl_kv_pool_create(rl_kv_pool *p, rl_ctx *ctx, const rl_model_config *c, int block_size, int n_blocks,
                      rl_err *err);
/* Safe on a zeroed or failed pool. */
void rl_kv_pool_free(rl_kv_pool *p);

/* Block dst becomes a copy of block src (all layers): the copy of copy-on-write. */
int rl_kv_pool_copy_block(rl_kv_pool *p, int dst, int src, rl_err *err);

#endif
