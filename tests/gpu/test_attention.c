/* test_attention.c — CUDA attention forward and backward against the CPU op: packed varlen
 * batches with awkward lengths (1, 37, 200), GQA, causal (bottom-right) and not, queries that are
 * the last rows of longer key slabs (both directions), decode with seqused_k shorter than the
 * cache slab, head_dim 64, 128 and odd ones.
 * Tolerances: lse (fp32) 1e-3; out and dq/dk/dv (bf16) norm-relative 1e-2 (measured about
 * 2.3e-3) and elementwise 2.5e-1 (measured up to 0.11): head_dim 64/128 run on tensor cores
 * with P and dS rounded to bf16 as FlashAttention does, which moves single small elements
 * (the other head dims stay under 4e-3 elementwise). */
#include "gpu_util.h"

typedef struct case_ {
    int n_seqs;
    int len_q[4], len_k[4], used_k[4]; /* used_k[0] < 0: no seqused_k */
    int n_heads, n_kv_heads, head_dim, causal;
} case_;

static void prefix(const int *len, int n, int32_t *cu, int *max)
{
    cu[0] = 0;
    *max = 0;
    for (int s = 0; s < n; s++) {
        cu[s + 1] = cu[s] + len[s];
        if (len[s] > *max) *max = len[s];
    }
}

static void run(const case_ *c, int backward, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    int32_t cu_q[5], cu_k[5];
    int max_q, max_k;
    prefix(c->len_q, c->n_seqs, cu_q, &max_q);
    prefix(c->len_k, c->n_seqs, cu_k, &max_k);
    int use_used = c->used_k[0] >= 0;
    int H = c->n_heads, HK = c->n_kv_heads, D = c->head_dim;
    size_t tq = (size_t)cu_q[c->n_seqs], tk = (size_t)cu_k[c->n_seqs];
    size_t nq = tq * H * D, nk = tk * HK * D;
    float *q = gu_rand(&g, nq, -1, 1, seed), *k = gu_rand(&g, nk, -1, 1, seed + 1), *v = gu_rand(&g, nk, -1, 1, seed + 2);
    float scale = 1.0f / sqrtf((float)D) * 1.7f;
    void *d_q = gu_up_bf16(&g, q, nq), *d_k = gu_up_bf16(&g, k, nk), *d_v = gu_up_bf16(&g, v, nk);
    int32_t *d_cuq = gu_up_bytes(&g, cu_q, sizeof cu_q), *d_cuk = gu_up_bytes(&g, cu_k, sizeof cu_k);
    int32_t used[4];
    for (int s = 0; s < 4; s++) used[s] = c->used_k[s];
    int32_t *d_used = use_used ? gu_up_bytes(&g, used, sizeof used) : NULL;
    int max_used = max_k;
    void *d_out = gu_nan_bf16(&g, nq);
    float *d_lse = gu_nan_f32(&g, tq * H);
    GU_OK(&g, rl_attention_fwd(&g.gpu, d_out, d_lse, d_q, d_k, d_v, d_cuq, d_cuk, d_used, c->n_seqs, max_q, max_used,
                               H, HK, D, scale, c->causal));
    float *out = gu_host(&g, nq * 4), *lse = gu_host(&g, tq * H * 4);
    GU_CPU_OK(&g, rl_cpu_attention_fwd(&g.cpu, out, lse, q, k, v, cu_q, cu_k, use_used ? used : NULL, c->n_seqs,
                                       max_q, max_used, H, HK, D, scale, c->causal));
    char what[128];
    snprintf(what, sizeof what, "attention_fwd lse H%d/%d D%d causal%d (fp32)", H, HK, D, c->causal);
    gu_check(what, gu_get_f32(&g, d_lse, tq * H), lse, tq * H, 1e-3);
    snprintf(what, sizeof what, "attention_fwd out H%d/%d D%d causal%d used%d", H, HK, D, c->causal, use_used);
    gu_check_norm(what, gu_get_bf16(&g, d_out, nq), out, nq, 1e-2, 2.5e-1);
    if (!backward) {
        gu_end(&g);
        return;
    }
    gu_round_bf16(out, nq);
    float *dout = gu_rand(&g, nq, -1, 1, seed + 3);
    void *d_dq = gu_nan_bf16(&g, nq), *d_dk = gu_nan_bf16(&g, nk), *d_dv = gu_nan_bf16(&g, nk);
    GU_OK(&g, rl_attention_bwd(&g.gpu, d_dq, d_dk, d_dv, gu_up_bf16(&g, dout, nq), gu_up_bf16(&g, out, nq),
                               gu_up_f32(&g, lse, tq * H), d_q, d_k, d_v, d_cuq, d_cuk, c->n_seqs, max_q, max_k, H, HK,
                               D, scale, c->causal));
    float *dq = gu_host(&g, nq * 4), *dk = gu_host(&g, nk * 4), *dv = gu_host(&g, nk * 4);
    GU_CPU_OK(&g, rl_cpu_attention_bwd(&g.cpu, dq, dk, dv, dout, out, lse, q, k, v, cu_q, cu_k, c->n_seqs, max_q, max_k,
                                       H, HK, D, scale, c->causal));
    snprintf(what, sizeof what, "attention_bwd dq H%d/%d D%d causal%d", H, HK, D, c->causal);
    gu_check_norm(what, gu_get_bf16(&g, d_dq, nq), dq, nq, 1e-2, 2.5e-1);
    snprintf(what, sizeof what, "attention_bwd dk H%d/%d D%d causal%d", H, HK, D, c->causal);
    gu_check_norm(what, gu_get_bf16(&g, d_dk, nk), dk, nk, 1e-2, 2.5e-1);
    snprintf(what, sizeof what, "attention_bwd dv H%d/%d D%d causal%d", H, HK, D, c->causal);
    gu_check_norm(what, gu_get_bf16(&g, d_dv, nk), dv, nk, 1e-2, 2.5e-1);
    gu_end(&g);
}

Test(gpu_attention, causal_varlen_gqa_hd64)
{
    case_ c = {4, {1, 37, 128, 200}, {1, 37, 128, 200}, {-1}, 4, 2, 64, 1};
    run(&c, 1, 101);
}

Test(gpu_attention, causal_varlen_gqa_hd128)
{
    case_ c = {3, {70, 1, 129}, {70, 1, 129}, {-1}, 8, 2, 128, 1};
    run(&c, 1, 102);
}

Test(gpu_attention, noncausal_odd_hd80)
{
    case_ c = {2, {100, 33}, {100, 33}, {-1}, 3, 3, 80, 0};
    run(&c, 1, 103);
}

Test(gpu_attention, causal_hd256_mqa)
{
    case_ c = {2, {65, 31}, {65, 31}, {-1}, 4, 1, 256, 1};
    run(&c, 1, 104);
}

Test(gpu_attention, causal_q_shorter_than_k)
{
    /* Chunked prefill, or a sequence continuing a shared prefix (model.h): 20 new queries over
     * 90 keys, bottom-right causal, forward and backward. */
    case_ c = {3, {20, 3, 130}, {90, 40, 200}, {-1}, 4, 2, 128, 1};
    run(&c, 1, 105);
}

Test(gpu_attention, causal_q_shorter_than_k_hd64_and_odd)
{
    case_ c = {3, {70, 1, 9}, {140, 65, 9}, {-1}, 4, 2, 64, 1};
    run(&c, 1, 107);
    case_ odd = {2, {33, 5}, {100, 6}, {-1}, 2, 1, 80, 1};
    run(&odd, 1, 108);
}

Test(gpu_attention, decode_seqused_k)
{
    /* One query per sequence over a KV slab longer than what is filled. */
    case_ c = {3, {1, 1, 3}, {64, 50, 80}, {40, 50, 17}, 8, 2, 128, 1};
    run(&c, 0, 106);
}

Test(gpu_attention, bad_heads)
{
    gu g;
    gu_begin(&g);
    cr_assert_eq(rl_attention_fwd(&g.gpu, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 4, 6, 4, 64, 1.0f, 1), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_attention_fwd: n_heads 6 is not a multiple of n_kv_heads 4");
    gu_end(&g);
}

/* The CUDA kernels' own limit; the buffers are never read, the launcher refuses first. */
Test(gpu_attention, head_dim_above_256_is_refused)
{
    gu g;
    gu_begin(&g);
    void *d = gu_dev(&g, 256);
    cr_assert_eq(rl_attention_fwd(&g.gpu, d, d, d, d, d, d, d, NULL, 1, 4, 4, 2, 1, 320, 1.0f, 1), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_attention_fwd: head_dim 320 is more than 256, the most the CUDA attention takes");
    gu_end(&g);
}

Test(gpu_attention, noncausal_gqa_hd128_long)
{
    case_ c = {2, {150, 290}, {150, 290}, {-1}, 4, 1, 128, 0};
    run(&c, 1, 107);
}
