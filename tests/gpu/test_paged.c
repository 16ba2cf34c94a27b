/* test_paged.c — the CUDA paged-KV ops against the CPU ops on fresh random inputs:
 * rl_kv_cache_write (every pool element equal to the CPU's, padding slots written nowhere),
 * rl_paged_attention_fwd at awkward shapes (shuffled block tables, block sizes 3, 5, 7 and 16,
 * lengths that are not multiples of them, GQA groups 1 to 4, head_dim 16 to 128, decode rows,
 * chunked prefill against cached blocks, inactive rows, one long sequence split across many
 * blocks, max_seqlen_k far above the longest as a captured step passes it, shared-prefix runs
 * of decode rows (also tables shared without runs, rows ending inside the shared blocks),
 * enough sequences to fill the GPU: 2-warp blocks, only long rows split),
 * rl_qk_norm_rope_cache_fwd (from one fused q|k|v row and from separate rows, with and without
 * the head norms, padding slots; q and the written keys bf16, tolerance 2e-2 against the CPU's
 * fp32; values exact), rl_gather_rows and rl_decode_advance (exact).
 * Tolerances for the attention output (bf16): at head_dim 64 and 128 the kernels run on
 * tensor cores with P rounded to bf16 as FlashAttention does: norm-relative 1e-2 and
 * elementwise 2.5e-1, as test_attention.c; at other head dims (fp32 on CUDA cores)
 * norm-relative 5e-3 and elementwise 3e-2. Inactive rows must be exact zeros. */
#include "gpu_util.h"

#include "core/rng.h"

#define MAX_SEQS 64
#define LAYERS 2
#define LAYER 1

typedef struct pcase {
    int n_seqs;
    int len_q[MAX_SEQS], len_k[MAX_SEQS]; /* len_k 0: inactive row */
    int n_heads, n_kv_heads, head_dim, block_size;
    int cap_k; /* max_seqlen_k passed: 0 = the longest */
    /* shared-prefix runs (rl_paged_kv share_*): runs of share_run adjacent sequences whose
     * first share_blocks blocks are the lead's (their keys written once, by the lead); 0: none */
    int share_run, share_blocks;
    int runs_unsaid; /* the runs' tables, but no runs passed to the ops (rows may end inside them) */
} pcase;

static void run_case(const pcase *pc, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    int n = pc->n_seqs, H = pc->n_heads, KV = pc->n_kv_heads, D = pc->head_dim, BS = pc->block_size;
    int total_q = 0, total_k = 0, n_blocks = 0, max_blocks = 1, max_q = 1, max_k = 1;
    for (int s = 0; s < n; s++) {
        total_q += pc->len_q[s];
        total_k += pc->len_k[s];
        int nb = (pc->len_k[s] + BS - 1) / BS;
        n_blocks += nb;
        if (nb + 2 > max_blocks) max_blocks = nb + 2; /* entries past the used ones stay -1 */
        if (pc->len_q[s] > max_q) max_q = pc->len_q[s];
        if (pc->len_k[s] > max_k) max_k = pc->len_k[s];
    }
    n_blocks += 5;
    size_t q_row = (size_t)H * D, kv_row = (size_t)KV * D, plane = (size_t)BS * kv_row;
    size_t block_elems = 2 * (size_t)LAYERS * plane, pool_elems = (size_t)n_blocks * block_elems;
    /* keys and values of every cached token, plus 3 padding tokens with negative slots */
    int n_write = total_k + 3;
    float *q = gu_rand(&g, (size_t)total_q * q_row, -1, 1, seed), *k = gu_rand(&g, n_write * kv_row, -1, 1, seed + 1);
    float *v = gu_rand(&g, n_write * kv_row, -1, 1, seed + 2);

    rl_rng rng;
    rl_rng_init(&rng, seed + 3);
    int32_t *perm = gu_host(&g, n_blocks * sizeof(int32_t)), *tables = gu_host(&g, (size_t)n * max_blocks * 4);
    for (int b = 0; b < n_blocks; b++) perm[b] = b;
    for (int b = n_blocks - 1; b > 0; b--) {
        int j = (int)rl_rng_below(&rng, (uint32_t)b + 1), t = perm[b];
        perm[b] = perm[j], perm[j] = t;
    }
    int32_t *slots = gu_host(&g, n_write * sizeof(int32_t)), *cu_q = gu_host(&g, (n + 1) * 4), *seqlens = gu_host(&g, n * 4);
    int32_t *share_lead = gu_host(&g, n * 4), *share_len = gu_host(&g, n * 4), *share_count = gu_host(&g, n * 4);
    int next = 0, t = 0;
    for (int s = 0; s < n; s++) {
        int lead = pc->share_run ? s - s % pc->share_run : s, run = pc->share_run ? n - lead : 0;
        if (run > pc->share_run) run = pc->share_run;
        int shared = run >= 2 ? pc->share_blocks : 0;
        share_lead[s] = run >= 2 ? lead : s;
        share_len[s] = shared * BS;
        share_count[s] = run >= 2 && s == lead ? run : 0;
        for (int i = 0; i < max_blocks; i++) tables[s * max_blocks + i] = -1;
        for (int i = 0; i < (pc->len_k[s] + BS - 1) / BS; i++)
            tables[s * max_blocks + i] = s != lead && i < shared ? tables[lead * max_blocks + i] : perm[next++];
        for (int j = 0; j < pc->len_k[s]; j++, t++)
            slots[t] = s != lead && j < shared * BS ? -1 : tables[s * max_blocks + j / BS] * BS + j % BS;
        cu_q[s + 1] = cu_q[s] + pc->len_q[s];
        seqlens[s] = pc->len_k[s];
    }
    slots[t++] = -1;
    slots[t++] = -(BS + 1);
    slots[t++] = -1;

    /* the pools start poisoned: an element written on one side only shows as NaN vs number */
    float *pool = gu_host(&g, pool_elems * sizeof(float));
    tu_poison(pool, pool_elems);
    void *d_pool = gu_nan_bf16(&g, pool_elems);
    rl_paged_kv kv = {.k = pool + 2 * LAYER * plane, .v = pool + (2 * LAYER + 1) * plane, .block_stride = block_elems,
                      .block_size = BS, .block_tables = tables, .max_blocks = max_blocks};
    rl_paged_kv dkv = kv;
    dkv.k = (char *)d_pool + 2 * LAYER * plane * 2;
    dkv.v = (char *)d_pool + (2 * LAYER + 1) * plane * 2;
    dkv.block_tables = gu_up_bytes(&g, tables, (size_t)n * max_blocks * 4);
    if (pc->share_run && !pc->runs_unsaid) {
        kv.share_lead = share_lead, kv.share_len = share_len, kv.share_count = share_count;
        kv.max_share = pc->share_run;
        dkv.share_lead = gu_up_bytes(&g, share_lead, n * 4);
        dkv.share_len = gu_up_bytes(&g, share_len, n * 4);
        dkv.share_count = gu_up_bytes(&g, share_count, n * 4);
        dkv.max_share = pc->share_run;
    }
    GU_CPU_OK(&g, rl_cpu_kv_cache_write(&g.cpu, &kv, k, v, slots, n_write, KV, D));
    GU_OK(&g, rl_kv_cache_write(&g.gpu, &dkv, gu_up_bf16(&g, k, n_write * kv_row), gu_up_bf16(&g, v, n_write * kv_row),
                                gu_up_bytes(&g, slots, n_write * 4), n_write, KV, D));
    float *got_pool = gu_get_bf16(&g, d_pool, pool_elems);
    size_t pool_diff = 0;
    for (size_t i = 0; i < pool_elems; i++) {
        int a_nan = isnan(pool[i]), b_nan = isnan(got_pool[i]);
        pool_diff += a_nan != b_nan || (!a_nan && pool[i] != got_pool[i]);
    }
    fprintf(stderr, "[err] kv_cache_write H%d/%d D%d bs%d: %zu of %zu pool elements differ\n", H, KV, D, BS, pool_diff,
            pool_elems);
    cr_assert_eq(pool_diff, 0, "kv_cache_write: %zu pool elements differ from the CPU's", pool_diff);

    int cap = pc->cap_k ? pc->cap_k : max_k;
    float scale = 1.0f / sqrtf((float)D);
    float *out = gu_host(&g, (size_t)total_q * q_row * sizeof(float));
    GU_CPU_OK(&g, rl_cpu_paged_attention_fwd(&g.cpu, out, q, &kv, cu_q, seqlens, n, max_q, cap, H, KV, D, scale));
    if (pc->share_run && !pc->runs_unsaid) { /* the CPU op reads the same blocks through the lead's table: the same bits */
        rl_paged_kv plain = kv;
        plain.share_lead = plain.share_len = plain.share_count = NULL;
        float *out2 = gu_host(&g, (size_t)total_q * q_row * sizeof(float));
        GU_CPU_OK(&g, rl_cpu_paged_attention_fwd(&g.cpu, out2, q, &plain, cu_q, seqlens, n, max_q, cap, H, KV, D, scale));
        cr_assert(!memcmp(out, out2, (size_t)total_q * q_row * sizeof(float)), "CPU: runs changed the result");
    }
    void *d_out = gu_nan_bf16(&g, (size_t)total_q * q_row);
    GU_OK(&g, rl_paged_attention_fwd(&g.gpu, d_out, gu_up_bf16(&g, q, (size_t)total_q * q_row), &dkv,
                                     gu_up_bytes(&g, cu_q, (n + 1) * 4), gu_up_bytes(&g, seqlens, n * 4), n, max_q, cap,
                                     H, KV, D, scale));
    float *got = gu_get_bf16(&g, d_out, (size_t)total_q * q_row);
    for (int s = 0; s < n; s++)
        if (!pc->len_k[s])
            for (size_t i = (size_t)cu_q[s] * q_row; i < (size_t)cu_q[s + 1] * q_row; i++)
                cr_assert(got[i] == 0.0f, "inactive sequence %d: element %zu = %g, must be 0", s, i, got[i]);
    char what[128];
    snprintf(what, sizeof what, "paged_attention n%d H%d/%d D%d bs%d q<=%d k<=%d runs%d/%d", n, H, KV, D, BS, max_q,
             max_k, pc->share_run, pc->share_blocks);
    if (D == 64 || D == 128)
        gu_check_norm(what, got, out, (size_t)total_q * q_row, 1e-2, 2.5e-1);
    else
        gu_check_norm(what, got, out, (size_t)total_q * q_row, 5e-3, 3e-2);
    gu_end(&g);
}

/* n decode rows (one query each) with key counts uniform in [1, max_len], every `inactive`-th
 * row inactive (0: none). */
static pcase decode_case(int n, int max_len, int inactive, uint64_t seed)
{
    pcase pc = {.n_seqs = n};
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (int s = 0; s < n; s++) {
        pc.len_q[s] = 1;
        pc.len_k[s] = inactive && s % inactive == inactive - 1 ? 0 : 1 + (int)rl_rng_below(&rng, (uint32_t)max_len);
    }
    return pc;
}

Test(gpu_paged, decode_qwen3_shapes_capacity_bound)
{
    pcase pc = decode_case(40, 700, 8, 1);
    pc.n_heads = 16, pc.n_kv_heads = 8, pc.head_dim = 128, pc.block_size = 16;
    pc.cap_k = 4096;
    run_case(&pc, 100);
    pc.block_size = 7;
    run_case(&pc, 101);
}

Test(gpu_paged, decode_batch_one_long_context_splits)
{
    pcase pc = {.n_seqs = 1, .len_q = {1}, .len_k = {3001}, .n_heads = 16, .n_kv_heads = 8, .head_dim = 128,
                .block_size = 16, .cap_k = 8192};
    run_case(&pc, 102);
    pc.len_k[0] = 65; /* one split of two tiles, second one partial */
    run_case(&pc, 103);
}

Test(gpu_paged, decode_full_batch_no_split)
{
    pcase pc = decode_case(64, 300, 0, 2);
    pc.n_heads = 16, pc.n_kv_heads = 8, pc.head_dim = 128, pc.block_size = 32;
    run_case(&pc, 104);
}

Test(gpu_paged, decode_many_sequences_two_warp_blocks_hd64)
{
    /* 64 x 8 groups fill the GPU (pa_many_groups): 2-warp blocks (steps of 32 keys), splits of
     * at least 8 tiles, so only the rows longer than 512 keys split (cap far above the longest);
     * head_dim 64, awkward block size, inactive rows; then the same without a cap (no splits) */
    pcase pc = decode_case(64, 1500, 7, 6);
    pc.n_heads = 16, pc.n_kv_heads = 8, pc.head_dim = 64, pc.block_size = 5, pc.cap_k = 4096;
    run_case(&pc, 116);
    pcase b = decode_case(64, 200, 0, 7);
    b.n_heads = 16, b.n_kv_heads = 8, b.head_dim = 64, b.block_size = 16;
    run_case(&b, 117);
}

Test(gpu_paged, decode_group_of_three_hd64)
{
    pcase pc = {.n_seqs = 4, .len_q = {1, 1, 1, 1}, .len_k = {1, 64, 129, 0}, .n_heads = 12, .n_kv_heads = 4,
                .head_dim = 64, .block_size = 5, .cap_k = 1000};
    run_case(&pc, 105);
}

Test(gpu_paged, chunked_prefill_with_decode_rows_hd128)
{
    /* 37 and 200 queries run on tensor cores, 1 and 5 on the split kernel in the same call */
    pcase pc = {.n_seqs = 5, .len_q = {37, 1, 200, 5, 2}, .len_k = {100, 50, 200, 300, 0}, .n_heads = 16,
                .n_kv_heads = 8, .head_dim = 128, .block_size = 16};
    run_case(&pc, 106);
}

Test(gpu_paged, short_chunks_split_on_tensor_cores)
{
    /* up to 16 packed rows per sequence: the tensor-core split kernel, causal inside the chunk,
     * several splits per sequence (cap far above the longest) */
    pcase a = {.n_seqs = 4, .len_q = {8, 3, 1, 8}, .len_k = {300, 64, 1, 8}, .n_heads = 16, .n_kv_heads = 8,
               .head_dim = 128, .block_size = 16, .cap_k = 4096};
    run_case(&a, 111);
    pcase b = {.n_seqs = 3, .len_q = {4, 2, 1}, .len_k = {517, 2, 0}, .n_heads = 8, .n_kv_heads = 2, .head_dim = 64,
               .block_size = 5, .cap_k = 2048};
    run_case(&b, 112);
}

Test(gpu_paged, prefill_group_of_four_hd64)
{
    pcase pc = {.n_seqs = 2, .len_q = {150, 3}, .len_k = {150, 3}, .n_heads = 8, .n_kv_heads = 2, .head_dim = 64,
                .block_size = 7};
    run_case(&pc, 107);
}

Test(gpu_paged, small_head_dims_prefill_and_decode)
{
    /* head_dim 16 (the tiny fixtures), many row tiles of the split kernel */
    pcase a = {.n_seqs = 4, .len_q = {1, 20, 3, 1}, .len_k = {9, 20, 40, 0}, .n_heads = 4, .n_kv_heads = 2,
               .head_dim = 16, .block_size = 3};
    run_case(&a, 108);
    /* head_dim 32, group of 3 */
    pcase b = {.n_seqs = 3, .len_q = {13, 1, 2}, .len_k = {13, 77, 31}, .n_heads = 6, .n_kv_heads = 2,
               .head_dim = 32, .block_size = 5};
    run_case(&b, 109);
    /* head_dim 40 (5 chunks of 8: uneven thread split), no GQA */
    pcase c = {.n_seqs = 2, .len_q = {1, 6}, .len_k = {130, 6}, .n_heads = 4, .n_kv_heads = 4, .head_dim = 40,
               .block_size = 16, .cap_k = 512};
    run_case(&c, 110);
}

/* Runs of decode rows sharing their first blocks (the samples of one prompt; rl_paged_kv
 * share_*): the CPU op reads the shared keys through the lead's table (the same bits as
 * without runs), the CUDA kernels through each row's own (they ignore runs for now); both must
 * agree. */
static void share_case(pcase *pc, int run, int blocks, int min_private)
{
    pc->share_run = run;
    pc->share_blocks = blocks;
    for (int s = 0; s < pc->n_seqs; s++)
        if (pc->len_k[s] < blocks * pc->block_size + min_private) pc->len_k[s] += blocks * pc->block_size + min_private;
}

Test(gpu_paged, decode_shared_prefix_runs)
{
    /* GRPO's shape: 8 x 8 rows of Qwen3-0.6B, 130-token prompts (8 shared blocks), a captured
     * step's capacity bound */
    pcase a = decode_case(64, 260, 0, 3);
    a.n_heads = 16, a.n_kv_heads = 8, a.head_dim = 128, a.block_size = 16, a.cap_k = 4096;
    share_case(&a, 8, 8, 1);
    run_case(&a, 113);
    /* head_dim 64, 4 query heads per kv head (runs of 4 fill 16 rows), awkward block size, a
     * last run of one (no run), private parts of a single key */
    pcase b = decode_case(13, 40, 0, 4);
    b.n_heads = 16, b.n_kv_heads = 4, b.head_dim = 64, b.block_size = 7;
    share_case(&b, 4, 5, 1);
    for (int s = 0; s < 13; s += 3) b.len_k[s] = 5 * 7 + 1;
    run_case(&b, 114);
    /* a long shared prefix split across blocks of the grid, runs of 16 (2 row tiles of 16) */
    pcase c = decode_case(32, 300, 0, 5);
    c.n_heads = 16, c.n_kv_heads = 8, c.head_dim = 128, c.block_size = 16, c.cap_k = 8192;
    share_case(&c, 16, 100, 1);
    run_case(&c, 115);
}

Test(gpu_paged, decode_steps_sharing_blocks_groups_and_long_rows)
{
    /* 45 decode rows of 8 kv heads (2-warp decode8 blocks), runs of 8 sharing 8 blocks */
    pcase a = decode_case(45, 300, 0, 20);
    a.n_heads = 16, a.n_kv_heads = 8, a.head_dim = 128, a.block_size = 16, a.cap_k = 4096;
    share_case(&a, 8, 8, 1);
    run_case(&a, 120);
    /* the same tables without runs, rows ending inside the shared blocks (1, 20, 128 keys of
     * 129+), inactive rows */
    a.runs_unsaid = 1;
    a.len_k[3] = 20, a.len_k[10] = 128, a.len_k[17] = 1, a.len_k[44] = 129;
    a.len_k[13] = a.len_k[30] = 0;
    run_case(&a, 121);
    /* group of 4 (Qwen3-4B/8B: 32 / 8 heads), head_dim 64, KV blocks of 32 */
    pcase b = decode_case(40, 200, 0, 21);
    b.n_heads = 32, b.n_kv_heads = 8, b.head_dim = 64, b.block_size = 32;
    share_case(&b, 4, 3, 1);
    run_case(&b, 122);
    /* no GQA, no sharing, inactive rows, one row of 9,000 keys (split) */
    pcase c = decode_case(40, 300, 9, 22);
    c.n_heads = 8, c.n_kv_heads = 8, c.head_dim = 128, c.block_size = 16, c.cap_k = 16384;
    c.len_k[5] = 9000;
    run_case(&c, 123);
    /* group of 8 (16 / 2 heads): a row tile of 8 rows, few groups (4-warp blocks, splits) */
    pcase d = decode_case(12, 700, 5, 24);
    d.n_heads = 16, d.n_kv_heads = 2, d.head_dim = 128, d.block_size = 16, d.cap_k = 2048;
    run_case(&d, 124);
}

Test(gpu_paged, few_queries_per_sequence_in_decode8)
{
    /* up to 4 queries of group 2 (8 packed rows: decode8, causal inside the chunk), a sequence
     * without queries, an inactive one, splits of a long row */
    pcase a = {.n_seqs = 7, .len_q = {4, 1, 2, 3, 4, 0, 1}, .len_k = {300, 64, 17, 5, 4, 9, 0}, .n_heads = 16,
               .n_kv_heads = 8, .head_dim = 128, .block_size = 16, .cap_k = 4096};
    run_case(&a, 125);
    a.len_k[0] = 2500;
    run_case(&a, 126);
    /* group 4 at head_dim 64, 2 queries (8 rows), KV blocks of 32 */
    pcase b = {.n_seqs = 3, .len_q = {2, 1, 2}, .len_k = {70, 33, 2}, .n_heads = 16, .n_kv_heads = 4, .head_dim = 64,
               .block_size = 32, .cap_k = 1024};
    run_case(&b, 127);
}

Test(gpu_paged, bad_shapes_are_refused)
{
    gu g;
    gu_begin(&g);
    int32_t *d = gu_dev(&g, 64);
    void *buf = gu_dev(&g, 4096);
    rl_paged_kv kv = {.k = buf, .v = buf, .block_stride = 64, .block_size = 4, .block_tables = d, .max_blocks = 1};
    cr_assert_eq(rl_paged_attention_fwd(&g.gpu, buf, buf, &kv, d, d, 1, 1, 4, 2, 1, 12, 1.0f), -1);
    cr_assert(strstr(g.gpu.err.msg, "head_dim 12"), "%s", g.gpu.err.msg);
    cr_assert_eq(rl_paged_attention_fwd(&g.gpu, buf, buf, &kv, d, d, 1, 1, 4, 3, 2, 16, 1.0f), -1);
    cr_assert(strstr(g.gpu.err.msg, "n_heads 3 is not a multiple of n_kv_heads 2"), "%s", g.gpu.err.msg);
    gu_end(&g);
}

/* The fused q/k step against the CPU op (itself the unfused ops in a row). */
static void run_qk(int T, int H, int KV, int D, int fused, int with_norm, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    enum { BS = 5 };
    size_t qd = (size_t)H * D, kd = (size_t)KV * D, row = fused ? qd + 2 * kd : 0;
    size_t q_stride = fused ? row : qd, kv_stride = fused ? row : kd;
    size_t n_src = fused ? (size_t)T * row : (size_t)T * (qd + 2 * kd);
    float *src = gu_rand(&g, n_src, -2, 2, seed);
    float *qs = src, *ks = fused ? src + qd : src + (size_t)T * qd, *vs = fused ? src + qd + kd : ks + (size_t)T * kd;
    float *qn = gu_rand(&g, D, 0.5f, 1.5f, seed + 1), *kn = gu_rand(&g, D, 0.5f, 1.5f, seed + 2);
    float *inv_freq = gu_host(&g, D / 2 * sizeof(float));
    for (int i = 0; i < D / 2; i++) inv_freq[i] = powf(10000.0f, -2.0f * i / D);
    int n_blocks = (T + BS - 1) / BS + 2;
    int32_t *positions = gu_host(&g, T * 4), *slots = gu_host(&g, T * 4);
    for (int t = 0; t < T; t++) {
        positions[t] = 3 * t + 1000;
        slots[t] = t % 7 == 3 ? -1 : (n_blocks - 1 - t / BS) * BS + t % BS;
    }
    size_t plane = (size_t)BS * kd, pool_elems = (size_t)n_blocks * 2 * plane;
    float *pool = gu_host(&g, pool_elems * 4), *q_out = gu_host(&g, (size_t)T * qd * 4);
    tu_poison(pool, pool_elems);
    rl_paged_kv kv = {.k = pool, .v = pool + plane, .block_stride = 2 * plane, .block_size = BS};
    GU_CPU_OK(&g, rl_cpu_qk_norm_rope_cache_fwd(&g.cpu, q_out, &kv, qs, ks, vs, q_stride, kv_stride,
                                                with_norm ? qn : NULL, with_norm ? kn : NULL, 1e-6f, positions,
                                                inv_freq, slots, T, H, KV, D));
    void *d_src = gu_up_bf16(&g, src, n_src), *d_pool = gu_nan_bf16(&g, pool_elems), *d_q = gu_nan_bf16(&g, (size_t)T * qd);
    rl_paged_kv dkv = {.k = d_pool, .v = (char *)d_pool + plane * 2, .block_stride = 2 * plane, .block_size = BS};
    char *base = d_src;
    GU_OK(&g, rl_qk_norm_rope_cache_fwd(&g.gpu, d_q, &dkv, base, base + (ks - src) * 2, base + (vs - src) * 2, q_stride,
                                        kv_stride, with_norm ? gu_up_bf16(&g, qn, D) : NULL,
                                        with_norm ? gu_up_bf16(&g, kn, D) : NULL, 1e-6f, gu_up_bytes(&g, positions, T * 4),
                                        gu_up_f32(&g, inv_freq, D / 2), gu_up_bytes(&g, slots, T * 4), T, H, KV, D));
    char what[128];
    snprintf(what, sizeof what, "qk_norm_rope_cache q T%d H%d/%d D%d fused%d norm%d", T, H, KV, D, fused, with_norm);
    gu_check(what, gu_get_bf16(&g, d_q, (size_t)T * qd), q_out, (size_t)T * qd, 2e-2);
    /* the pool: keys close, values exact, untouched slots still NaN on both sides */
    float *got = gu_get_bf16(&g, d_pool, pool_elems);
    size_t nan_mismatch = 0, v_diff = 0;
    double k_err = 0;
    for (int b = 0; b < n_blocks; b++)
        for (size_t e = 0; e < 2 * plane; e++) {
            size_t i = (size_t)b * 2 * plane + e;
            if (isnan(pool[i]) || isnan(got[i])) {
                nan_mismatch += isnan(pool[i]) != isnan(got[i]);
                continue;
            }
            if (e >= plane) v_diff += got[i] != pool[i];
            else k_err = fmax(k_err, fabs((double)got[i] - pool[i]) / (fabs((double)pool[i]) + 0.1));
        }
    fprintf(stderr, "[err] %s: pool keys max err %.3g (tol 2e-2), %zu values differ, %zu written elsewhere\n", what,
            k_err, v_diff, nan_mismatch);
    cr_assert_eq(nan_mismatch, 0, "%s: %zu pool elements written on one side only", what, nan_mismatch);
    cr_assert_eq(v_diff, 0, "%s: %zu values differ", what, v_diff);
    cr_assert(k_err <= 2e-2, "%s: key error %.3g", what, k_err);
    gu_end(&g);
}

Test(gpu_decode_ops, qk_norm_rope_cache)
{
    run_qk(23, 16, 8, 128, 1, 1, 120); /* Qwen3-0.6B's heads, one fused product */
    run_qk(9, 4, 2, 16, 1, 1, 121);
    run_qk(11, 6, 2, 32, 0, 1, 122);   /* separate q, k, v rows */
    run_qk(7, 4, 1, 16, 0, 0, 123);    /* no head norms (Llama, Qwen2) */
}

Test(gpu_decode_ops, gather_rows_exact)
{
    gu g;
    gu_begin(&g);
    enum { IN_ROWS = 50, PICK = 37 };
    int dims[2] = {128, 13}; /* 16-byte pieces, and elements */
    rl_rng rng;
    rl_rng_init(&rng, 7);
    int32_t rows[PICK];
    for (int i = 0; i < PICK; i++) rows[i] = (int32_t)rl_rng_below(&rng, IN_ROWS);
    rows[5] = rows[6];
    for (int d = 0; d < 2; d++) {
        int dim = dims[d];
        float *in = gu_rand(&g, (size_t)IN_ROWS * dim, -4, 4, 8 + d), *ref = gu_host(&g, (size_t)PICK * dim * 4);
        GU_CPU_OK(&g, rl_cpu_gather_rows(&g.cpu, ref, in, rows, PICK, dim));
        void *d_out = gu_nan_bf16(&g, (size_t)PICK * dim);
        GU_OK(&g, rl_gather_rows(&g.gpu, d_out, gu_up_bf16(&g, in, (size_t)IN_ROWS * dim), gu_up_bytes(&g, rows, sizeof rows),
                                 PICK, dim));
        float *got = gu_get_bf16(&g, d_out, (size_t)PICK * dim);
        cr_assert(!memcmp(got, ref, (size_t)PICK * dim * 4), "gather_rows dim %d differs from the CPU", dim);
        fprintf(stderr, "[err] gather_rows dim %d: exact\n", dim);
    }
    gu_end(&g);
}

Test(gpu_decode_ops, decode_advance_exact)
{
    gu g;
    gu_begin(&g);
    enum { N = 37, MB = 9, BS = 6 };
    rl_rng rng;
    rl_rng_init(&rng, 9);
    int32_t tokens[N], pos[N], seqlens[N], slots[N], sampled[N], tables[N * MB];
    rl_sample_row rows[N];
    for (int i = 0; i < N; i++) {
        pos[i] = (int32_t)rl_rng_below(&rng, MB * BS - 1);
        seqlens[i] = i % 5 == 4 ? 0 : pos[i] + 1;
        tokens[i] = (int32_t)rl_rng_below(&rng, 1000);
        sampled[i] = (int32_t)rl_rng_below(&rng, 1000);
        slots[i] = -1;
        rows[i] = (rl_sample_row){.temperature = 1, .top_p = 1, .seed = 5, .row = (uint32_t)i,
                                  .step = (uint32_t)rl_rng_below(&rng, 100)};
    }
    for (int i = 0; i < N * MB; i++) tables[i] = (int32_t)rl_rng_below(&rng, 500);
    int32_t *d_tok = gu_up_bytes(&g, tokens, sizeof tokens), *d_pos = gu_up_bytes(&g, pos, sizeof pos);
    int32_t *d_len = gu_up_bytes(&g, seqlens, sizeof seqlens), *d_slots = gu_up_bytes(&g, slots, sizeof slots);
    rl_sample_row *d_rows = gu_up_bytes(&g, rows, sizeof rows);
    GU_OK(&g, rl_decode_advance(&g.gpu, d_tok, d_pos, d_len, d_slots, d_rows, gu_up_bytes(&g, sampled, sizeof sampled),
                                gu_up_bytes(&g, tables, sizeof tables), MB, BS, N));
    GU_CPU_OK(&g, rl_cpu_decode_advance(&g.cpu, tokens, pos, seqlens, slots, rows, sampled, tables, MB, BS, N));
    int32_t got[N];
    rl_sample_row got_rows[N];
    int32_t *want[4] = {tokens, pos, seqlens, slots}, *dev[4] = {d_tok, d_pos, d_len, d_slots};
    const char *names[4] = {"tokens", "positions", "seqlens_k", "slots"};
    for (int a = 0; a < 4; a++) {
        cr_assert_eq(rl_memcpy(&g.gpu, got, dev[a], sizeof got, RL_D2H), 0);
        cr_assert(!memcmp(got, want[a], sizeof got), "decode_advance: %s differ from the CPU", names[a]);
    }
    cr_assert_eq(rl_memcpy(&g.gpu, got_rows, d_rows, sizeof got_rows, RL_D2H), 0);
    cr_assert(!memcmp(got_rows, rows, sizeof rows), "decode_advance: sample rows differ from the CPU");
    fprintf(stderr, "[err] decode_advance %d rows: exact\n", N);
    gu_end(&g);
}
