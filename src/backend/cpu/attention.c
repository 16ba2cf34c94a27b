/* attention.c — exact softmax attention over packed variable-length sequences, with GQA.
 *
 * Semantics are flash-attention's varlen API (ops.h): sequence s has queries
 * cu_seqlens_q[s] .. cu_seqlens_q[s+1] and keys cu_seqlens_k[s] .. cu_seqlens_k[s] + len_k,
 * len_k = seqused_k ? seqused_k[s] : cu_seqlens_k[s+1] - cu_seqlens_k[s] (the key rows are
 * absolute: cu_seqlens_k[0] may be above 0). With causal masking,
 * bottom-right aligned, query i sees keys j < n_keys(i) = len_k - len_q + i + 1. A query that
 * sees no key gets out = 0 and lse = -inf (the log of an empty sum).
 *
 * Both passes work on tiles of TQ queries of one head, so that the products are matrix
 * products (gemm.c) rather than one dot product per (query, key) pair; the forward's tile
 * (cpu_attention_tile) is shared with the paged attention (paged_attention.c):
 * forward   S = Q K^T, P = exp(scale S - m) row by row (fp32, max subtracted, sums in double),
 *           lse = m + log sum P, out = (P V) / sum P;
 * backward  (key slabs cu_seqlens_k from row 0, no seqused_k) with P = exp(scale S - lse):
 *           dP = dO V^T, D_i = dO_i . O_i, dS = P (dP - D) scale,
 *           dQ = dS K, dK += dS^T Q, dV += P^T dO.
 * Threads take (sequence, head) pairs in the forward and (sequence, kv head) pairs in the
 * backward, so all the query heads that add into one kv head's dk/dv rows run on one thread:
 * no races, and the sums run in an order that does not depend on the thread count. A query's
 * forward result does not depend on the other queries of its tile either (the products' sums
 * run over the keys in one fixed order), so decoding one token gives the bits the training
 * forward gives that token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

enum { TQ = CPU_ATTENTION_TQ };

/* The offsets are tensors, which backend/ops.c does not read; the reference reads them here on
 * the host, and refuses what would make it read or write outside the buffers.
 * cu[0] = 0, non-decreasing, every length <= max_len. */
static int check_cu(rl_ctx *ctx, const int32_t *cu, int n_seqs, int max_len, const char *what)
{
    if (cu[0] != 0) return rl_err_set(&ctx->err, "%s[0] %d is not 0", what, cu[0]);
    for (int s = 0; s < n_seqs; s++) {
        int len = cu[s + 1] - cu[s];
        if (len < 0 || len > max_len)
            return rl_err_set(&ctx->err, "%s: sequence %d has length %d, outside [0, max_seqlen %d]", what, s,
                              len, max_len);
    }
    return 0;
}

/* Key slabs (ops.h): cu_seqlens_k[0] >= 0 and non-decreasing (rows before cu_seqlens_k[0] are
 * not read); each used length len_k (seqused_k[s], at most the slab's length, or the slab's
 * length) is at most max_seqlen_k. */
static int check_kv(rl_ctx *ctx, const int32_t *cu_k, const int32_t *used, int n_seqs, int max_len)
{
    if (cu_k[0] < 0) return rl_err_set(&ctx->err, "cu_seqlens_k[0] %d is negative", cu_k[0]);
    for (int s = 0; s < n_seqs; s++) {
        int slab = cu_k[s + 1] - cu_k[s];
        if (slab < 0) return rl_err_set(&ctx->err, "cu_seqlens_k: key slab %d has length %d", s, slab);
        if (used && (used[s] < 0 || used[s] > slab || used[s] > max_len))
            return rl_err_set(&ctx->err, "seqused_k[%d] %d is outside [0, min(slab %d, max_seqlen_k %d)]", s,
                              used[s], slab, max_len);
        if (!used && slab > max_len)
            return rl_err_set(&ctx->err, "cu_seqlens_k: sequence %d has length %d, outside [0, max_seqlen %d]",
                              s, slab, max_len);
    }
    return 0;
}

/* Keys query i of a sequence sees: bottom-right causal alignment, clamped to [0, len_k]. */
static int n_visible(int causal, int len_q, int len_k, int i)
{
    int n = causal ? len_k - len_q + i + 1 : len_k;
    return n < 0 ? 0 : n > len_k ? len_k : n;
}

void cpu_attention_tile(const cpu_attention_tile_args *t, float *p, float *gemm_scratch)
{
    int kmax = n_visible(t->causal, t->len_q, t->len_k, t->i0 + t->tq - 1);
    cpu_gemm_args g_s = {.m = t->tq, .n = kmax, .k = t->head_dim, .a = t->q, .a_rs = t->q_row, .a_cs = 1,
                         .b = t->k, .b_rs = 1, .b_cs = t->kv_row, .c = p, .ldc = kmax, .accumulate = 0};
    cpu_gemm_serial(&g_s, gemm_scratch);
    float inv_sum[TQ];
    for (int r = 0; r < t->tq; r++) {
        float *pr = p + (size_t)r * kmax;
        int nk = n_visible(t->causal, t->len_q, t->len_k, t->i0 + r);
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int j = 0; j < nk; j++) m = pr[j] * t->scale > m ? pr[j] * t->scale : m;
        for (int j = 0; j < nk; j++) pr[j] = expf(pr[j] * t->scale - m);
        /* In key order, not a vectorised reduction: the sum must not depend on where the row
         * sits in memory or in its tile (ctx.h: batch invariance). */
        double sum = 0;
        for (int j = 0; j < nk; j++) sum += pr[j];
        for (int j = nk; j < kmax; j++) pr[j] = 0.0f;
        inv_sum[r] = nk > 0 ? (float)(1.0 / sum) : 0.0f;
        if (t->lse) t->lse[(size_t)r * t->lse_stride] = nk > 0 ? m + (float)log(sum) : -INFINITY;
    }
    cpu_gemm_args g_o = {.m = t->tq, .n = t->head_dim, .k = kmax, .a = p, .a_rs = kmax, .a_cs = 1,
                         .b = t->v, .b_rs = t->kv_row, .b_cs = 1, .c = t->out, .ldc = t->out_row,
                         .accumulate = 0};
    cpu_gemm_serial(&g_o, gemm_scratch);
    for (int r = 0; r < t->tq; r++)
        for (int d = 0; d < t->head_dim; d++) t->out[(size_t)r * t->out_row + d] *= inv_sum[r];
}

int rl_cpu_attention_fwd(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k,
                         const void *v, const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k,
                         const int32_t *seqused_k, int n_seqs, int max_seqlen_q, int max_seqlen_k,
                         int n_heads, int n_kv_heads, int head_dim, float scale, int causal)
{
    if (n_seqs == 0) return 0;
    if (check_cu(ctx, cu_seqlens_q, n_seqs, max_seqlen_q, "cu_seqlens_q") ||
        check_kv(ctx, cu_seqlens_k, seqused_k, n_seqs, max_seqlen_k))
        return -1;
    if (cu_seqlens_q[n_seqs] == 0) return 0;

    double work = (double)cu_seqlens_q[n_seqs] * n_heads * head_dim * max_seqlen_k / 16;
    int n_threads = cpu_threads(ctx, work), group = n_heads / n_kv_heads;
    size_t q_row = (size_t)n_heads * head_dim, kv_row = (size_t)n_kv_heads * head_dim;
    size_t per_thread = CPU_ATTENTION_TILE_FLOATS(max_seqlen_k) + cpu_gemm_scratch_floats();
    float *scratch = malloc((size_t)n_threads * per_thread * sizeof(float));
    if (!scratch) return rl_err_oom(&ctx->err, "scratch", (size_t)n_threads * per_thread * 4);
    const float *qs = q, *ks = k, *vs = v;
    float *os = out;
    long n_items = (long)n_seqs * n_heads;
#pragma omp parallel for num_threads(n_threads) schedule(dynamic, 1)
    for (long item = 0; item < n_items; item++) {
        int s = (int)(item / n_heads), h = (int)(item % n_heads);
        int t0 = cu_seqlens_q[s], len_q = cu_seqlens_q[s + 1] - t0;
        int len_k = seqused_k ? seqused_k[s] : cu_seqlens_k[s + 1] - cu_seqlens_k[s];
        float *p = scratch + (size_t)omp_get_thread_num() * per_thread;
        cpu_attention_tile_args t = {
            .k = ks + (size_t)cu_seqlens_k[s] * kv_row + (size_t)(h / group) * head_dim,
            .v = vs + (size_t)cu_seqlens_k[s] * kv_row + (size_t)(h / group) * head_dim,
            .q_row = (ptrdiff_t)q_row, .kv_row = (ptrdiff_t)kv_row, .out_row = (ptrdiff_t)q_row,
            .lse_stride = n_heads, .len_q = len_q, .len_k = len_k, .head_dim = head_dim, .scale = scale,
            .causal = causal};
        for (t.i0 = 0; t.i0 < len_q; t.i0 += TQ) {
            t.tq = len_q - t.i0 < TQ ? len_q - t.i0 : TQ;
            t.q = qs + (size_t)(t0 + t.i0) * q_row + (size_t)h * head_dim;
            t.out = os + (size_t)(t0 + t.i0) * q_row + (size_t)h * head_dim;
            t.lse = lse + (size_t)(t0 + t.i0) * n_heads + h;
            cpu_attention_tile(&t, p, p + CPU_ATTENTION_TILE_FLOATS(max_seqlen_k));
        }
    }
    free(scratch);
    return 0;
}

int rl_cpu_attention_bwd(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout,
                         const void *out, const float *lse, const void *q, const void *k,
                         const void *v, const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, int n_seqs,
                         int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale,
                         int causal)
{
    if (n_seqs == 0) return 0;
    if (check_cu(ctx, cu_seqlens_q, n_seqs, max_seqlen_q, "cu_seqlens_q") ||
        check_cu(ctx, cu_seqlens_k, n_seqs, max_seqlen_k, "cu_seqlens_k"))
        return -1;
    int total_q = cu_seqlens_q[n_seqs], total_k = cu_seqlens_k[n_seqs];
    size_t q_row = (size_t)n_heads * head_dim, kv_row = (size_t)n_kv_heads * head_dim;
    memset(dk, 0, (size_t)total_k * kv_row * sizeof(float));
    memset(dv, 0, (size_t)total_k * kv_row * sizeof(float));
    if (total_q == 0) return 0;

    int n_threads = cpu_threads(ctx, (double)total_q * n_heads * head_dim * max_seqlen_k / 8);
    int group = n_heads / n_kv_heads;
    size_t tile = (size_t)TQ * (max_seqlen_k > 0 ? max_seqlen_k : 1);
    size_t per_thread = 2 * tile + cpu_gemm_scratch_floats();
    float *scratch = malloc((size_t)n_threads * per_thread * sizeof(float));
    if (!scratch) return rl_err_oom(&ctx->err, "scratch", (size_t)n_threads * per_thread * 4);
    float *dqs = dq, *dks = dk, *dvs = dv;
    const float *dos = dout, *os = out, *qs = q, *ks = k, *vs = v;
    long n_items = (long)n_seqs * n_kv_heads;
#pragma omp parallel for num_threads(n_threads) schedule(dynamic, 1)
    for (long item = 0; item < n_items; item++) {
        int s = (int)(item / n_kv_heads), kvh = (int)(item % n_kv_heads);
        int t0 = cu_seqlens_q[s], len_q = cu_seqlens_q[s + 1] - t0;
        int len_k = cu_seqlens_k[s + 1] - cu_seqlens_k[s];
        size_t kv_off = (size_t)cu_seqlens_k[s] * kv_row + (size_t)kvh * head_dim;
        const float *k0 = ks + kv_off, *v0 = vs + kv_off;
        float *dk0 = dks + kv_off, *dv0 = dvs + kv_off;
        float *p = scratch + (size_t)omp_get_thread_num() * per_thread, *ds = p + tile, *gs = ds + tile;
        for (int h = kvh * group; h < (kvh + 1) * group; h++) {
            for (int i0 = 0; i0 < len_q; i0 += TQ) {
                int tq = len_q - i0 < TQ ? len_q - i0 : TQ;
                int kmax = n_visible(causal, len_q, len_k, i0 + tq - 1);
                size_t q_off = (size_t)(t0 + i0) * q_row + (size_t)h * head_dim;
                const float *qt = qs + q_off, *dot = dos + q_off, *ot = os + q_off;
                if (kmax == 0) { /* queries that see no key: no gradient */
                    for (int r = 0; r < tq; r++) memset(dqs + q_off + (size_t)r * q_row, 0, (size_t)head_dim * 4);
                    continue;
                }
                /* P = exp(scale Q K^T - lse), dP = dO V^T */
                cpu_gemm_args g_s = {.m = tq, .n = kmax, .k = head_dim, .a = qt, .a_rs = (ptrdiff_t)q_row,
                                     .a_cs = 1, .b = k0, .b_rs = 1, .b_cs = (ptrdiff_t)kv_row, .c = p,
                                     .ldc = kmax, .accumulate = 0};
                cpu_gemm_serial(&g_s, gs);
                cpu_gemm_args g_dp = g_s;
                g_dp.a = dot, g_dp.b = v0, g_dp.c = ds;
                cpu_gemm_serial(&g_dp, gs);
                for (int r = 0; r < tq; r++) {
                    float *pr = p + (size_t)r * kmax, *dsr = ds + (size_t)r * kmax;
                    const float *dor = dot + (size_t)r * q_row, *orow = ot + (size_t)r * q_row;
                    float l = lse[(size_t)(t0 + i0 + r) * n_heads + h];
                    int nk = n_visible(causal, len_q, len_k, i0 + r);
                    double di = 0;
                    for (int d = 0; d < head_dim; d++) di += (double)dor[d] * orow[d];
                    for (int j = 0; j < nk; j++) {
                        pr[j] = expf(pr[j] * scale - l);
                        dsr[j] = pr[j] * (dsr[j] - (float)di) * scale;
                    }
                    for (int j = nk; j < kmax; j++) pr[j] = dsr[j] = 0.0f;
                }
                /* dQ = dS K, dK += dS^T Q, dV += P^T dO */
                cpu_gemm_args g_dq = {.m = tq, .n = head_dim, .k = kmax, .a = ds, .a_rs = kmax, .a_cs = 1,
                                      .b = k0, .b_rs = (ptrdiff_t)kv_row, .b_cs = 1, .c = dqs + q_off,
                                      .ldc = (ptrdiff_t)q_row, .accumulate = 0};
                cpu_gemm_serial(&g_dq, gs);
                cpu_gemm_args g_dk = {.m = kmax, .n = head_dim, .k = tq, .a = ds, .a_rs = 1, .a_cs = kmax,
                                      .b = qt, .b_rs = (ptrdiff_t)q_row, .b_cs = 1, .c = dk0,
                                      .ldc = (ptrdiff_t)kv_row, .accumulate = 1};
                cpu_gemm_serial(&g_dk, gs);
                cpu_gemm_args g_dv = g_dk;
                g_dv.a = p, g_dv.b = dot, g_dv.c = dv0;
                cpu_gemm_serial(&g_dv, gs);
            }
        }
    }
    free(scratch);
    return 0;
}
