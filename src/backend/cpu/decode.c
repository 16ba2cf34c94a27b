/* decode.c — the small ops of the engine's decode step: picking the rows that need logits
 * (rl_gather_rows; also the training forward's copies of a shared prefix's keys, whose gradients
 * rl_sum_rows adds back) and advancing the device-resident decode state after a sampled token
 * (rl_decode_advance). On the CPU both are plain loops; on CUDA they run inside the captured
 * decode graph, so that no host work sits between two steps but reading the sampled ids.
 * Arguments are checked by backend/ops.c; these references check the values they read (row ids,
 * positions), which ops.c does not. */
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_gather_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim)
{
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0) return rl_err_set(&ctx->err, "rows[%d] %d is negative", i, rows[i]);
    float *o = out;
    const float *x = in;
    for (int i = 0; i < n_rows; i++) memcpy(o + (size_t)i * dim, x + (size_t)rows[i] * dim, (size_t)dim * sizeof(float));
    return 0;
}

int rl_cpu_sum_rows(rl_ctx *ctx, void *out, const void *in, const int32_t *offsets, const int32_t *rows, int n_rows,
                    int dim)
{
    if (offsets[0] != 0) return rl_err_set(&ctx->err, "offsets[0] %d is not 0", offsets[0]);
    for (int i = 0; i < n_rows; i++) {
        if (offsets[i + 1] < offsets[i])
            return rl_err_set(&ctx->err, "offsets[%d] %d is less than offsets[%d] %d", i + 1, offsets[i + 1], i,
                              offsets[i]);
        for (int j = offsets[i]; j < offsets[i + 1]; j++)
            if (rows[j] < 0) return rl_err_set(&ctx->err, "rows[%d] %d is negative", j, rows[j]);
    }
    float *o = out;
    const float *x = in;
    for (int i = 0; i < n_rows; i++) {
        float *oi = o + (size_t)i * dim;
        memset(oi, 0, (size_t)dim * sizeof(float));
        for (int j = offsets[i]; j < offsets[i + 1]; j++)
            for (int d = 0; d < dim; d++) oi[d] += x[(size_t)rows[j] * dim + d];
    }
    return 0;
}

int rl_cpu_decode_advance(rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k,
                          int32_t *slots, rl_sample_row *rows, const int32_t *sampled,
                          const int32_t *block_tables, int max_blocks, int block_size, int n_rows)
{
    for (int i = 0; i < n_rows; i++)
        if (seqlens_k[i] > 0 && (positions[i] < 0 || positions[i] + 1 >= max_blocks * block_size))
            return rl_err_set(&ctx->err, "positions[%d] %d + 1 is outside max_blocks %d x block_size %d", i,
                              positions[i], max_blocks, block_size);
    for (int i = 0; i < n_rows; i++) {
        if (seqlens_k[i] <= 0) continue;
        int p = positions[i] + 1, b = p / block_size;
        tokens[i] = sampled[i];
        positions[i] = p;
        seqlens_k[i] += 1;
        rows[i].step += 1;
        slots[i] = block_tables[(size_t)i * max_blocks + b] * block_size + p % block_size;
    }
    return 0;
}
