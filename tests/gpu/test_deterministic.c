/* test_deterministic.c — deterministic mode's batch invariance on CUDA (ctx->deterministic):
 * a row's bits must not depend on how many rows share its call, nor on where it sits.
 *  - products (rl_matmul_fwd with bias / accumulate, rl_matmul_residual_fwd, the lm_head's
 *    log-probs): rows computed in calls of 1, 3, 8, 64 and 1000 rows at several offsets give
 *    the bits of one 1000-row call (bf16 on tensor cores, bf16 with k not a multiple of 8 and the
 *    fp32 mode on CUDA cores), and they are the right products (CPU op, bf16 tolerance 2e-2);
 *  - the paged attention of the engine against the training forward (rl_attention_fwd over the
 *    whole sequences): each decode row (1 query, keys up to it) and each prefill chunk (queries
 *    at the end of their keys, also 3 at a time) gives exactly the training forward's row, at head_dim 128 and 64
 *    (tensor cores, GQA) and 16 (CUDA cores), bf16 and fp32, block size 16 with shuffled tables;
 *  - RMSNorm, RoPE and SwiGLU: rows of a 3-row call equal those of a 2000-row call. */
#include <math.h>

#include "gpu_util.h"

#include "core/rng.h"

static void det_begin(gu *g, int fp32)
{
    if (fp32)
        gu_begin_fp32(g);
    else
        gu_begin(g);
    g->gpu.deterministic = 1;
}

static size_t esz(const gu *g) { return rl_dtype_size(g->gpu.act_dtype); }

static float *get_act(gu *g, const void *d, size_t n)
{
    return g->gpu.act_dtype == RL_F32 ? gu_get_f32(g, d, n) : gu_get_bf16(g, d, n);
}

static size_t count_diff(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(a + i, b + i, sizeof(float)) != 0;
    return d;
}

/* kind 0: matmul_fwd + bias, 1: matmul_fwd accumulate, 2: matmul_residual_fwd. */
static void product_invariance(int fp32, int kind, int n, int k, uint64_t seed)
{
    gu g;
    det_begin(&g, fp32);
    enum { M = 1000 };
    size_t es = esz(&g);
    float *in = gu_rand(&g, (size_t)M * k, -1, 1, seed), *w = gu_rand(&g, (size_t)n * k, -0.5f, 0.5f, seed + 1);
    float *bias = gu_rand(&g, n, -1, 1, seed + 2), *res = gu_rand(&g, (size_t)M * n, -1, 1, seed + 3);
    char *d_in = gu_up_act(&g, in, (size_t)M * k), *d_w = gu_up_act(&g, w, (size_t)n * k);
    char *d_bias = gu_up_act(&g, bias, n), *d_res = gu_up_act(&g, res, (size_t)M * n);
    char *d_out = gu_nan_act(&g, (size_t)M * n);
    if (kind == 1) GU_OK(&g, rl_memcpy(&g.gpu, d_out, d_res, (size_t)M * n * es, RL_D2D));
#define PRODUCT(out, r0, rows)                                                                                          \
    (kind == 0   ? rl_matmul_fwd(&g.gpu, out, d_in + (size_t)(r0) * k * es, d_w, d_bias, rows, n, k, 0)                \
     : kind == 1 ? rl_matmul_fwd(&g.gpu, out, d_in + (size_t)(r0) * k * es, d_w, NULL, rows, n, k, 1)                  \
                 : rl_matmul_residual_fwd(&g.gpu, out, d_res + (size_t)(r0) * n * es, d_in + (size_t)(r0) * k * es,    \
                                          d_w, rows, n, k))
    GU_OK(&g, PRODUCT(d_out, 0, M));
    float *whole = get_act(&g, d_out, (size_t)M * n);
    float *ref = gu_copy(&g, res, (size_t)M * n);
    if (kind == 2)
        GU_CPU_OK(&g, rl_cpu_matmul_residual_fwd(&g.cpu, ref, res, in, w, M, n, k));
    else
        GU_CPU_OK(&g, rl_cpu_matmul_fwd(&g.cpu, ref, in, w, kind == 0 ? bias : NULL, M, n, k, kind == 1));
    char what[96];
    snprintf(what, sizeof what, "det product kind %d %dx%dx%d %s", kind, M, n, k, fp32 ? "fp32" : "bf16");
    gu_check(what, whole, ref, (size_t)M * n, fp32 ? 1e-4 : 2e-2);

    static const int sizes[] = {1, 3, 8, 64, 1000};
    char *d_part = gu_nan_act(&g, (size_t)M * n);
    size_t differ = 0;
    for (int si = 0; si < 5; si++) {
        int b = sizes[si];
        /* the rows in calls of b rows from offsets 0, 1 and 37 (rows before the offset: one call) */
        for (int off = 0; off < (b == M ? 1 : 3); off++) {
            int start = off == 0 ? 0 : off == 1 ? 1 : 37;
            if (kind == 1) GU_OK(&g, rl_memcpy(&g.gpu, d_part, d_res, (size_t)M * n * es, RL_D2D));
            if (start) GU_OK(&g, PRODUCT(d_part, 0, start));
            for (int r = start; r < M; r += b) {
                int rows = r + b <= M ? b : M - r;
                GU_OK(&g, PRODUCT(d_part + (size_t)r * n * es, r, rows));
            }
            float *got = get_act(&g, d_part, (size_t)M * n);
            size_t d = count_diff(got, whole, (size_t)M * n);
            if (d) fprintf(stderr, "[err] %s: calls of %d rows from %d: %zu outputs differ\n", what, b, start, d);
            differ += d;
        }
    }
#undef PRODUCT
    cr_expect_eq(differ, 0, "%s: %zu outputs depend on the call's row count", what, differ);
    gu_end(&g);
}

Test(gpu_deterministic, products_bf16_mma) { product_invariance(0, 0, 200, 256, 11); }
Test(gpu_deterministic, products_bf16_accumulate) { product_invariance(0, 1, 96, 136, 12); }
Test(gpu_deterministic, products_bf16_residual) { product_invariance(0, 2, 130, 64, 13); }
Test(gpu_deterministic, products_bf16_odd_k) { product_invariance(0, 0, 70, 37, 14); }
/* n 1100: 1000 rows take the wide tiles, calls of 1-64 rows the narrow ones (matmul_det.cu); k 200
 * ends in a zero-filled partial step */
Test(gpu_deterministic, products_bf16_wide_narrow) { product_invariance(0, 2, 1100, 200, 16); }
Test(gpu_deterministic, products_fp32) { product_invariance(1, 2, 72, 48, 15); }

/* A product's output columns do not depend on the other columns of its call: q|k|v (gate|up) as
 * one product gives the bits of the separate q, k and v products (the engine runs them fused,
 * the training forward apart), at 1, 64 and 1000 rows (narrow and wide tiles). */
static void column_invariance(int fp32, uint64_t seed)
{
    gu g;
    det_begin(&g, fp32);
    enum { M = 1000, N = 200, K = 136 };
    static const int parts[] = {120, 40, 40}, rows[] = {1, 64, 1000};
    size_t es = esz(&g);
    float *in = gu_rand(&g, (size_t)M * K, -1, 1, seed), *w = gu_rand(&g, (size_t)N * K, -0.5f, 0.5f, seed + 1);
    char *d_in = gu_up_act(&g, in, (size_t)M * K), *d_w = gu_up_act(&g, w, (size_t)N * K);
    char *d_whole = gu_nan_act(&g, (size_t)M * N), *d_part = gu_nan_act(&g, (size_t)M * N);
    size_t differ = 0;
    for (int ri = 0; ri < 3; ri++) {
        int m = rows[ri];
        GU_OK(&g, rl_matmul_fwd(&g.gpu, d_whole, d_in, d_w, NULL, m, N, K, 0));
        float *whole = get_act(&g, d_whole, (size_t)m * N);
        for (int p = 0, c0 = 0; p < 3; c0 += parts[p], p++) {
            GU_OK(&g, rl_matmul_fwd(&g.gpu, d_part, d_in, d_w + (size_t)c0 * K * es, NULL, m, parts[p], K, 0));
            float *part = get_act(&g, d_part, (size_t)m * parts[p]);
            size_t d = 0;
            for (int r = 0; r < m; r++) d += count_diff(part + (size_t)r * parts[p], whole + (size_t)r * N + c0, parts[p]);
            if (d) fprintf(stderr, "[err] %d rows, columns %d..%d apart: %zu outputs differ\n", m, c0, c0 + parts[p], d);
            differ += d;
        }
    }
    cr_expect_eq(differ, 0, "%zu outputs depend on the other columns of their call (%s)", differ, fp32 ? "fp32" : "bf16");
    gu_end(&g);
}

Test(gpu_deterministic, products_columns_bf16) { column_invariance(0, 17); }
Test(gpu_deterministic, products_columns_fp32) { column_invariance(1, 18); }

/* The lm_head's log-probs (fp32 logits through the same kind of product, inv_temperature 1/0.7):
 * per row the same whatever the call's row count. */
Test(gpu_deterministic, lm_head_logprobs)
{
    gu g;
    det_begin(&g, 0);
    enum { M = 300, DIM = 128, VOCAB = 1000 };
    float *h = gu_rand(&g, (size_t)M * DIM, -1, 1, 21), *w = gu_rand(&g, (size_t)VOCAB * DIM, -0.5f, 0.5f, 22);
    int32_t *tg = gu_host(&g, M * sizeof(int32_t));
    for (int i = 0; i < M; i++) tg[i] = (i * 37) % VOCAB;
    char *d_h = gu_up_bf16(&g, h, (size_t)M * DIM);
    void *d_w = gu_up_bf16(&g, w, (size_t)VOCAB * DIM);
    int32_t *d_t = gu_up_bytes(&g, tg, M * sizeof(int32_t));
    float *d_lp = gu_nan_f32(&g, M), *d_lse = gu_nan_f32(&g, M);
    GU_OK(&g, rl_lm_head_logprobs_fwd(&g.gpu, d_lp, d_lse, NULL, d_h, d_w, d_t, M, DIM, VOCAB, 1.0f / 0.7f));
    float *whole = gu_get_f32(&g, d_lp, M);
    size_t differ = 0;
    for (int b = 1; b <= 64; b *= 4) {
        float *d_part = gu_nan_f32(&g, M), *d_plse = gu_nan_f32(&g, M);
        for (int r = 0; r < M; r += b) {
            int rows = r + b <= M ? b : M - r;
            GU_OK(&g, rl_lm_head_logprobs_fwd(&g.gpu, d_part + r, d_plse + r, NULL, d_h + (size_t)r * DIM * 2, d_w,
                                              d_t + r, rows, DIM, VOCAB, 1.0f / 0.7f));
        }
        differ += count_diff(gu_get_f32(&g, d_part, M), whole, M);
    }
    for (int i = 0; i < M; i++) cr_assert(isfinite(whole[i]) && whole[i] <= 0, "logp[%d] = %g", i, whole[i]);
    cr_expect_eq(differ, 0, "%zu lm_head log-probs depend on the call's row count", differ);
    gu_end(&g);
}

/* The engine's paged attention against the training forward, bit for bit. */
static void attention_matches_training(int fp32, int H, int KV, int D, uint64_t seed)
{
    gu g;
    det_begin(&g, fp32);
    enum { S = 3, BS = 16 };
    static const int len[S] = {150, 64, 97};
    int total = 0, n_blocks = 0, max_blocks = 0, max_len = 0;
    int32_t cu[S + 1] = {0};
    for (int s = 0; s < S; s++) {
        total += len[s];
        cu[s + 1] = total;
        int nb = (len[s] + BS - 1) / BS;
        n_blocks += nb;
        if (nb > max_blocks) max_blocks = nb;
        if (len[s] > max_len) max_len = len[s];
    }
    size_t es = esz(&g), q_row = (size_t)H * D, kv_row = (size_t)KV * D, plane = (size_t)BS * kv_row;
    float *q = gu_rand(&g, total * q_row, -2, 2, seed), *k = gu_rand(&g, total * kv_row, -2, 2, seed + 1);
    float *v = gu_rand(&g, total * kv_row, -1, 1, seed + 2);
    char *d_q = gu_up_act(&g, q, total * q_row), *d_k = gu_up_act(&g, k, total * kv_row);
    char *d_v = gu_up_act(&g, v, total * kv_row);
    /* the training forward over the whole sequences */
    void *d_out = gu_nan_act(&g, total * q_row);
    float *d_lse = gu_nan_f32(&g, (size_t)total * H);
    int32_t *d_cu = gu_up_bytes(&g, cu, sizeof cu);
    float scale = 1.0f / sqrtf((float)D);
    GU_OK(&g, rl_attention_fwd(&g.gpu, d_out, d_lse, d_q, d_k, d_v, d_cu, d_cu, NULL, S, max_len, max_len, H, KV, D,
                               scale, 1));
    float *train = get_act(&g, d_out, total * q_row);

    /* the pool: shuffled blocks, K and V planes of one layer */
    rl_rng rng;
    rl_rng_init(&rng, seed + 3);
    int32_t *perm = gu_host(&g, n_blocks * 4), *tables = gu_host(&g, S * max_blocks * 4), *slots = gu_host(&g, total * 4);
    for (int b = 0; b < n_blocks; b++) perm[b] = b;
    for (int b = n_blocks - 1; b > 0; b--) {
        int j = (int)rl_rng_below(&rng, (uint32_t)b + 1), t = perm[b];
        perm[b] = perm[j], perm[j] = t;
    }
    for (int s = 0, next = 0; s < S; s++) {
        for (int i = 0; i < max_blocks; i++) tables[s * max_blocks + i] = i * BS < len[s] ? perm[next++] : -1;
        for (int j = 0; j < len[s]; j++) slots[cu[s] + j] = tables[s * max_blocks + j / BS] * BS + j % BS;
    }
    char *d_pool = gu_nan_act(&g, (size_t)n_blocks * 2 * plane);
    rl_paged_kv kv = {.k = d_pool, .v = d_pool + plane * es, .block_stride = 2 * plane, .block_size = BS,
                      .block_tables = gu_up_bytes(&g, tables, S * max_blocks * 4), .max_blocks = max_blocks};
    GU_OK(&g, rl_kv_cache_write(&g.gpu, &kv, d_k, d_v, gu_up_bytes(&g, slots, total * 4), total, KV, D));

    /* decode: every position p of every sequence as one query row over keys 0..p; prefill: the
     * chunks [p0, p1) of queries over keys 0..p1 - 1 (chunk ends 40 and the sequence's end);
     * small chunks: 3 queries at a time (a GQA group's heads x 3 rows fit one packed warp) */
    size_t differ = 0;
    char *d_qs = gu_nan_act(&g, total * q_row), *d_os = gu_nan_act(&g, total * q_row);
    int32_t *cuq = gu_host(&g, (total + 1) * 4), *lk = gu_host(&g, total * 4);
    int32_t *row_tables = gu_host(&g, (size_t)total * max_blocks * 4); /* each call row: its sequence's table */
    for (int mode = 0; mode < 3; mode++) {
        int n = 0, t = 0, maxq = 1;
        cuq[0] = 0;
        for (int s = 0; s < S; s++) {
            int ends[3] = {40 < len[s] ? 40 : len[s], len[s], len[s]};
            for (int p = 0, c = 0; p < len[s]; n++) {
                int p1 = mode == 0 ? p + 1 : mode == 2 ? (p + 3 < len[s] ? p + 3 : len[s]) : ends[c++];
                GU_OK(&g, rl_memcpy(&g.gpu, d_qs + (size_t)t * q_row * es, d_q + (size_t)(cu[s] + p) * q_row * es,
                                    (size_t)(p1 - p) * q_row * es, RL_D2D));
                t += p1 - p;
                cuq[n + 1] = t;
                lk[n] = p1;
                memcpy(row_tables + (size_t)n * max_blocks, tables + s * max_blocks, max_blocks * 4);
                if (p1 - p > maxq) maxq = p1 - p;
                p = p1;
            }
        }
        rl_paged_kv rkv = kv;
        rkv.block_tables = gu_up_bytes(&g, row_tables, (size_t)n * max_blocks * 4);
        GU_OK(&g, rl_paged_attention_fwd(&g.gpu, d_os, d_qs, &rkv, gu_up_bytes(&g, cuq, (n + 1) * 4),
                                         gu_up_bytes(&g, lk, n * 4), n, maxq, max_len, H, KV, D, scale));
        float *got = get_act(&g, d_os, total * q_row);
        size_t d = count_diff(got, train, total * q_row); /* queries in the same order: sequence by sequence */
        fprintf(stderr, "[err] det paged %s H%d/%d D%d %s: %zu of %zu outputs differ from the training forward\n",
                mode == 0 ? "decode" : mode == 1 ? "prefill" : "chunks of 3", H, KV, D, fp32 ? "fp32" : "bf16", d,
                total * q_row);
        differ += d;
    }
    cr_expect_eq(differ, 0, "paged attention H%d/%d D%d: %zu outputs differ from the training forward", H, KV, D,
                 differ);
    gu_end(&g);
}

Test(gpu_deterministic, attention_hd128_gqa) { attention_matches_training(0, 8, 2, 128, 31); }
Test(gpu_deterministic, attention_hd64) { attention_matches_training(0, 4, 4, 64, 32); }
Test(gpu_deterministic, attention_hd16_general) { attention_matches_training(0, 4, 2, 16, 33); }
Test(gpu_deterministic, attention_fp32) { attention_matches_training(1, 4, 2, 64, 34); }

/* RMSNorm (the 2-warp blocks of few rows vs 8-warp blocks), RoPE and SwiGLU: rows 5..7 of a
 * 2000-row call equal a 3-row call on them. */
Test(gpu_deterministic, rowwise_ops)
{
    gu g;
    det_begin(&g, 0);
    enum { M = 2000, DIM = 1024, H = 4, HD = 128, I = 256, R0 = 5, R = 3 };
    float *x = gu_rand(&g, (size_t)M * DIM, -2, 2, 41), *w = gu_rand(&g, DIM, 0.5f, 1.5f, 42);
    char *d_x = gu_up_bf16(&g, x, (size_t)M * DIM);
    void *d_w = gu_up_bf16(&g, w, DIM), *d_a = gu_nan_bf16(&g, (size_t)M * DIM), *d_b = gu_nan_bf16(&g, R * DIM);
    float *d_r = gu_nan_f32(&g, M), *d_r3 = gu_nan_f32(&g, R);
    GU_OK(&g, rl_rmsnorm_fwd(&g.gpu, d_a, d_r, d_x, d_w, M, DIM, 1e-6f));
    GU_OK(&g, rl_rmsnorm_fwd(&g.gpu, d_b, d_r3, d_x + (size_t)R0 * DIM * 2, d_w, R, DIM, 1e-6f));
    size_t d = count_diff(gu_get_bf16(&g, (char *)d_a + (size_t)R0 * DIM * 2, R * DIM), gu_get_bf16(&g, d_b, R * DIM),
                          R * DIM);
    cr_expect_eq(d, 0, "rmsnorm: %zu outputs of 3 rows differ from the 2000-row call", d);

    /* RoPE in place on [tokens, H, HD] (x reused: M * DIM = M * 8 * HD) */
    int32_t *pos = gu_host(&g, M * 4);
    for (int i = 0; i < M; i++) pos[i] = (i * 13) % 1000;
    float *invf = gu_host(&g, HD / 2 * sizeof(float));
    for (int i = 0; i < HD / 2; i++) invf[i] = powf(1e6f, -2.0f * i / HD);
    int32_t *d_pos = gu_up_bytes(&g, pos, M * 4);
    float *d_inv = gu_up_f32(&g, invf, HD / 2);
    char *d_ra = gu_up_bf16(&g, x, (size_t)M * H * HD), *d_rb = gu_up_bf16(&g, x + (size_t)R0 * H * HD, R * H * HD);
    GU_OK(&g, rl_rope_fwd(&g.gpu, d_ra, d_pos, d_inv, M, H, HD));
    GU_OK(&g, rl_rope_fwd(&g.gpu, d_rb, d_pos + R0, d_inv, R, H, HD));
    d = count_diff(gu_get_bf16(&g, d_ra + (size_t)R0 * H * HD * 2, R * H * HD), gu_get_bf16(&g, d_rb, R * H * HD),
                   R * H * HD);
    cr_expect_eq(d, 0, "rope: %zu outputs of 3 rows differ from the 2000-row call", d);

    /* SwiGLU: gate = x[:, :I], up = x[:, I:2I] of the same rows (row stride DIM) */
    void *d_s = gu_nan_bf16(&g, (size_t)M * I), *d_s3 = gu_nan_bf16(&g, R * I);
    GU_OK(&g, rl_swiglu_fwd(&g.gpu, d_s, d_x, d_x + I * 2, M, I, DIM));
    GU_OK(&g, rl_swiglu_fwd(&g.gpu, d_s3, d_x + (size_t)R0 * DIM * 2, d_x + ((size_t)R0 * DIM + I) * 2, R, I, DIM));
    d = count_diff(gu_get_bf16(&g, (char *)d_s + (size_t)R0 * I * 2, R * I), gu_get_bf16(&g, d_s3, R * I), R * I);
    cr_expect_eq(d, 0, "swiglu: %zu outputs of 3 rows differ from the 2000-row call", d);
    gu_end(&g);
}
