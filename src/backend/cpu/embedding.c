/* embedding.c — token embedding lookup and its gradient.
 *
 * Forward copies table rows. Backward adds dout rows into dtable rows; repeated ids would race
 * if threads split the tokens, so threads split the columns instead: each owns a block of
 * columns of every row, walks all tokens in order, and the sums are deterministic.
 * The ids are a tensor, which backend/ops.c does not read; the reference checks them here, and
 * as the table's row count is not an argument, only for being non-negative. */
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

static int check_ids(rl_ctx *ctx, const int32_t *ids, int n_tokens)
{
    for (int t = 0; t < n_tokens; t++)
        if (ids[t] < 0) return rl_err_set(&ctx->err, "ids[%d] %d is negative", t, ids[t]);
    return 0;
}

int rl_cpu_embedding_fwd(rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens,
                         int dim)
{
    if (check_ids(ctx, ids, n_tokens)) return -1;
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
    enum { BLOCK = 64 };
    if (check_ids(ctx, ids, n_tokens)) return -1;
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
