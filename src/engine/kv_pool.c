/* kv_pool.c — the KV block pool (see kv_pool.h). */
#include "engine/kv_pool.h"

#include <string.h>

size_t rl_kv_pool_block_bytes(const rl_model_config *c, int block_size, rl_dtype dtype)
{
    return (size_t)c->n_layers * 2 * (size_t)block_size * (size_t)c->n_kv_heads * (size_t)c->head_dim *
           rl_dtype_size(dtype);
}

int rl_kv_pool_budget_blocks(rl_ctx *ctx, size_t block_bytes, double utilization, long *n_blocks, rl_err *err)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (!(utilization > 0 && utilization <= 1))
        return rl_err_set(err, "KV pool: memory utilization %g must be in (0, 1]", utilization);
    if (rl_mem_info(ctx, &free_bytes, &total_bytes)) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "KV pool: ");
    }
    *n_blocks = (long)((double)free_bytes * utilization / (double)block_bytes);
    return 0;
}

int rl_kv_pool_create(rl_kv_pool *p, rl_ctx *ctx, const rl_model_config *c, int block_size, int n_blocks,
                      rl_err *err)
{
    memset(p, 0, sizeof *p);
    if (block_size < 1 || n_blocks < 1)
        return rl_err_set(err, "KV pool: %d blocks of %d tokens; need at least one block of one token", n_blocks,
                          block_size);
    p->ctx = ctx;
    p->block_bytes = rl_kv_pool_block_bytes(c, block_size, ctx->act_dtype);
    p->view.block_size = block_size;
    p->view.n_blocks = n_blocks;
    p->view.block_stride = p->block_bytes / rl_dtype_size(ctx->act_dtype);
    p->view.base = rl_alloc(ctx, p->block_bytes * (size_t)n_blocks);
    if (!p->view.base) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "KV pool of %d blocks (%.1f MiB): ", n_blocks,
                             (double)p->block_bytes * n_blocks / (1 << 20));
    }
    return 0;
}

void rl_kv_pool_free(rl_kv_pool *p)
{
    if (p->view.base) rl_free(p->ctx, p->view.base);
    memset(p, 0, sizeof *p);
}

int rl_kv_pool_copy_block(rl_kv_pool *p, int dst, int src, rl_err *err)
{
    char *base = p->view.base;
    if (rl_memcpy(p->ctx, base + (size_t)dst * p->block_bytes, base + (size_t)src * p->block_bytes, p->block_bytes,
                  RL_D2D)) {
        rl_ctx_error(p->ctx, err);
        return rl_err_prefix(err, "KV pool: copy of block %d to %d: ", src, dst);
    }
    return 0;
}
