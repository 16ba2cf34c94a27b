/* test_paged_b1.c — rl_qk_norm_rope_attention_fwd on CUDA (paged_attention_b1.cu: one kernel
 * for decode steps of up to 8 sequences; the two ops otherwise) against the CPU op (the two ops
 * in a row) on fresh random inputs: the q|k|v rows of the step's tokens, a pool whose earlier
 * keys and values are written first (shuffled block tables, block sizes 3 to 16, the new
 * token's slot at the last key), inactive rows (seqlens_k 0, slot -1), contexts of 1 key (only
 * the new one) to 3,001 keys (many chunks per block), head_dim 16 to 128, GQA groups 1 to 8,
 * with and without the head norms, fused and separate q/k/v rows; and a batch of 9 sequences,
 * which takes the two ops. Checked: the attention output (bf16; norm-relative 1e-2 and
 * elementwise 2.5e-1, test_paged.c's tolerance at these head dims), inactive rows exact zeros,
 * q_out (2e-2, as test_paged.c's q/k test), the pool (keys 2e-2, values exact, no element
 * written on one side only: the pools start as NaN). */
#include "gpu_util.h"

#include "core/rng.h"

#define MAX_SEQS 16
#define LAYERS 2
#define LAYER 1

typedef struct bcase {
    int n_seqs, len_k[MAX_SEQS]; /* len_k 0: inactive row */
    int n_heads, n_kv_heads, head_dim, block_size, cap_k, with_norm, fused;
} bcase;

static void run_b1(const bcase *bc, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    int n = bc->n_seqs, H = bc->n_heads, KV = bc->n_kv_heads, D = bc->head_dim, BS = bc->block_size;
    int n_blocks = 3, max_blocks = 1, max_k = 1, n_old = 0;
    for (int s = 0; s < n; s++) {
        int nb = (bc->len_k[s] + BS - 1) / BS;
        n_blocks += nb;
        if (nb + 1 > max_blocks) max_blocks = nb + 1;
        if (bc->len_k[s] > max_k) max_k = bc->len_k[s];
        if (bc->len_k[s] > 1) n_old += bc->len_k[s] - 1;
    }
    size_t qd = (size_t)H * D, kd = (size_t)KV * D, plane = (size_t)BS * kd;
    size_t block_elems = 2 * (size_t)LAYERS * plane, pool_elems = (size_t)n_blocks * block_elems;

    rl_rng rng;
    rl_rng_init(&rng, seed);
    int32_t *perm = gu_host(&g, n_blocks * 4), *tables = gu_host(&g, (size_t)n * max_blocks * 4);
    for (int b = 0; b < n_blocks; b++) perm[b] = b;
    for (int b = n_blocks - 1; b > 0; b--) {
        int j = (int)rl_rng_below(&rng, (uint32_t)b + 1), t = perm[b];
        perm[b] = perm[j], perm[j] = t;
    }
    /* the cached keys (positions 0 .. len_k - 2) and the step's slots (position len_k - 1) */
    int32_t *old_slots = gu_host(&g, (n_old + 1) * 4), *slots = gu_host(&g, n * 4), *positions = gu_host(&g, n * 4);
    int32_t *cu_q = gu_host(&g, (n + 1) * 4), *seqlens = gu_host(&g, n * 4);
    int next = 0, o = 0;
    for (int s = 0; s < n; s++) {
        int len = bc->len_k[s];
        for (int i = 0; i < max_blocks; i++) tables[s * max_blocks + i] = i < (len + BS - 1) / BS ? perm[next++] : -1;
        for (int j = 0; j + 1 < len; j++) old_slots[o++] = tables[s * max_blocks + j / BS] * BS + j % BS;
        slots[s] = len ? tables[s * max_blocks + (len - 1) / BS] * BS + (len - 1) % BS : -1;
        positions[s] = len ? len - 1 : 7;
        cu_q[s + 1] = s + 1;
        seqlens[s] = len;
    }

    float *pool = gu_host(&g, pool_elems * sizeof(float));
    tu_poison(pool, pool_elems);
    void *d_pool = gu_nan_bf16(&g, pool_elems);
    rl_paged_kv kv = {.k = pool + 2 * LAYER * plane, .v = pool + (2 * LAYER + 1) * plane, .block_stride = block_elems,
                      .block_size = BS, .block_tables = tables, .max_blocks = max_blocks};
    rl_paged_kv dkv = kv;
    dkv.k = (char *)d_pool + 2 * LAYER * plane * 2;
    dkv.v = (char *)d_pool + (2 * LAYER + 1) * plane * 2;
    dkv.block_tables = gu_up_bytes(&g, tables, (size_t)n * max_blocks * 4);
    if (n_old) {
        float *k = gu_rand(&g, n_old * kd, -1, 1, seed + 1), *v = gu_rand(&g, n_old * kd, -1, 1, seed + 2);
        GU_CPU_OK(&g, rl_cpu_kv_cache_write(&g.cpu, &kv, k, v, old_slots, n_old, KV, D));
        GU_OK(&g, rl_kv_cache_write(&g.gpu, &dkv, gu_up_bf16(&g, k, n_old * kd), gu_up_bf16(&g, v, n_old * kd),
                                    gu_up_bytes(&g, old_slots, n_old * 4), n_old, KV, D));
    }

    /* the step's q|k|v rows: one fused row per token, or q, k, v one after another */
    size_t row = qd + 2 * kd, q_stride = bc->fused ? row : qd, kv_stride = bc->fused ? row : kd;
    float *src = gu_rand(&g, (size_t)n * row, -2, 2, seed + 3);
    float *qs = src, *ks = bc->fused ? src + qd : src + (size_t)n * qd, *vs = bc->fused ? src + qd + kd : ks + (size_t)n * kd;
    float *qn = gu_rand(&g, D, 0.5f, 1.5f, seed + 4), *kn = gu_rand(&g, D, 0.5f, 1.5f, seed + 5);
    float *inv_freq = gu_host(&g, D / 2 * sizeof(float));
    for (int i = 0; i < D / 2; i++) inv_freq[i] = powf(1000000.0f, -2.0f * i / D);
    float scale = 1.0f / sqrtf((float)D);
    int cap = bc->cap_k ? bc->cap_k : max_k;

    float *out = gu_host(&g, (size_t)n * qd * 4), *q_out = gu_host(&g, (size_t)n * qd * 4);
    GU_CPU_OK(&g, rl_cpu_qk_norm_rope_attention_fwd(&g.cpu, out, q_out, &kv, qs, ks, vs, q_stride, kv_stride,
                                                    bc->with_norm ? qn : NULL, bc->with_norm ? kn : NULL, 1e-6f,
                                                    positions, inv_freq, slots, n, cu_q, seqlens, n, 1, cap, H, KV, D,
                                                    scale));
    char *d_src = gu_up_bf16(&g, src, (size_t)n * row);
    void *d_out = gu_nan_bf16(&g, (size_t)n * qd), *d_q = gu_nan_bf16(&g, (size_t)n * qd);
    GU_OK(&g, rl_qk_norm_rope_attention_fwd(
                  &g.gpu, d_out, d_q, &dkv, d_src, d_src + (ks - src) * 2, d_src + (vs - src) * 2, q_stride, kv_stride,
                  bc->with_norm ? gu_up_bf16(&g, qn, D) : NULL, bc->with_norm ? gu_up_bf16(&g, kn, D) : NULL, 1e-6f,
                  gu_up_bytes(&g, positions, n * 4), gu_up_f32(&g, inv_freq, D / 2), gu_up_bytes(&g, slots, n * 4), n,
                  gu_up_bytes(&g, cu_q, (n + 1) * 4), gu_up_bytes(&g, seqlens, n * 4), n, 1, cap, H, KV, D, scale));

    char what[128];
    snprintf(what, sizeof what, "b1 n%d H%d/%d D%d bs%d k<=%d norm%d fused%d", n, H, KV, D, BS, max_k, bc->with_norm,
             bc->fused);
    float *got = gu_get_bf16(&g, d_out, (size_t)n * qd);
    for (int s = 0; s < n; s++)
        if (!bc->len_k[s])
            for (size_t i = (size_t)s * qd; i < (size_t)(s + 1) * qd; i++)
                cr_assert(got[i] == 0.0f, "%s: inactive sequence %d: element %zu = %g, must be 0", what, s, i, got[i]);
    gu_check_norm(what, got, out, (size_t)n * qd, 1e-2, 2.5e-1);
    gu_check(what, gu_get_bf16(&g, d_q, (size_t)n * qd), q_out, (size_t)n * qd, 2e-2);

    float *got_pool = gu_get_bf16(&g, d_pool, pool_elems);
    size_t nan_mismatch = 0, v_diff = 0;
    double k_err = 0;
    for (size_t i = 0; i < pool_elems; i++) {
        if (isnan(pool[i]) || isnan(got_pool[i])) {
            nan_mismatch += isnan(pool[i]) != isnan(got_pool[i]);
            continue;
        }
        int is_v = (i % block_elems) / plane % 2 == 1;
        if (is_v) v_diff += got_pool[i] != pool[i];
        else k_err = fmax(k_err, fabs((double)got_pool[i] - pool[i]) / (fabs((double)pool[i]) + 0.1));
    }
    fprintf(stderr, "[err] %s: pool keys max err %.3g (tol 2e-2), %zu values differ, %zu written on one side\n", what,
            k_err, v_diff, nan_mismatch);
    cr_assert_eq(nan_mismatch, 0, "%s: %zu pool elements written on one side only", what, nan_mismatch);
    cr_assert_eq(v_diff, 0, "%s: %zu values differ", what, v_diff);
    cr_assert(k_err <= 2e-2, "%s: key error %.3g", what, k_err);
    gu_end(&g);
}

Test(gpu_paged_b1, qwen3_batch_one)
{
    /* workload d's shape (Qwen3-0.6B heads, 128 -> 256), a graph's capacity bound */
    bcase c = {.n_seqs = 1, .len_k = {300}, .n_heads = 16, .n_kv_heads = 8, .head_dim = 128, .block_size = 16,
               .cap_k = 4096, .with_norm = 1, .fused = 1};
    run_b1(&c, 200);
    c.len_k[0] = 1; /* only the new key: one block of the cluster works */
    run_b1(&c, 201);
    c.len_k[0] = 9; /* fewer keys than blocks */
    run_b1(&c, 202);
    c.len_k[0] = 3001; /* many chunks per block */
    c.cap_k = 8192;
    run_b1(&c, 203);
}

Test(gpu_paged_b1, several_sequences_inactive_rows)
{
    bcase c = {.n_seqs = 5, .len_k = {1, 17, 64, 0, 129}, .n_heads = 16, .n_kv_heads = 8, .head_dim = 128,
               .block_size = 7, .cap_k = 1000, .with_norm = 1, .fused = 1};
    run_b1(&c, 204);
    bcase d = {.n_seqs = 8, .len_k = {33, 0, 250, 2, 65, 64, 0, 500}, .n_heads = 8, .n_kv_heads = 8, .head_dim = 64,
               .block_size = 16, .with_norm = 1, .fused = 0};
    run_b1(&d, 205);
}

Test(gpu_paged_b1, groups_and_small_head_dims)
{
    bcase a = {.n_seqs = 3, .len_k = {5, 200, 0}, .n_heads = 12, .n_kv_heads = 4, .head_dim = 64, .block_size = 5,
               .with_norm = 1, .fused = 1}; /* group of 3 */
    run_b1(&a, 206);
    bcase b = {.n_seqs = 2, .len_k = {9, 40}, .n_heads = 4, .n_kv_heads = 2, .head_dim = 16, .block_size = 3,
               .with_norm = 0, .fused = 1}; /* the tiny fixtures' heads, no head norms */
    run_b1(&b, 207);
    bcase c = {.n_seqs = 2, .len_k = {100, 33}, .n_heads = 16, .n_kv_heads = 2, .head_dim = 32, .block_size = 16,
               .with_norm = 1, .fused = 0}; /* group of 8 */
    run_b1(&c, 208);
    bcase d = {.n_seqs = 1, .len_k = {77}, .n_heads = 6, .n_kv_heads = 2, .head_dim = 32, .block_size = 5,
               .cap_k = 512, .with_norm = 1, .fused = 1};
    run_b1(&d, 209);
}

Test(gpu_paged_b1, more_sequences_take_the_two_ops)
{
    bcase c = {.n_seqs = 9, .len_k = {3, 100, 0, 1, 64, 65, 200, 17, 8}, .n_heads = 16, .n_kv_heads = 8,
               .head_dim = 128, .block_size = 16, .cap_k = 2048, .with_norm = 1, .fused = 1};
    run_b1(&c, 210);
}
