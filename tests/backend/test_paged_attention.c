/* test_paged_attention.c — rl_kv_cache_write and rl_paged_attention_fwd (CPU): keys and values
 * scattered into a block pool through shuffled block tables give, bit for bit, what the varlen
 * rl_attention_fwd gives on the same keys laid out contiguously (the paged op runs the varlen
 * forward's own tile, so not one rounding may differ: deterministic mode relies on it); at
 * awkward sizes (head_dim 20, block size 5, sequences of 1 to 131 keys), with GQA, with
 * several queries against cached blocks (chunked prefill) and single-query decode rows; an
 * inactive row (seqlens_k 0) gives zeros; padding slots (< 0) are not written; bad tables and
 * lengths are refused; rl_qk_norm_rope_attention_fwd is rl_qk_norm_rope_cache_fwd and the paged
 * attention in a row, bit for bit. */
#include "op_fixture.h"

enum { L = 2, LAYER = 1, H = 6, KV = 2, HD = 20, BS = 5 };

typedef struct paged_case {
    int n_seqs;
    int len_q[8], len_k[8]; /* len_k 0: an inactive row with len_q queries */
} paged_case;

/* A pool of n_blocks blocks of L layers; returns the layer's view (tables set by the caller). */
static rl_paged_kv layer_view(float *pool, int n_blocks)
{
    size_t plane = (size_t)BS * KV * HD;
    (void)n_blocks;
    return (rl_paged_kv){.k = pool + 2 * LAYER * plane, .v = pool + (2 * LAYER + 1) * plane,
                         .block_stride = 2 * L * plane, .block_size = BS};
}

static void run_paged(const paged_case *pc, uint64_t seed)
{
    rl_ctx ctx = fx_cpu();
    int n = pc->n_seqs, total_q = 0, total_k = 0, n_blocks = 0, max_blocks = 1, max_q = 1, max_k = 1;
    for (int s = 0; s < n; s++) {
        total_q += pc->len_q[s];
        total_k += pc->len_k[s];
        int nb = (pc->len_k[s] + BS - 1) / BS;
        n_blocks += nb;
        if (nb > max_blocks) max_blocks = nb;
        if (pc->len_q[s] > max_q) max_q = pc->len_q[s];
        if (pc->len_k[s] > max_k) max_k = pc->len_k[s];
    }
    n_blocks += 3; /* blocks no sequence uses */
    size_t q_row = (size_t)H * HD, kv_row = (size_t)KV * HD, block_floats = 2 * (size_t)L * BS * kv_row;
    float *q = malloc(total_q * q_row * sizeof(float)), *k = malloc(total_k * kv_row * sizeof(float));
    float *v = malloc(total_k * kv_row * sizeof(float)), *pool = fx_alloc_poisoned(n_blocks * block_floats);
    tu_fill_uniform(q, total_q * q_row, -1, 1, seed);
    tu_fill_uniform(k, total_k * kv_row, -1, 1, seed + 1);
    tu_fill_uniform(v, total_k * kv_row, -1, 1, seed + 2);

    /* Physical blocks in a shuffled order, handed out to the sequences' tables. */
    int32_t *perm = malloc(n_blocks * sizeof(int32_t)), *tables = malloc((size_t)n * max_blocks * sizeof(int32_t));
    rl_rng rng;
    rl_rng_init(&rng, seed + 3);
    for (int b = 0; b < n_blocks; b++) perm[b] = b;
    for (int b = n_blocks - 1; b > 0; b--) {
        int j = (int)rl_rng_below(&rng, (uint32_t)b + 1), t = perm[b];
        perm[b] = perm[j], perm[j] = t;
    }
    int32_t *slots = malloc((total_k + 1) * sizeof(int32_t)), cu_q[9] = {0}, cu_k[9] = {0}, seqlens[8];
    int next = 0, t = 0;
    for (int s = 0; s < n; s++) {
        for (int i = 0; i < max_blocks; i++) tables[s * max_blocks + i] = -1;
        for (int i = 0; i < (pc->len_k[s] + BS - 1) / BS; i++) tables[s * max_blocks + i] = perm[next++];
        for (int j = 0; j < pc->len_k[s]; j++, t++) slots[t] = tables[s * max_blocks + j / BS] * BS + j % BS;
        cu_q[s + 1] = cu_q[s] + pc->len_q[s];
        cu_k[s + 1] = cu_k[s] + pc->len_k[s];
        seqlens[s] = pc->len_k[s];
    }
    rl_paged_kv kv = layer_view(pool, n_blocks);
    kv.block_tables = tables;
    kv.max_blocks = max_blocks;
    cr_assert_eq(rl_kv_cache_write(&ctx, &kv, k, v, slots, total_k, KV, HD), 0, "%s", ctx.err.msg);

    /* the pool holds each key at its slot, and nothing else of the layer was written */
    size_t written = 0;
    for (int b = 0; b < n_blocks; b++)
        for (int r = 0; r < BS; r++)
            for (size_t e = 0; e < kv_row; e++) written += !isnan(((float *)kv.k)[b * kv.block_stride + r * kv_row + e]);
    cr_assert_eq(written, (size_t)total_k * kv_row, "the write touched %zu key elements, expected %zu", written,
                 (size_t)total_k * kv_row);

    float *ref = fx_alloc_poisoned(total_q * q_row), *lse = fx_alloc_poisoned((size_t)total_q * H);
    float *out = fx_alloc_poisoned(total_q * q_row);
    /* The reference sees only the active rows: queries of inactive rows are left out. */
    int32_t ref_cu_q[9] = {0}, ref_cu_k[9] = {0}, n_ref = 0;
    float *ref_q = malloc(total_q * q_row * sizeof(float));
    for (int s = 0; s < n; s++) {
        if (!pc->len_k[s]) continue;
        memcpy(ref_q + (size_t)ref_cu_q[n_ref] * q_row, q + (size_t)cu_q[s] * q_row, pc->len_q[s] * q_row * sizeof(float));
        ref_cu_q[n_ref + 1] = ref_cu_q[n_ref] + pc->len_q[s];
        ref_cu_k[n_ref + 1] = ref_cu_k[n_ref] + pc->len_k[s];
        n_ref++;
    }
    float scale = 1.0f / sqrtf((float)HD);
    cr_assert_eq(rl_attention_fwd(&ctx, ref, lse, ref_q, k, v, ref_cu_q, ref_cu_k, NULL, n_ref, max_q, max_k, H, KV,
                                  HD, scale, 1),
                 0, "%s", ctx.err.msg);
    /* max_seqlen_k is a bound: pass more than the longest, as a captured decode step does */
    cr_assert_eq(rl_paged_attention_fwd(&ctx, out, q, &kv, cu_q, seqlens, n, max_q, max_blocks * BS + 7, H, KV, HD,
                                        scale),
                 0, "%s", ctx.err.msg);
    double worst = 0;
    for (int s = 0, r = 0; s < n; s++) {
        const float *got = out + (size_t)cu_q[s] * q_row;
        size_t count = (size_t)pc->len_q[s] * q_row;
        if (!pc->len_k[s]) {
            for (size_t i = 0; i < count; i++) cr_assert_eq(got[i], 0.0f, "inactive row %d: element %zu = %g", s, i, got[i]);
            continue;
        }
        const float *want = ref + (size_t)ref_cu_q[r++] * q_row;
        for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    }
    cr_log_info("paged vs varlen attention: max abs difference %.3g", worst);
    cr_assert(worst == 0, "paged attention differs from the varlen forward by %.3g (must be bitwise equal)", worst);
    free(q), free(k), free(v), free(pool), free(perm), free(tables), free(slots), free(ref), free(lse), free(out),
        free(ref_q);
}

Test(paged_attention, prefill_equals_varlen)
{
    paged_case pc = {.n_seqs = 3, .len_q = {1, 17, 131}, .len_k = {1, 17, 131}};
    run_paged(&pc, 11);
}

Test(paged_attention, decode_rows_equal_varlen)
{
    paged_case pc = {.n_seqs = 5, .len_q = {1, 1, 1, 1, 1}, .len_k = {1, 5, 6, 44, 99}};
    run_paged(&pc, 12);
}

Test(paged_attention, chunked_prefill_against_cached_blocks)
{
    /* new queries at the end of longer cached contexts, mixed with decode rows */
    paged_case pc = {.n_seqs = 4, .len_q = {7, 1, 64, 65}, .len_k = {40, 23, 70, 129}};
    run_paged(&pc, 13);
}

Test(paged_attention, inactive_rows_give_zeros)
{
    paged_case pc = {.n_seqs = 4, .len_q = {1, 1, 3, 1}, .len_k = {12, 0, 9, 0}};
    run_paged(&pc, 14);
}

Test(paged_attention, padding_slots_are_not_written)
{
    rl_ctx ctx = fx_cpu();
    enum { N_BLOCKS = 3 };
    size_t kv_row = (size_t)KV * HD, floats = N_BLOCKS * 2 * (size_t)L * BS * kv_row;
    float *pool = malloc(floats * sizeof(float)), *before = malloc(floats * sizeof(float));
    float k[3 * KV * HD], v[3 * KV * HD];
    tu_fill_uniform(pool, floats, -1, 1, 20);
    memcpy(before, pool, floats * sizeof(float));
    tu_fill_uniform(k, 3 * kv_row, -1, 1, 21);
    tu_fill_uniform(v, 3 * kv_row, -1, 1, 22);
    rl_paged_kv kv = layer_view(pool, N_BLOCKS);
    int32_t slots[3] = {-1, 2 * BS + 4, -7};
    cr_assert_eq(rl_kv_cache_write(&ctx, &kv, k, v, slots, 3, KV, HD), 0, "%s", ctx.err.msg);
    size_t at = 2 * kv.block_stride + 4 * kv_row, changed = 0;
    for (size_t i = 0; i < floats; i++) changed += pool[i] != before[i];
    cr_assert_eq(changed, 2 * kv_row, "%zu elements changed, expected the one token's keys and values", changed);
    cr_assert(!memcmp((float *)kv.k + at, k + kv_row, kv_row * sizeof(float)));
    cr_assert(!memcmp((float *)kv.v + at, v + kv_row, kv_row * sizeof(float)));
    free(pool), free(before);
}

/* rl_qk_norm_rope_attention_fwd is the two ops in a row (the CUDA one-kernel decode step is
 * tested against it): the same q_out, pool and output, bit for bit; a token count its batch
 * cannot hold is refused. */
Test(paged_attention, qk_norm_rope_attention_is_the_two_ops)
{
    rl_ctx ctx = fx_cpu();
    enum { N = 3, NB = 6 };
    size_t qd = (size_t)H * HD, kd = (size_t)KV * HD, row = qd + 2 * kd, floats = NB * 2 * (size_t)L * BS * kd;
    float qkv[N * (H + 2 * KV) * HD], qn[HD], kn[HD], inv_freq[HD / 2];
    tu_fill_uniform(qkv, N * row, -2, 2, 30);
    tu_fill_uniform(qn, HD, 0.5f, 1.5f, 31);
    tu_fill_uniform(kn, HD, 0.5f, 1.5f, 32);
    for (int i = 0; i < HD / 2; i++) inv_freq[i] = powf(10000.0f, -2.0f * i / HD);
    float *pool[2], *out[2], *q_out[2];
    /* sequences of 7, 1 and 0 (inactive) keys; the new token's slot is its last key */
    int32_t tables[N * 2] = {4, 1, 0, -1, -1, -1}, cu[N + 1] = {0, 1, 2, 3}, seqlens[N] = {7, 1, 0};
    int32_t positions[N] = {6, 0, 3}, slots[N] = {1 * BS + 1, 0 * BS + 0, -1};
    for (int r = 0; r < 2; r++) {
        pool[r] = malloc(floats * sizeof(float)), out[r] = fx_alloc_poisoned(N * qd), q_out[r] = fx_alloc_poisoned(N * qd);
        tu_fill_uniform(pool[r], floats, -1, 1, 33);
        rl_paged_kv kv = layer_view(pool[r], NB);
        kv.block_tables = tables, kv.max_blocks = 2;
        if (r == 0) {
            cr_assert_eq(rl_qk_norm_rope_attention_fwd(&ctx, out[r], q_out[r], &kv, qkv, qkv + qd, qkv + qd + kd, row, row,
                                                       qn, kn, 1e-6f, positions, inv_freq, slots, N, cu, seqlens, N, 1,
                                                       10, H, KV, HD, 0.3f),
                         0, "%s", ctx.err.msg);
        } else {
            cr_assert_eq(rl_qk_norm_rope_cache_fwd(&ctx, q_out[r], &kv, qkv, qkv + qd, qkv + qd + kd, row, row, qn, kn,
                                                   1e-6f, positions, inv_freq, slots, N, H, KV, HD),
                         0, "%s", ctx.err.msg);
            cr_assert_eq(rl_paged_attention_fwd(&ctx, out[r], q_out[r], &kv, cu, seqlens, N, 1, 10, H, KV, HD, 0.3f), 0,
                         "%s", ctx.err.msg);
        }
    }
    cr_assert(!memcmp(q_out[0], q_out[1], N * qd * sizeof(float)), "q_out differs from the two ops'");
    cr_assert(!memcmp(out[0], out[1], N * qd * sizeof(float)), "the output differs from the two ops'");
    cr_assert(!memcmp(pool[0], pool[1], floats * sizeof(float)), "the pool differs from the two ops'");
    rl_paged_kv kv = layer_view(pool[0], NB);
    kv.block_tables = tables, kv.max_blocks = 2;
    fx_expect_refused(&ctx,
                      rl_qk_norm_rope_attention_fwd(&ctx, out[0], q_out[0], &kv, qkv, qkv + qd, qkv + qd + kd, row, row,
                                                    qn, kn, 1e-6f, positions, inv_freq, slots, N, cu, seqlens, 2, 1, 10,
                                                    H, KV, HD, 0.3f),
                      "rl_qk_norm_rope_attention_fwd: n_tokens 3 is more than n_seqs 2 x max_seqlen_q 1");
    for (int r = 0; r < 2; r++) free(pool[r]), free(out[r]), free(q_out[r]);
}

Test(paged_attention, bad_tables_and_lengths)
{
    rl_ctx ctx = fx_cpu();
    float pool[2 * 2 * L * BS * KV * HD], q[2 * H * HD], out[2 * H * HD];
    int32_t tables[2] = {1, -1}, cu[2] = {0, 2}, seqlens[1] = {1};
    rl_paged_kv kv = layer_view(pool, 2);
    kv.block_tables = tables;
    kv.max_blocks = 2;
    fx_expect_refused(&ctx, rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 2, 10, H, KV, HD, 1.0f),
                      "rl_paged_attention_fwd: seqlens_k[0] 1 is outside [2 queries, min(max_seqlen_k 10, 2 blocks of 5)]");
    seqlens[0] = 7;
    fx_expect_refused(&ctx, rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 2, 10, H, KV, HD, 1.0f),
                      "rl_paged_attention_fwd: block_tables[0][1] -1 is negative");
    seqlens[0] = 11;
    fx_expect_refused(&ctx, rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 2, 20, H, KV, HD, 1.0f),
                      "rl_paged_attention_fwd: seqlens_k[0] 11 is outside [2 queries, min(max_seqlen_k 20, 2 blocks of 5)]");
    cu[1] = 3;
    seqlens[0] = 3;
    fx_expect_refused(&ctx, rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 2, 10, H, KV, HD, 1.0f),
                      "rl_paged_attention_fwd: cu_seqlens_q: sequence 0 has 3 queries, outside [0, max_seqlen_q 2]");
}

/* Shared-prefix runs (rl_paged_kv share_*): the run's first keys are read through the lead's
 * table, the same blocks, so the same bits as without runs; a run whose blocks are not shared
 * reads the lead's keys instead (the runs are used, not just accepted); malformed runs are
 * refused. */
Test(paged_attention, shared_prefix_runs)
{
    enum { NB = 6, MB = 3 };
    rl_ctx ctx = fx_cpu();
    size_t pool_n = (size_t)NB * 2 * L * BS * KV * HD;
    float *pool = malloc(pool_n * sizeof(float)), q[3 * H * HD], out[3 * H * HD], plain_out[3 * H * HD];
    rl_rng rng;
    rl_rng_init(&rng, 77);
    for (size_t i = 0; i < pool_n; i++) pool[i] = (float)rl_rng_below(&rng, 2001) / 1000.0f - 1.0f;
    for (int i = 0; i < 3 * H * HD; i++) q[i] = (float)rl_rng_below(&rng, 2001) / 1000.0f - 1.0f;
    int32_t tables[3 * MB] = {0, 1, 2, 0, 1, 3, 4, 5, -1}, cu[4] = {0, 1, 2, 3}, seqlens[3] = {13, 12, 9};
    int32_t lead[3] = {0, 0, 2}, len[3] = {10, 10, 0}, count[3] = {2, 0, 0};
    rl_paged_kv kv = layer_view(pool, NB);
    kv.block_tables = tables;
    kv.max_blocks = MB;
    cr_assert_eq(rl_paged_attention_fwd(&ctx, plain_out, q, &kv, cu, seqlens, 3, 1, 13, H, KV, HD, 0.5f), 0, "%s",
                 ctx.err.msg);
    kv.share_lead = lead, kv.share_len = len, kv.share_count = count, kv.max_share = 2;
    cr_assert_eq(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 3, 1, 13, H, KV, HD, 0.5f), 0, "%s",
                 ctx.err.msg);
    cr_assert(!memcmp(out, plain_out, sizeof out), "a run of shared blocks changed the result");

    /* a run over sequence 2, whose first block is not sequence 0's: its first 5 keys become
     * sequence 0's */
    int32_t bad_lead[3] = {0, 0, 0}, bad_len[3] = {5, 5, 5}, bad_count[3] = {3, 0, 0};
    kv.share_lead = bad_lead, kv.share_len = bad_len, kv.share_count = bad_count, kv.max_share = 3;
    cr_assert_eq(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 3, 1, 13, H, KV, HD, 0.5f), 0, "%s",
                 ctx.err.msg);
    cr_assert(!memcmp(out, plain_out, 2 * H * HD * sizeof(float)), "sequences 0 and 1 share block 0");
    cr_assert(memcmp(out + 2 * H * HD, plain_out + 2 * H * HD, H * HD * sizeof(float)),
              "sequence 2 must read sequence 0's first block through the run");

    kv.share_lead = lead, kv.share_len = len, kv.share_count = count, kv.max_share = 2;
    count[0] = 1;
    fx_expect_refused(&ctx, rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 3, 1, 13, H, KV, HD, 0.5f),
                      "rl_paged_attention_fwd: share_lead[1] 0 does not lead a run (of at most max_share 2) that holds it");
    count[0] = 2;
    len[1] = 12;
    fx_expect_refused(&ctx, rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 3, 1, 13, H, KV, HD, 0.5f),
                      "rl_paged_attention_fwd: share_len[1] 12: not its lead's 10, or not in [0, seqlens_k 12 - 1], or 1 "
                      "queries (a run's sequences have one)");
    free(pool);
}
