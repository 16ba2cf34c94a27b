/* paged_attention.c — the paged KV cache ops of the generation engine: writing new keys and
 * values into the block pool (alone, or after the q/k norm and RoPE of a step: the fused op is
 * the three unfused ops run on copies of the rows, so it gives their values bit for bit), and
 * attention of new queries against it (alone, or after that fused op: the two in a row).
 *
 * Layout (ops.h rl_paged_kv): the keys of token row r of block b for one layer start at
 * k + b * block_stride + r * n_kv_heads * head_dim; a sequence's key position j lives in block
 * block_tables[s * max_blocks + j / block_size], row j % block_size.
 *
 * The attention gathers one sequence's keys and values of one kv head into contiguous scratch
 * (len_k x head_dim each) and runs the varlen forward's own tile (cpu_attention_tile) for
 * every query head of the group over it. So a token decoded here gets exactly the values the
 * training forward (attention.c) computes for it: same products, same sums in the same order.
 * Threads take (sequence, kv head) pairs; the keys of a pair are gathered once for the
 * n_heads / n_kv_heads query heads that read them. A sequence in a shared-prefix run
 * (kv->share_len: the samples of one prompt) gathers its shared keys through the run lead's
 * table, as the CUDA cascade kernel reads them: the same blocks, so the same values, and a run
 * the engine got wrong reads another sequence's keys here too. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_kv_cache_write(rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v,
                          const int32_t *slots, int n_tokens, int n_kv_heads, int head_dim)
{
    size_t row = (size_t)n_kv_heads * head_dim;
    float *kd = kv->k, *vd = kv->v;
    const float *ks = k, *vs = v;
    for (int t = 0; t < n_tokens; t++) {
        if (slots[t] < 0) continue;
        size_t at = (size_t)(slots[t] / kv->block_size) * kv->block_stride + (size_t)(slots[t] % kv->block_size) * row;
        memcpy(kd + at, ks + (size_t)t * row, row * sizeof(float));
        memcpy(vd + at, vs + (size_t)t * row, row * sizeof(float));
    }
    return 0;
}

int rl_cpu_qk_norm_rope_cache_fwd(rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q, const void *k,
                                  const void *v, size_t q_stride, size_t kv_stride, const void *q_norm,
                                  const void *k_norm, float eps, const int32_t *positions, const float *inv_freq,
                                  const int32_t *slots, int n_tokens, int n_heads, int n_kv_heads, int head_dim)
{
    size_t qd = (size_t)n_heads * head_dim, kd = (size_t)n_kv_heads * head_dim;
    if (n_tokens == 0) return 0;
    size_t T = (size_t)n_tokens;
    float *kbuf = malloc((2 * T * kd + T * (n_heads + n_kv_heads)) * sizeof(float));
    if (!kbuf) return rl_err_oom(&ctx->err, "qk_norm_rope_cache_fwd scratch", (2 * T * kd) * sizeof(float));
    float *vbuf = kbuf + T * kd, *rstd = vbuf + T * kd, *qo = q_out;
    const float *qs = q, *ks = k, *vs = v;
    for (size_t t = 0; t < T; t++) {
        memmove(qo + t * qd, qs + t * q_stride, qd * sizeof(float)); /* q_out may be q */
        memcpy(kbuf + t * kd, ks + t * kv_stride, kd * sizeof(float));
        memcpy(vbuf + t * kd, vs + t * kv_stride, kd * sizeof(float));
    }
    int rc = 0;
    if (q_norm) rc = rl_cpu_rmsnorm_fwd(ctx, qo, rstd, qo, q_norm, n_tokens * n_heads, head_dim, eps);
    if (!rc && k_norm) rc = rl_cpu_rmsnorm_fwd(ctx, kbuf, rstd, kbuf, k_norm, n_tokens * n_kv_heads, head_dim, eps);
    if (!rc) rc = rl_cpu_rope_fwd(ctx, qo, positions, inv_freq, n_tokens, n_heads, head_dim);
    if (!rc) rc = rl_cpu_rope_fwd(ctx, kbuf, positions, inv_freq, n_tokens, n_kv_heads, head_dim);
    if (!rc) rc = rl_cpu_kv_cache_write(ctx, kv, kbuf, vbuf, slots, n_tokens, n_kv_heads, head_dim);
    free(kbuf);
    return rc;
}

/* The lengths and block ids are tensors, which backend/ops.c does not read: every sequence's
 * query count fits max_seqlen_q; an active one (seqlens_k > 0) holds its own queries among its
 * keys, fits max_seqlen_k and its block table, and names no negative block. */
static int check_seqs(rl_ctx *ctx, const rl_paged_kv *kv, const int32_t *cu_q, const int32_t *seqlens_k, int n_seqs,
                      int max_seqlen_q, int max_seqlen_k)
{
    if (cu_q[0] != 0) return rl_err_set(&ctx->err, "cu_seqlens_q[0] %d is not 0", cu_q[0]);
    for (int s = 0; s < n_seqs; s++) {
        int len_q = cu_q[s + 1] - cu_q[s], len_k = seqlens_k[s];
        if (len_q < 0 || len_q > max_seqlen_q)
            return rl_err_set(&ctx->err, "cu_seqlens_q: sequence %d has %d queries, outside [0, max_seqlen_q %d]", s,
                              len_q, max_seqlen_q);
        if (len_k == 0) continue;
        if (len_k < len_q || len_k > max_seqlen_k || len_k > kv->max_blocks * kv->block_size)
            return rl_err_set(&ctx->err, "seqlens_k[%d] %d is outside [%d queries, min(max_seqlen_k %d, %d blocks of %d)]",
                              s, len_k, len_q, max_seqlen_k, kv->max_blocks, kv->block_size);
        for (int i = 0; i < (len_k + kv->block_size - 1) / kv->block_size; i++)
            if (kv->block_tables[(size_t)s * kv->max_blocks + i] < 0)
                return rl_err_set(&ctx->err, "block_tables[%d][%d] %d is negative", s, i,
                                  kv->block_tables[(size_t)s * kv->max_blocks + i]);
    }
    return 0;
}

/* The shared-prefix runs (ops.h): each sequence's lead starts a run that holds it, within
 * max_share, whose sequences agree on share_len, have one query each and a key after it. */
static int check_share(rl_ctx *ctx, const rl_paged_kv *kv, const int32_t *cu_q, const int32_t *seqlens_k, int n_seqs)
{
    for (int s = 0; s < n_seqs; s++) {
        int lead = kv->share_lead[s], len = kv->share_len[s];
        if (len == 0) continue;
        if (lead < 0 || lead > s || kv->share_count[lead] > kv->max_share || s >= lead + kv->share_count[lead])
            return rl_err_set(&ctx->err, "share_lead[%d] %d does not lead a run (of at most max_share %d) that holds it",
                              s, lead, kv->max_share);
        if (len < 0 || len != kv->share_len[lead] || len > seqlens_k[s] - 1 || cu_q[s + 1] - cu_q[s] != 1)
            return rl_err_set(&ctx->err,
                              "share_len[%d] %d: not its lead's %d, or not in [0, seqlens_k %d - 1], or %d queries "
                              "(a run's sequences have one)",
                              s, len, kv->share_len[lead], seqlens_k[s], cu_q[s + 1] - cu_q[s]);
    }
    return 0;
}

/* dst[j] = the kv head's row of key position j, for j < len_k (one K or V plane); keys before
 * n_shared through the run lead's table `shared`. */
static void gather_head(float *dst, const float *plane, const rl_paged_kv *kv, const int32_t *table,
                        const int32_t *shared, int n_shared, int len_k, int kv_head, int n_kv_heads, int head_dim)
{
    size_t row = (size_t)n_kv_heads * head_dim;
    for (int j = 0; j < len_k; j++) {
        const int32_t *t = j < n_shared ? shared : table;
        const float *src = plane + (size_t)t[j / kv->block_size] * kv->block_stride +
                           (size_t)(j % kv->block_size) * row + (size_t)kv_head * head_dim;
        memcpy(dst + (size_t)j * head_dim, src, (size_t)head_dim * sizeof(float));
    }
}

int rl_cpu_paged_attention_fwd(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv,
                               const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs,
                               int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads,
                               int head_dim, float scale)
{
    if (n_seqs == 0) return 0;
    if (check_seqs(ctx, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k)) return -1;
    if (kv->share_len && check_share(ctx, kv, cu_seqlens_q, seqlens_k, n_seqs)) return -1;
    if (cu_seqlens_q[n_seqs] == 0) return 0;

    int longest = 1;
    double work = 0;
    for (int s = 0; s < n_seqs; s++) {
        if (seqlens_k[s] > longest) longest = seqlens_k[s];
        work += (double)(cu_seqlens_q[s + 1] - cu_seqlens_q[s]) * seqlens_k[s];
    }
    int n_threads = cpu_threads(ctx, work * n_heads * head_dim / 16), group = n_heads / n_kv_heads;
    size_t q_row = (size_t)n_heads * head_dim, plane = (size_t)longest * head_dim;
    size_t per_thread = 2 * plane + CPU_ATTENTION_TILE_FLOATS(longest) + cpu_gemm_scratch_floats();
    float *scratch = malloc((size_t)n_threads * per_thread * sizeof(float));
    if (!scratch) return rl_err_oom(&ctx->err, "scratch", (size_t)n_threads * per_thread * 4);
    const float *qs = q;
    float *os = out;
    long n_items = (long)n_seqs * n_kv_heads;
#pragma omp parallel for num_threads(n_threads) schedule(dynamic, 1)
    for (long item = 0; item < n_items; item++) {
        int s = (int)(item / n_kv_heads), g = (int)(item % n_kv_heads);
        int t0 = cu_seqlens_q[s], len_q = cu_seqlens_q[s + 1] - t0, len_k = seqlens_k[s];
        if (len_k == 0) {
            for (int t = t0; t < t0 + len_q; t++)
                memset(os + (size_t)t * q_row + (size_t)g * group * head_dim, 0,
                       (size_t)group * head_dim * sizeof(float));
            continue;
        }
        float *kbuf = scratch + (size_t)omp_get_thread_num() * per_thread, *vbuf = kbuf + plane, *p = vbuf + plane;
        const int32_t *table = kv->block_tables + (size_t)s * kv->max_blocks;
        int n_shared = kv->share_len ? kv->share_len[s] : 0;
        const int32_t *shared = n_shared ? kv->block_tables + (size_t)kv->share_lead[s] * kv->max_blocks : table;
        gather_head(kbuf, kv->k, kv, table, shared, n_shared, len_k, g, n_kv_heads, head_dim);
        gather_head(vbuf, kv->v, kv, table, shared, n_shared, len_k, g, n_kv_heads, head_dim);
        cpu_attention_tile_args t = {.k = kbuf, .v = vbuf, .q_row = (ptrdiff_t)q_row, .kv_row = head_dim,
                                     .out_row = (ptrdiff_t)q_row, .len_q = len_q, .len_k = len_k,
                                     .head_dim = head_dim, .scale = scale, .causal = 1};
        for (int h = g * group; h < (g + 1) * group; h++)
            for (t.i0 = 0; t.i0 < len_q; t.i0 += CPU_ATTENTION_TQ) {
                t.tq = len_q - t.i0 < CPU_ATTENTION_TQ ? len_q - t.i0 : CPU_ATTENTION_TQ;
                t.q = qs + (size_t)(t0 + t.i0) * q_row + (size_t)h * head_dim;
                t.out = os + (size_t)(t0 + t.i0) * q_row + (size_t)h * head_dim;
                cpu_attention_tile(&t, p, p + CPU_ATTENTION_TILE_FLOATS(longest));
            }
    }
    free(scratch);
    return 0;
}

/* The two ops in a row: what the CUDA backend's one-kernel decode step must equal. */
int rl_cpu_qk_norm_rope_attention_fwd(rl_ctx *ctx, void *out, void *q_out, const rl_paged_kv *kv, const void *q,
                                      const void *k, const void *v, size_t q_stride, size_t kv_stride,
                                      const void *q_norm, const void *k_norm, float eps, const int32_t *positions,
                                      const float *inv_freq, const int32_t *slots, int n_tokens,
                                      const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs,
                                      int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim,
                                      float scale)
{
    if (rl_cpu_qk_norm_rope_cache_fwd(ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions,
                                      inv_freq, slots, n_tokens, n_heads, n_kv_heads, head_dim))
        return -1;
    return rl_cpu_paged_attention_fwd(ctx, out, q_out, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q,
                                      max_seqlen_k, n_heads, n_kv_heads, head_dim, scale);
}
