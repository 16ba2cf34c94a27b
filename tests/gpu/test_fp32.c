/* test_fp32.c — the CUDA ops in the fp32 mode (backend/ctx.h: --precision fp32, what auto picks
 * for small models) against the CPU ops on fresh random fp32 inputs (not rounded to bf16),
 * NaN-poisoned outputs, awkward shapes, and the shapes where the bf16 mode takes a kernel of its
 * own (RMSNorm's warp-per-row path, SwiGLU's 8-wide path, the small-m GEMV, tensor-core
 * attention at head_dim 64 and 128, the tensor-core paged kernels) so that the fp32 mode is seen
 * to take its templated kernels there too.
 *
 * Tolerances are fp32's (gpu_util.h's error: relative, floored at a tenth of the rms):
 * elementwise results 1e-5; results of sums (norms, products, attention, log-softmax, weight
 * gradients summed over rows or accumulated with atomics in another order) 2e-4. A kernel that
 * still rounded anything to bf16 would show errors near 4e-3. */
#include "gpu_util.h"

#define TOL_ELEM 1e-5
#define TOL_SUM 2e-4

static void rmsnorm_case(int n_rows, int dim, int acc, uint64_t seed)
{
    gu g;
    gu_begin_fp32(&g);
    size_t n = (size_t)n_rows * dim;
    float *x = gu_rand_f32(&g, n, -2, 2, seed), *w = gu_rand_f32(&g, dim, 0.5f, 1.5f, seed + 1);
    void *d_x = gu_up_act(&g, x, n), *d_w = gu_up_act(&g, w, dim), *d_out = gu_nan_act(&g, n);
    float *d_rstd = gu_nan_f32(&g, n_rows);
    float *out = gu_host(&g, n * sizeof(float)), *rstd = gu_host(&g, n_rows * sizeof(float));
    GU_OK(&g, rl_rmsnorm_fwd(&g.gpu, d_out, d_rstd, d_x, d_w, n_rows, dim, 1e-6f));
    GU_CPU_OK(&g, rl_cpu_rmsnorm_fwd(&g.cpu, out, rstd, x, w, n_rows, dim, 1e-6f));
    gu_check("fp32 rmsnorm_fwd out", gu_get_bf16(&g, d_out, n), out, n, TOL_SUM);
    gu_check("fp32 rmsnorm_fwd rstd", gu_get_f32(&g, d_rstd, n_rows), rstd, n_rows, TOL_SUM);
    float *dout = gu_rand_f32(&g, n, -1, 1, seed + 2), *dx = gu_rand_f32(&g, n, -1, 1, seed + 3);
    float *dw = gu_rand_f32(&g, dim, -1, 1, seed + 4);
    void *d_dx = acc ? gu_up_act(&g, dx, n) : gu_nan_act(&g, n);
    float *d_dw = gu_up_f32(&g, dw, dim);
    GU_OK(&g, rl_rmsnorm_bwd(&g.gpu, d_dx, d_dw, gu_up_act(&g, dout, n), d_x, d_w, gu_up_f32(&g, rstd, n_rows), n_rows,
                             dim, acc));
    GU_CPU_OK(&g, rl_cpu_rmsnorm_bwd(&g.cpu, dx, dw, dout, x, w, rstd, n_rows, dim, acc));
    gu_check("fp32 rmsnorm_bwd dx", gu_get_bf16(&g, d_dx, n), dx, n, TOL_SUM);
    gu_check("fp32 rmsnorm_bwd dweight", gu_get_f32(&g, d_dw, dim), dw, dim, TOL_SUM);
    gu_end(&g);
}

/* 128: the bf16 warp-per-row path's shape; 1000: the general one's. */
Test(gpu_fp32, rmsnorm)
{
    rmsnorm_case(301, 128, 0, 1);
    rmsnorm_case(37, 1000, 1, 2);
}

static void swiglu_case(int n_rows, int dim, int stride, uint64_t seed)
{
    gu g;
    gu_begin_fp32(&g);
    size_t n_in = (size_t)n_rows * stride, n = (size_t)n_rows * dim;
    float *gate = gu_rand_f32(&g, n_in, -4, 4, seed), *up = gu_rand_f32(&g, n_in, -2, 2, seed + 1);
    void *d_gate = gu_up_act(&g, gate, n_in), *d_up = gu_up_act(&g, up, n_in), *d_out = gu_nan_act(&g, n);
    float *out = gu_host(&g, n * sizeof(float));
    GU_OK(&g, rl_swiglu_fwd(&g.gpu, d_out, d_gate, d_up, n_rows, dim, stride));
    GU_CPU_OK(&g, rl_cpu_swiglu_fwd(&g.cpu, out, gate, up, n_rows, dim, stride));
    gu_check("fp32 swiglu_fwd", gu_get_bf16(&g, d_out, n), out, n, TOL_ELEM);
    float *dout = gu_rand_f32(&g, n, -1, 1, seed + 2);
    float *dgate = gu_rand_f32(&g, n_in, -1, 1, seed + 3), *dup = gu_copy(&g, dgate, n_in);
    void *d_dgate = gu_up_act(&g, dgate, n_in), *d_dup = gu_up_act(&g, dup, n_in);
    GU_OK(&g, rl_swiglu_bwd(&g.gpu, d_dgate, d_dup, gu_up_act(&g, dout, n), d_gate, d_up, n_rows, dim, stride));
    GU_CPU_OK(&g, rl_cpu_swiglu_bwd(&g.cpu, dgate, dup, dout, gate, up, n_rows, dim, stride));
    gu_check("fp32 swiglu_bwd dgate", gu_get_bf16(&g, d_dgate, n_in), dgate, n_in, TOL_ELEM);
    gu_check("fp32 swiglu_bwd dup", gu_get_bf16(&g, d_dup, n_in), dup, n_in, TOL_ELEM);
    gu_end(&g);
}

Test(gpu_fp32, swiglu)
{
    swiglu_case(33, 64, 64, 3);
    swiglu_case(7, 37, 80, 4);
}

static void matmul_case(int m, int n, int k, int bias, uint64_t seed)
{
    gu g;
    gu_begin_fp32(&g);
    float *in = gu_rand_f32(&g, (size_t)m * k, -1, 1, seed), *w = gu_rand_f32(&g, (size_t)n * k, -1, 1, seed + 1);
    float *b = bias ? gu_rand_f32(&g, n, -1, 1, seed + 2) : NULL, *res = gu_rand_f32(&g, (size_t)m * n, -1, 1, seed + 3);
    void *d_in = gu_up_act(&g, in, (size_t)m * k), *d_w = gu_up_act(&g, w, (size_t)n * k);
    void *d_b = bias ? gu_up_act(&g, b, n) : NULL, *d_out = gu_nan_act(&g, (size_t)m * n);
    float *out = gu_host(&g, (size_t)m * n * sizeof(float));
    GU_OK(&g, rl_matmul_fwd(&g.gpu, d_out, d_in, d_w, d_b, m, n, k, 0));
    GU_CPU_OK(&g, rl_cpu_matmul_fwd(&g.cpu, out, in, w, b, m, n, k, 0));
    gu_check("fp32 matmul_fwd", gu_get_bf16(&g, d_out, (size_t)m * n), out, (size_t)m * n, TOL_SUM);
    void *d_res = gu_up_act(&g, res, (size_t)m * n);
    GU_OK(&g, rl_matmul_residual_fwd(&g.gpu, d_res, d_res, d_in, d_w, m, n, k));
    GU_CPU_OK(&g, rl_cpu_matmul_residual_fwd(&g.cpu, res, res, in, w, m, n, k));
    gu_check("fp32 matmul_residual_fwd", gu_get_bf16(&g, d_res, (size_t)m * n), res, (size_t)m * n, TOL_SUM);
    float *dout = gu_rand_f32(&g, (size_t)m * n, -1, 1, seed + 4), *din = gu_host(&g, (size_t)m * k * sizeof(float));
    float *dw = gu_rand_f32(&g, (size_t)n * k, -1, 1, seed + 5), *db = gu_rand_f32(&g, n, -1, 1, seed + 6);
    void *d_din = gu_nan_act(&g, (size_t)m * k);
    float *d_dw = gu_up_f32(&g, dw, (size_t)n * k), *d_db = bias ? gu_up_f32(&g, db, n) : NULL;
    GU_OK(&g, rl_matmul_bwd(&g.gpu, d_din, d_dw, d_db, gu_up_act(&g, dout, (size_t)m * n), d_in, d_w, m, n, k, 0));
    GU_CPU_OK(&g, rl_cpu_matmul_bwd(&g.cpu, din, dw, bias ? db : NULL, dout, in, w, m, n, k, 0));
    gu_check("fp32 matmul_bwd din", gu_get_bf16(&g, d_din, (size_t)m * k), din, (size_t)m * k, TOL_SUM);
    gu_check("fp32 matmul_bwd dweight", gu_get_f32(&g, d_dw, (size_t)n * k), dw, (size_t)n * k, TOL_SUM);
    if (bias) gu_check("fp32 matmul_bwd dbias", gu_get_f32(&g, d_db, n), db, n, TOL_SUM);
    gu_end(&g);
}

/* m = 3: the bf16 mode's GEMV shape; odd sizes and a bias epilogue in fp32. */
Test(gpu_fp32, matmul)
{
    matmul_case(3, 256, 128, 0, 5);
    matmul_case(77, 131, 45, 1, 6);
}

static void attention_case(int n_seqs, const int *lens, int H, int KV, int D, uint64_t seed)
{
    gu g;
    gu_begin_fp32(&g);
    int32_t cu[8] = {0};
    int max_len = 0;
    for (int s = 0; s < n_seqs; s++) {
        cu[s + 1] = cu[s] + lens[s];
        if (lens[s] > max_len) max_len = lens[s];
    }
    int T = cu[n_seqs];
    size_t nq = (size_t)T * H * D, nk = (size_t)T * KV * D;
    float scale = 1.0f / sqrtf((float)D);
    float *q = gu_rand_f32(&g, nq, -2, 2, seed), *k = gu_rand_f32(&g, nk, -2, 2, seed + 1);
    float *v = gu_rand_f32(&g, nk, -1, 1, seed + 2);
    int32_t *d_cu = gu_up_bytes(&g, cu, (n_seqs + 1) * sizeof(int32_t));
    void *d_q = gu_up_act(&g, q, nq), *d_k = gu_up_act(&g, k, nk), *d_v = gu_up_act(&g, v, nk);
    void *d_out = gu_nan_act(&g, nq);
    float *d_lse = gu_nan_f32(&g, (size_t)T * H);
    float *out = gu_host(&g, nq * sizeof(float)), *lse = gu_host(&g, (size_t)T * H * sizeof(float));
    GU_OK(&g, rl_attention_fwd(&g.gpu, d_out, d_lse, d_q, d_k, d_v, d_cu, d_cu, NULL, n_seqs, max_len, max_len, H, KV,
                               D, scale, 1));
    GU_CPU_OK(&g, rl_cpu_attention_fwd(&g.cpu, out, lse, q, k, v, cu, cu, NULL, n_seqs, max_len, max_len, H, KV, D,
                                       scale, 1));
    char what[96];
    snprintf(what, sizeof what, "fp32 attention_fwd out D%d H%d/%d", D, H, KV);
    gu_check(what, gu_get_bf16(&g, d_out, nq), out, nq, TOL_SUM);
    gu_check("fp32 attention_fwd lse", gu_get_f32(&g, d_lse, (size_t)T * H), lse, (size_t)T * H, TOL_SUM);
    float *dout = gu_rand_f32(&g, nq, -1, 1, seed + 3);
    float *dq = gu_host(&g, nq * sizeof(float)), *dk = gu_host(&g, nk * sizeof(float));
    float *dv = gu_host(&g, nk * sizeof(float));
    void *d_dq = gu_nan_act(&g, nq), *d_dk = gu_nan_act(&g, nk), *d_dv = gu_nan_act(&g, nk);
    GU_OK(&g, rl_attention_bwd(&g.gpu, d_dq, d_dk, d_dv, gu_up_act(&g, dout, nq), gu_up_act(&g, out, nq),
                               gu_up_f32(&g, lse, (size_t)T * H), d_q, d_k, d_v, d_cu, d_cu, n_seqs, max_len, max_len, H, KV, D,
                               scale, 1));
    GU_CPU_OK(&g, rl_cpu_attention_bwd(&g.cpu, dq, dk, dv, dout, out, lse, q, k, v, cu, cu, n_seqs, max_len, max_len, H, KV,
                                       D, scale, 1));
    snprintf(what, sizeof what, "fp32 attention_bwd dq D%d", D);
    gu_check(what, gu_get_bf16(&g, d_dq, nq), dq, nq, TOL_SUM);
    snprintf(what, sizeof what, "fp32 attention_bwd dk D%d", D);
    gu_check(what, gu_get_bf16(&g, d_dk, nk), dk, nk, TOL_SUM);
    snprintf(what, sizeof what, "fp32 attention_bwd dv D%d", D);
    gu_check(what, gu_get_bf16(&g, d_dv, nk), dv, nk, TOL_SUM);
    gu_end(&g);
}

/* head_dim 64 and 128 are the bf16 mode's tensor-core shapes; 20 and GQA 3:1 are awkward. */
Test(gpu_fp32, attention)
{
    int lens[3] = {37, 1, 70};
    attention_case(3, lens, 4, 2, 64, 7);
    attention_case(3, lens, 2, 1, 128, 8);
    attention_case(2, lens, 6, 2, 20, 9);
}

/* One layer's pool of n_blocks blocks (keys then values per block), blocks handed out in reverse
 * order; n_seqs sequences with len_q new queries each over len_k cached keys. */
static void paged_case(int n_seqs, const int *len_q, const int *len_k, int H, int KV, int D, int BS, uint64_t seed)
{
    gu g;
    gu_begin_fp32(&g);
    int max_blocks = 0, n_blocks = 0, total_q = 0, max_q = 0, max_k = 0;
    for (int s = 0; s < n_seqs; s++) {
        int nb = (len_k[s] + BS - 1) / BS;
        n_blocks += nb;
        if (nb > max_blocks) max_blocks = nb;
        total_q += len_q[s];
        if (len_q[s] > max_q) max_q = len_q[s];
        if (len_k[s] > max_k) max_k = len_k[s];
    }
    size_t plane = (size_t)BS * KV * D, block_elems = 2 * plane, pool_n = (size_t)n_blocks * block_elems;
    float *pool = gu_rand_f32(&g, pool_n, -1, 1, seed), *q = gu_rand_f32(&g, (size_t)total_q * H * D, -2, 2, seed + 1);
    int32_t *tables = gu_host(&g, (size_t)n_seqs * max_blocks * sizeof(int32_t));
    int32_t *cu = gu_host(&g, (n_seqs + 1) * sizeof(int32_t)), *seqlens = gu_host(&g, n_seqs * sizeof(int32_t));
    int next = n_blocks;
    for (int s = 0; s < n_seqs; s++) {
        for (int i = 0; i < max_blocks; i++) tables[s * max_blocks + i] = i * BS < len_k[s] ? --next : -1;
        cu[s + 1] = cu[s] + len_q[s];
        seqlens[s] = len_k[s];
    }
    rl_paged_kv kv = {.k = pool, .v = pool + plane, .block_stride = block_elems, .block_size = BS,
                      .block_tables = tables, .max_blocks = max_blocks};
    float *d_pool = gu_up_act(&g, pool, pool_n);
    rl_paged_kv dkv = kv;
    dkv.k = d_pool;
    dkv.v = d_pool + plane;
    dkv.block_tables = gu_up_bytes(&g, tables, (size_t)n_seqs * max_blocks * sizeof(int32_t));
    size_t nq = (size_t)total_q * H * D;
    float *out = gu_host(&g, nq * sizeof(float));
    void *d_out = gu_nan_act(&g, nq);
    float scale = 1.0f / sqrtf((float)D);
    GU_OK(&g, rl_paged_attention_fwd(&g.gpu, d_out, gu_up_act(&g, q, nq), &dkv, gu_up_bytes(&g, cu, (n_seqs + 1) * 4),
                                     gu_up_bytes(&g, seqlens, n_seqs * 4), n_seqs, max_q, max_k, H, KV, D, scale));
    GU_CPU_OK(&g, rl_cpu_paged_attention_fwd(&g.cpu, out, q, &kv, cu, seqlens, n_seqs, max_q, max_k, H, KV, D, scale));
    char what[96];
    snprintf(what, sizeof what, "fp32 paged_attention D%d BS%d max_q %d", D, BS, max_q);
    gu_check(what, gu_get_bf16(&g, d_out, nq), out, nq, TOL_SUM);
    gu_end(&g);
}

/* Decode rows (split-KV) and a prefill chunk longer than the split kernel's 16 rows, at head_dim
 * 64 (the bf16 mode's tensor-core kernels) and 32 (the demo model's). */
Test(gpu_fp32, paged_attention)
{
    int q1[3] = {1, 1, 1}, k1[3] = {300, 5, 129};
    paged_case(3, q1, k1, 8, 4, 64, 16, 10);
    int q2[2] = {40, 3}, k2[2] = {90, 3};
    paged_case(2, q2, k2, 8, 4, 64, 16, 11);
    paged_case(2, q2, k2, 8, 4, 32, 5, 12);
}

Test(gpu_fp32, embedding_rope_add)
{
    gu g;
    gu_begin_fp32(&g);
    enum { V = 50, T = 33, DIM = 36, H = 3, HD = 12 };
    int32_t ids[T];
    for (int t = 0; t < T; t++) ids[t] = (t * 7) % V; /* repeats: the backward's atomics add */
    float *table = gu_rand_f32(&g, V * DIM, -1, 1, 13), *out = gu_host(&g, T * DIM * sizeof(float));
    int32_t *d_ids = gu_up_bytes(&g, ids, sizeof ids);
    void *d_out = gu_nan_act(&g, T * DIM);
    GU_OK(&g, rl_embedding_fwd(&g.gpu, d_out, d_ids, gu_up_act(&g, table, V * DIM), T, DIM));
    GU_CPU_OK(&g, rl_cpu_embedding_fwd(&g.cpu, out, ids, table, T, DIM));
    gu_check("fp32 embedding_fwd (exact)", gu_get_bf16(&g, d_out, T * DIM), out, T * DIM, 0);
    float *dout = gu_rand_f32(&g, T * DIM, -1, 1, 14), *dt = gu_rand_f32(&g, V * DIM, -1, 1, 15);
    float *d_dt = gu_up_f32(&g, dt, V * DIM);
    GU_OK(&g, rl_embedding_bwd(&g.gpu, d_dt, d_ids, gu_up_act(&g, dout, T * DIM), T, DIM));
    GU_CPU_OK(&g, rl_cpu_embedding_bwd(&g.cpu, dt, ids, dout, T, DIM));
    gu_check("fp32 embedding_bwd", gu_get_f32(&g, d_dt, V * DIM), dt, V * DIM, TOL_ELEM);

    /* RoPE forward then backward, in place; T tokens of H heads, positions far apart */
    int32_t pos[T];
    for (int t = 0; t < T; t++) pos[t] = t * 997;
    float inv_freq[HD / 2];
    for (int i = 0; i < HD / 2; i++) inv_freq[i] = powf(10000.0f, -2.0f * i / HD);
    float *x = gu_rand_f32(&g, T * H * HD, -1, 1, 16);
    void *d_x = gu_up_act(&g, x, T * H * HD);
    int32_t *d_pos = gu_up_bytes(&g, pos, sizeof pos);
    float *d_if = gu_up_f32(&g, inv_freq, HD / 2);
    GU_OK(&g, rl_rope_fwd(&g.gpu, d_x, d_pos, d_if, T, H, HD));
    GU_CPU_OK(&g, rl_cpu_rope_fwd(&g.cpu, x, pos, inv_freq, T, H, HD));
    gu_check("fp32 rope_fwd", gu_get_bf16(&g, d_x, T * H * HD), x, T * H * HD, TOL_ELEM);
    GU_OK(&g, rl_rope_bwd(&g.gpu, d_x, d_pos, d_if, T, H, HD));
    GU_CPU_OK(&g, rl_cpu_rope_bwd(&g.cpu, x, pos, inv_freq, T, H, HD));
    gu_check("fp32 rope_bwd", gu_get_bf16(&g, d_x, T * H * HD), x, T * H * HD, TOL_ELEM);

    float *y = gu_rand_f32(&g, T * DIM, -1, 1, 17);
    void *d_y = gu_up_act(&g, y, T * DIM);
    GU_OK(&g, rl_add(&g.gpu, d_y, d_out, T * DIM));
    GU_CPU_OK(&g, rl_cpu_add(&g.cpu, y, out, T * DIM));
    gu_check("fp32 add (exact)", gu_get_bf16(&g, d_y, T * DIM), y, T * DIM, 0);
    gu_end(&g);
}

Test(gpu_fp32, lm_head_and_value_head)
{
    gu g;
    gu_begin_fp32(&g);
    enum { T = 45, DIM = 40, V = 301 };
    float *h = gu_rand_f32(&g, T * DIM, -1, 1, 18), *w = gu_rand_f32(&g, V * DIM, -0.5f, 0.5f, 19);
    int32_t tg[T];
    for (int t = 0; t < T; t++) tg[t] = t % 9 == 4 ? -1 : (t * 31) % V;
    float logp[T], lse[T], ent[T], inv_t = 1.0f / 0.7f;
    void *d_h = gu_up_act(&g, h, T * DIM), *d_w = gu_up_act(&g, w, V * DIM);
    int32_t *d_tg = gu_up_bytes(&g, tg, sizeof tg);
    float *d_logp = gu_nan_f32(&g, T), *d_lse = gu_nan_f32(&g, T), *d_ent = gu_nan_f32(&g, T);
    GU_OK(&g, rl_lm_head_logprobs_fwd(&g.gpu, d_logp, d_lse, d_ent, d_h, d_w, d_tg, T, DIM, V, inv_t));
    GU_CPU_OK(&g, rl_cpu_lm_head_logprobs_fwd(&g.cpu, logp, lse, ent, h, w, tg, T, DIM, V, inv_t));
    gu_check("fp32 lm_head logp", gu_get_f32(&g, d_logp, T), logp, T, TOL_SUM);
    gu_check("fp32 lm_head lse", gu_get_f32(&g, d_lse, T), lse, T, TOL_SUM);
    gu_check("fp32 lm_head entropy", gu_get_f32(&g, d_ent, T), ent, T, TOL_SUM);
    float *dlogp = gu_rand_f32(&g, T, -1, 1, 20), *dh = gu_host(&g, T * DIM * sizeof(float));
    float *dw = gu_rand_f32(&g, V * DIM, -1, 1, 21);
    void *d_dh = gu_nan_act(&g, T * DIM);
    float *d_dw = gu_up_f32(&g, dw, V * DIM);
    float *dent = gu_rand_f32(&g, T, -1, 1, 22); /* the entropy bonus's gradient too */
    GU_OK(&g, rl_lm_head_logprobs_bwd(&g.gpu, d_dh, d_dw, gu_up_f32(&g, dlogp, T), gu_up_f32(&g, dent, T), d_h, d_w,
                                      d_tg, d_lse, d_ent, T, DIM, V, inv_t));
    GU_CPU_OK(&g, rl_cpu_lm_head_logprobs_bwd(&g.cpu, dh, dw, dlogp, dent, h, w, tg, lse, ent, T, DIM, V, inv_t));
    gu_check("fp32 lm_head dhidden", gu_get_bf16(&g, d_dh, T * DIM), dh, T * DIM, TOL_SUM);
    gu_check("fp32 lm_head dweight", gu_get_f32(&g, d_dw, V * DIM), dw, V * DIM, TOL_SUM);
    float *logits = gu_host(&g, 3 * V * sizeof(float)), *d_logits = gu_nan_f32(&g, 3 * V);
    GU_OK(&g, rl_lm_head_logits(&g.gpu, d_logits, d_h, d_w, 3, DIM, V));
    GU_CPU_OK(&g, rl_cpu_lm_head_logits(&g.cpu, logits, h, w, 3, DIM, V));
    gu_check("fp32 lm_head logits", gu_get_f32(&g, d_logits, 3 * V), logits, 3 * V, TOL_SUM);

    /* value head on the same hidden rows: weight [DIM], bias [1] in the act dtype */
    float *vw = gu_rand_f32(&g, DIM, -1, 1, 22), vb = 0.3f, values[T];
    void *d_vw = gu_up_act(&g, vw, DIM), *d_vb = gu_up_act(&g, &vb, 1);
    float *d_values = gu_nan_f32(&g, T);
    GU_OK(&g, rl_value_head_fwd(&g.gpu, d_values, d_h, d_vw, d_vb, T, DIM));
    GU_CPU_OK(&g, rl_cpu_value_head_fwd(&g.cpu, values, h, vw, &vb, T, DIM));
    gu_check("fp32 value_head_fwd", gu_get_f32(&g, d_values, T), values, T, TOL_SUM);
    float *dvals = gu_rand_f32(&g, T, -1, 1, 23), *vdh = gu_host(&g, T * DIM * sizeof(float));
    float *vdw = gu_rand_f32(&g, DIM, -1, 1, 24), vdb = 0.5f;
    void *d_vdh = gu_nan_act(&g, T * DIM);
    float *d_vdw = gu_up_f32(&g, vdw, DIM), *d_vdb = gu_up_f32(&g, &vdb, 1);
    GU_OK(&g, rl_value_head_bwd(&g.gpu, d_vdh, d_vdw, d_vdb, gu_up_f32(&g, dvals, T), d_h, d_vw, T, DIM));
    GU_CPU_OK(&g, rl_cpu_value_head_bwd(&g.cpu, vdh, vdw, &vdb, dvals, h, vw, T, DIM));
    gu_check("fp32 value_head dhidden", gu_get_bf16(&g, d_vdh, T * DIM), vdh, T * DIM, TOL_ELEM);
    gu_check("fp32 value_head dweight", gu_get_f32(&g, d_vdw, DIM), vdw, DIM, TOL_SUM);
    gu_check("fp32 value_head dbias", gu_get_f32(&g, d_vdb, 1), &vdb, 1, TOL_SUM);
    gu_end(&g);
}

/* AdamW with no separate working copy (the fp32 mode: the masters are the working weights). */
Test(gpu_fp32, adamw_without_working_copy)
{
    gu g;
    gu_begin_fp32(&g);
    enum { N = 1001 };
    float *p = gu_rand_f32(&g, N, -1, 1, 25), *grad = gu_rand_f32(&g, N, -1, 1, 26);
    float *m = gu_rand_f32(&g, N, -0.1f, 0.1f, 27), *v = gu_rand_f32(&g, N, 0, 0.01f, 28);
    float *d_p = gu_up_f32(&g, p, N), *d_m = gu_up_f32(&g, m, N), *d_v = gu_up_f32(&g, v, N);
    rl_adamw_params ap = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 3,
                          .grad_scale = 0.5f};
    GU_OK(&g, rl_adamw_step(&g.gpu, d_p, NULL, gu_up_f32(&g, grad, N), d_m, d_v, N, &ap));
    GU_CPU_OK(&g, rl_cpu_adamw_step(&g.cpu, p, NULL, grad, m, v, N, &ap));
    gu_check("fp32 adamw param", gu_get_f32(&g, d_p, N), p, N, TOL_ELEM);
    gu_check("fp32 adamw m", gu_get_f32(&g, d_m, N), m, N, TOL_ELEM);
    gu_end(&g);
}
