/* embedding.c — token embedding lookup and its gradient.
 *
 * Forward copies table rows. Backward adds dout rows into dtable rows; repeated ids would race
 * if threads split the tokens, so threads split the columns instead: each owns a block of
 * columns of every row, walks all tokens in order, and the sums are deterministic.
 * The table's row count is not an argument, so ids are only checked to be non-negative. */
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

static int check_ids(rl_ctx *ctx, const char *op, const int32_t *ids, int n_tokens)
{
    for (int t = 0; t < n_tokens; t++)
        if (ids[t] < 0) return rl_err_set(&ctx->err, "%s: ids[%d] = %d is negative", op, t, ids[t]);
    return 0;
}

int rl_cpu_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens,
                         int dim)
{
    static const char op[] = "embedding_fwd";
    RL_OP(cpu_min(ctx, op, n_tokens, 0, "n_tokens"));
    RL_OP(cpu_min(ctx, op, dim, 1, "dim"));
    if (n_tokens == 0) return 0;
    RL_OP(cpu_need(ctx, op, out, "out"));
    RL_OP(cpu_need(ctx, op, ids, "ids"));
    RL_OP(cpu_need(ctx, op, table, "table"));
    RL_OP(check_ids(ctx, op, ids, n_tokens));
    float *y = out;
    const float *tab = table;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_tokens * dim)) schedule(static)
    for (int t = 0; t < n_tokens; t++)
        memcpy(y + (size_t)t * dim, tab + (size_t)ids[t] * dim, (size_t)dim * sizeof(float));
    return 0;
}

int rl_cpu_embedding_bwd(rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout,
                         int n_tokens, int dim)
{
    static const char op[] = "embedding_bwd";
    enum { BLOCK = 64 };
    RL_OP(cpu_min(ctx, op, n_tokens, 0, "n_tokens"));
    RL_OP(cpu_min(ctx, op, dim, 1, "dim"));
    if (n_tokens == 0) return 0;
    RL_OP(cpu_need(ctx, op, dtable, "dtable"));
    RL_OP(cpu_need(ctx, op, ids, "ids"));
    RL_OP(cpu_need(ctx, op, dout, "dout"));
    RL_OP(check_ids(ctx, op, ids, n_tokens));
    const float *dy = dout;
    int n_blocks = (dim + BLOCK - 1) / BLOCK;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_tokens * dim)) schedule(static)
    for (int blk = 0; blk < n_blocks; blk++) {
        int j0 = blk * BLOCK, width = dim - j0 < BLOCK ? dim - j0 : BLOCK;
        for (int t = 0; t < n_tokens; t++) {
            float *row = dtable + (size_t)ids[t] * dim + j0;
            const float *src = dy + (size_t)t * dim + j0;
            for (int j = 0; j < width; j++) row[j] += src[j];
        }
    }
    return 0;
}
