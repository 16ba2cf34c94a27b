/* test_attention.c — packed varlen attention against float64 torch: several sequences of
 * different lengths, GQA ratios 1, 2 and 3, causal and not, forward (out, lse) and backward
 * (dq, dk, dv summed over the query heads of a group); a decode / chunked-prefill case with
 * KV slabs longer than seqused_k and 1 or 3 queries aligned bottom-right, also with the slabs
 * starting after row 0 of k/v; sequences of up to
 * 180 keys (several query tiles); finite differences; bad arguments. fp32 tolerance: 2e-5
 * relative to max(|ref|, 0.1) (dot products over head_dim <= 13, softmax sums in double,
 * O(1) data), also for the long cases whose dK/dV sum over up to 150 queries. */
#include "op_fixture.h"

typedef struct att_case {
    float *q, *k, *v, *out, *lse, *dout, *dq, *dk, *dv;
    int32_t *cu_q, *cu_k, *seqused;
    int n_seqs, n_heads, n_kv, head_dim, causal, max_q, max_k;
    size_t total_q, total_k;
    float scale;
} att_case;

static float *get(const rl_safetensors *st, const char *name, const char *key)
{
    char full[128];
    snprintf(full, sizeof full, "%s.%s", name, key);
    return rl_safetensors_find(st, full) ? fx_get(st, full, 0) : NULL;
}

static att_case load_case(const rl_safetensors *st, const char *name)
{
    att_case c = {0};
    char full[128];
    float *meta = get(st, name, "meta");
    cr_assert_not_null(meta, "case %s missing", name);
    c.n_heads = (int)meta[0], c.n_kv = (int)meta[1], c.head_dim = (int)meta[2];
    c.causal = (int)meta[3], c.scale = meta[4], c.max_q = (int)meta[5], c.max_k = (int)meta[6];
    free(meta);
    snprintf(full, sizeof full, "%s.cu_seqlens_q", name);
    c.n_seqs = (int)rl_st_tensor_numel(rl_safetensors_find(st, full)) - 1;
    c.cu_q = fx_ints(st, full, 0);
    snprintf(full, sizeof full, "%s.cu_seqlens_k", name);
    c.cu_k = fx_ints(st, full, 0);
    snprintf(full, sizeof full, "%s.seqused_k", name);
    c.seqused = rl_safetensors_find(st, full) ? fx_ints(st, full, 0) : NULL;
    c.total_q = (size_t)c.cu_q[c.n_seqs], c.total_k = (size_t)c.cu_k[c.n_seqs];
    c.q = get(st, name, "q"), c.k = get(st, name, "k"), c.v = get(st, name, "v");
    c.out = get(st, name, "out"), c.lse = get(st, name, "lse"), c.dout = get(st, name, "dout");
    c.dq = get(st, name, "dq"), c.dk = get(st, name, "dk"), c.dv = get(st, name, "dv");
    return c;
}

static void free_case(att_case *c)
{
    float *f[] = {c->q, c->k, c->v, c->out, c->lse, c->dout, c->dq, c->dk, c->dv};
    for (int i = 0; i < 9; i++) free(f[i]);
    free(c->cu_q), free(c->cu_k), free(c->seqused);
}

static void run_case(const char *name, int with_backward, double tol)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("attention");
    att_case c = load_case(st, name);
    size_t nq = c.total_q * c.n_heads * c.head_dim, nk = c.total_k * c.n_kv * c.head_dim;
    float *out = fx_alloc_poisoned(nq), *lse = fx_alloc_poisoned(c.total_q * c.n_heads);
    cr_assert_eq(rl_attention_fwd(&ctx, out, lse, c.q, c.k, c.v, c.cu_q, c.cu_k, c.seqused, c.n_seqs,
                                  c.max_q, c.max_k, c.n_heads, c.n_kv, c.head_dim, c.scale, c.causal),
                 0, "%s", ctx.err.msg);
    char what[160];
    snprintf(what, sizeof what, "%s out", name);
    fx_expect_close(what, out, c.out, nq, tol, 0.1);
    snprintf(what, sizeof what, "%s lse", name);
    fx_expect_close(what, lse, c.lse, c.total_q * c.n_heads, tol, 0.1);
    if (with_backward) {
        cr_assert_not_null(c.dq, "%s has no backward reference", name);
        float *dq = fx_alloc_poisoned(nq), *dk = fx_alloc_poisoned(nk), *dv = fx_alloc_poisoned(nk);
        cr_assert_eq(rl_attention_bwd(&ctx, dq, dk, dv, c.dout, out, lse, c.q, c.k, c.v, c.cu_q, c.cu_k, c.n_seqs,
                                      c.max_q, c.max_k, c.n_heads, c.n_kv, c.head_dim, c.scale, c.causal),
                     0, "%s", ctx.err.msg);
        snprintf(what, sizeof what, "%s dq", name);
        fx_expect_close(what, dq, c.dq, nq, tol, 0.1);
        snprintf(what, sizeof what, "%s dk", name);
        fx_expect_close(what, dk, c.dk, nk, tol, 0.1);
        snprintf(what, sizeof what, "%s dv", name);
        fx_expect_close(what, dv, c.dv, nk, tol, 0.1);
        free(dq), free(dk), free(dv);
    }
    free(out), free(lse);
    free_case(&c);
    rl_safetensors_close(st);
}

Test(attention, causal_gqa2_packed) { run_case("causal_gqa2", 1, 2e-5); }
Test(attention, noncausal_gqa3_packed) { run_case("full_gqa3", 1, 2e-5); }
Test(attention, causal_mha_packed) { run_case("causal_mha", 1, 2e-5); }
Test(attention, decode_with_seqused_k) { run_case("decode_seqused", 0, 2e-5); }
/* longer than the 64-query tiles of the CPU backend */
Test(attention, long_causal_gqa2) { run_case("long_causal_gqa2", 1, 2e-5); }
Test(attention, long_noncausal_gqa2) { run_case("long_full_gqa2", 1, 2e-5); }
Test(attention, long_prefill_with_seqused_k) { run_case("long_prefill_seqused", 0, 2e-5); }

/* Key rows are absolute (ops.h): the decode case with k/v shifted down by 5 NaN rows and
 * cu_seqlens_k shifted by 5 gives the same result; the NaN rows are never read. */
Test(attention, key_slabs_after_row_zero)
{
    enum { SHIFT = 5 };
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("attention");
    att_case c = load_case(st, "decode_seqused");
    cr_assert_not_null(c.seqused, "decode_seqused has no seqused_k");
    size_t kv_row = (size_t)c.n_kv * c.head_dim, nq = c.total_q * c.n_heads * c.head_dim;
    float *k = fx_alloc_poisoned((c.total_k + SHIFT) * kv_row), *v = fx_alloc_poisoned((c.total_k + SHIFT) * kv_row);
    memcpy(k + SHIFT * kv_row, c.k, c.total_k * kv_row * sizeof(float));
    memcpy(v + SHIFT * kv_row, c.v, c.total_k * kv_row * sizeof(float));
    for (int s = 0; s <= c.n_seqs; s++) c.cu_k[s] += SHIFT;
    float *out = fx_alloc_poisoned(nq), *lse = fx_alloc_poisoned(c.total_q * c.n_heads);
    cr_assert_eq(rl_attention_fwd(&ctx, out, lse, c.q, k, v, c.cu_q, c.cu_k, c.seqused, c.n_seqs, c.max_q,
                                  c.max_k, c.n_heads, c.n_kv, c.head_dim, c.scale, c.causal),
                 0, "%s", ctx.err.msg);
    fx_expect_close("shifted slabs out", out, c.out, nq, 2e-5, 0.1);
    fx_expect_close("shifted slabs lse", lse, c.lse, c.total_q * c.n_heads, 2e-5, 0.1);
    free(k), free(v), free(out), free(lse);
    free_case(&c);
    rl_safetensors_close(st);
}

/* A query with no visible key (len_q > len_k, causal) gets out = 0 and lse = -inf. */
Test(attention, query_without_keys)
{
    rl_ctx ctx = fx_cpu();
    float q[2 * 2], k[1 * 2] = {0.3f, -0.2f}, v[1 * 2] = {0.5f, 0.25f}, out[4], lse[2];
    tu_fill_uniform(q, 4, -1, 1, 3);
    tu_poison(out, 4);
    int32_t cu_q[2] = {0, 2}, cu_k[2] = {0, 1};
    cr_assert_eq(rl_attention_fwd(&ctx, out, lse, q, k, v, cu_q, cu_k, NULL, 1, 2, 1, 1, 1, 2, 1.0f, 1), 0,
                 "%s", ctx.err.msg);
    cr_expect(out[0] == 0 && out[1] == 0 && isinf(lse[0]) && lse[0] < 0, "row 0: %g %g lse %g", out[0], out[1],
              lse[0]);
    cr_expect(out[2] == 0.5f && out[3] == 0.25f, "row 1 sees its one key: %g %g", out[2], out[3]);
    cr_expect(fabsf(lse[1] - (q[2] * k[0] + q[3] * k[1])) < 1e-6f, "lse[1] %g", lse[1]);
}

enum { FT = 5, FH = 2, FKV = 1, FD = 3 };

typedef struct fd_state {
    rl_ctx *ctx;
    float *q, *k, *v, *dout, *out, *lse;
    const int32_t *cu_q, *cu_k;
    int n_q, max_q, max_k;
} fd_state;

static double fd_loss(void *user)
{
    fd_state *s = user;
    cr_assert_eq(rl_attention_fwd(s->ctx, s->out, s->lse, s->q, s->k, s->v, s->cu_q, s->cu_k, NULL, 2, s->max_q,
                                  s->max_k, FH, FKV, FD, 0.6f, 1), 0);
    return fx_dot(s->dout, s->out, (size_t)s->n_q * FH * FD);
}

/* Gradients of <dout, out> against central differences: the training layout (q and k cut
 * alike), and queries that are the last rows of longer key slabs (len_q < len_k, bottom-right). */
static void check_fd(const int32_t *cu_q, const int32_t *cu_k, int max_q, int max_k)
{
    rl_ctx ctx = fx_cpu();
    int n_q = cu_q[2], n_k = cu_k[2];
    float q[FT * FH * FD], k[FT * FKV * FD], v[FT * FKV * FD], dout[FT * FH * FD], out[FT * FH * FD];
    float lse[FT * FH], dq[FT * FH * FD], dk[FT * FKV * FD], dv[FT * FKV * FD];
    tu_fill_uniform(q, FT * FH * FD, -1, 1, 1);
    tu_fill_uniform(k, FT * FKV * FD, -1, 1, 2);
    tu_fill_uniform(v, FT * FKV * FD, -1, 1, 3);
    tu_fill_uniform(dout, FT * FH * FD, -1, 1, 4);
    fd_state s = {&ctx, q, k, v, dout, out, lse, cu_q, cu_k, n_q, max_q, max_k};
    fd_loss(&s);
    cr_assert_eq(rl_attention_bwd(&ctx, dq, dk, dv, dout, out, lse, q, k, v, cu_q, cu_k, 2, max_q, max_k, FH, FKV, FD,
                                  0.6f, 1), 0, "%s", ctx.err.msg);
    fx_check_fd("attention dq", q, (size_t)n_q * FH * FD, dq, fd_loss, &s, 1e-2f, 1e-3);
    fx_check_fd("attention dk", k, (size_t)n_k * FKV * FD, dk, fd_loss, &s, 1e-2f, 1e-3);
    fx_check_fd("attention dv", v, (size_t)n_k * FKV * FD, dv, fd_loss, &s, 1e-2f, 1e-3);
}

Test(attention, finite_differences)
{
    int32_t cu[3] = {0, 3, 5};
    check_fd(cu, cu, 3, 3);
}

Test(attention, finite_differences_queries_after_keys)
{
    int32_t cu_q[3] = {0, 2, 3}, cu_k[3] = {0, 3, 5};
    check_fd(cu_q, cu_k, 2, 3);
}

/* A shared prefix (model.h): prefix P and its continuations C1, C2, as the model lays them out
 * (queries P | C1 | C2, key slabs P | P C1 | P C2), give what the two whole sequences P C1 and
 * P C2 give with the prefix's queries of the second one carrying no gradient: the same outputs,
 * dq, and dk/dv of the prefix the sum over its three slabs. */
Test(attention, shared_prefix_matches_whole_sequences)
{
    enum { P = 70, C1 = 9, C2 = 75, H = 4, KV = 2, D = 8 }; /* P + C2 spans several 64-row tiles */
    rl_ctx ctx = fx_cpu();
    size_t qr = H * D, kr = KV * D;
    int nq = P + C1 + C2, nw = 2 * P + C1 + C2, nx = 3 * P + C1 + C2;
    float *q = malloc(sizeof(float) * nw * qr), *k = malloc(sizeof(float) * nw * kr), *v = malloc(sizeof(float) * nw * kr);
    float *dout = malloc(sizeof(float) * nw * qr);
    tu_fill_uniform(q, (size_t)(P + C1) * qr, -1, 1, 11);
    tu_fill_uniform(k, (size_t)(P + C1) * kr, -1, 1, 12);
    tu_fill_uniform(v, (size_t)(P + C1) * kr, -1, 1, 13);
    tu_fill_uniform(dout, (size_t)(P + C1) * qr, -1, 1, 14);
    /* whole sequence 2 = the prefix again, then C2 */
    memcpy(q + (P + C1) * qr, q, P * qr * sizeof(float));
    memcpy(k + (P + C1) * kr, k, P * kr * sizeof(float));
    memcpy(v + (P + C1) * kr, v, P * kr * sizeof(float));
    memset(dout + (P + C1) * qr, 0, P * qr * sizeof(float));
    tu_fill_uniform(q + (2 * P + C1) * qr, C2 * qr, -1, 1, 15);
    tu_fill_uniform(k + (2 * P + C1) * kr, C2 * kr, -1, 1, 16);
    tu_fill_uniform(v + (2 * P + C1) * kr, C2 * kr, -1, 1, 17);
    tu_fill_uniform(dout + (2 * P + C1) * qr, C2 * qr, -1, 1, 18);
    int32_t cu_w[3] = {0, P + C1, 2 * P + C1 + C2};
    float *out_w = malloc(sizeof(float) * nw * qr), *lse_w = malloc(sizeof(float) * nw * H);
    float *dq_w = malloc(sizeof(float) * nw * qr), *dk_w = malloc(sizeof(float) * nw * kr), *dv_w = malloc(sizeof(float) * nw * kr);
    cr_assert_eq(rl_attention_fwd(&ctx, out_w, lse_w, q, k, v, cu_w, cu_w, NULL, 2, P + C2, P + C2, H, KV, D, 0.35f, 1), 0);
    cr_assert_eq(rl_attention_bwd(&ctx, dq_w, dk_w, dv_w, dout, out_w, lse_w, q, k, v, cu_w, cu_w, 2, P + C2, P + C2, H,
                                  KV, D, 0.35f, 1), 0, "%s", ctx.err.msg);

    /* shared layout: query rows P C1 C2 (whole-layout rows 0..P+C1, then C2's), key rows P | P C1 | P C2 */
    int32_t rows_q[P + C1 + C2], rows_k[3 * P + C1 + C2];
    for (int i = 0; i < P + C1; i++) rows_q[i] = i;
    for (int i = 0; i < C2; i++) rows_q[P + C1 + i] = 2 * P + C1 + i;
    int n = 0;
    for (int i = 0; i < P; i++) rows_k[n++] = i;
    for (int i = 0; i < P + C1; i++) rows_k[n++] = i;
    for (int i = 0; i < P; i++) rows_k[n++] = i;
    for (int i = 0; i < C2; i++) rows_k[n++] = 2 * P + C1 + i;
    float *qs = malloc(sizeof(float) * nq * qr), *dos = malloc(sizeof(float) * nq * qr);
    float *ks = malloc(sizeof(float) * nx * kr), *vs = malloc(sizeof(float) * nx * kr);
    for (int i = 0; i < nq; i++) {
        memcpy(qs + i * qr, q + rows_q[i] * qr, qr * sizeof(float));
        memcpy(dos + i * qr, dout + rows_q[i] * qr, qr * sizeof(float));
    }
    for (int i = 0; i < nx; i++) {
        memcpy(ks + i * kr, k + rows_k[i] * kr, kr * sizeof(float));
        memcpy(vs + i * kr, v + rows_k[i] * kr, kr * sizeof(float));
    }
    int32_t cu_q[4] = {0, P, P + C1, P + C1 + C2}, cu_k[4] = {0, P, 2 * P + C1, 3 * P + C1 + C2};
    float *out = malloc(sizeof(float) * nq * qr), *lse = malloc(sizeof(float) * nq * H);
    float *dq = malloc(sizeof(float) * nq * qr), *dk = malloc(sizeof(float) * nx * kr), *dv = malloc(sizeof(float) * nx * kr);
    cr_assert_eq(rl_attention_fwd(&ctx, out, lse, qs, ks, vs, cu_q, cu_k, NULL, 3, C2 > P ? C2 : P, P + C2, H, KV, D,
                                  0.35f, 1), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_attention_bwd(&ctx, dq, dk, dv, dos, out, lse, qs, ks, vs, cu_q, cu_k, 3, C2 > P ? C2 : P, P + C2,
                                  H, KV, D, 0.35f, 1), 0, "%s", ctx.err.msg);
    for (int i = 0; i < nq; i++) {
        fx_expect_close("shared out", out + i * qr, out_w + rows_q[i] * qr, qr, 1e-5, 0.1);
        fx_expect_close("shared lse", lse + i * H, lse_w + rows_q[i] * H, H, 1e-5, 0.1);
        fx_expect_close("shared dq", dq + i * qr, dq_w + rows_q[i] * qr, qr, 1e-5, 0.1);
    }
    /* dk, dv summed back to the whole layout's rows: the prefix's over its three slabs */
    float *dk_sum = calloc((size_t)nw * kr, sizeof(float)), *dv_sum = calloc((size_t)nw * kr, sizeof(float));
    for (int i = 0; i < nx; i++)
        for (size_t d = 0; d < kr; d++) dk_sum[rows_k[i] * kr + d] += dk[i * kr + d], dv_sum[rows_k[i] * kr + d] += dv[i * kr + d];
    for (int i = 0; i < P; i++)
        for (size_t d = 0; d < kr; d++) {
            dk_w[i * kr + d] += dk_w[(P + C1 + i) * kr + d], dv_w[i * kr + d] += dv_w[(P + C1 + i) * kr + d];
            dk_w[(P + C1 + i) * kr + d] = dv_w[(P + C1 + i) * kr + d] = 0;
        }
    fx_expect_close("shared dk", dk_sum, dk_w, (size_t)nw * kr, 1e-5, 0.1);
    fx_expect_close("shared dv", dv_sum, dv_w, (size_t)nw * kr, 1e-5, 0.1);
    float *all[] = {q, k, v, dout, out_w, lse_w, dq_w, dk_w, dv_w, qs, dos, ks, vs, out, lse, dq, dk, dv, dk_sum, dv_sum};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* The offsets the CPU reference checks as it reads them (the contract's rules are tested in
 * test_ops.c). */
Test(attention, bad_offsets)
{
    rl_ctx ctx = fx_cpu();
    float a[64] = {0}, lse[8];
    int32_t cu[3] = {0, 2, 6}, used[2] = {2, 9}, cu_late[3] = {1, 2, 6};
    fx_expect_refused(&ctx, rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu, NULL, 2, 3, 4, 2, 1, 2, 1.0f, 1),
                      "rl_attention_fwd: cu_seqlens_q: sequence 1 has length 4, outside [0, max_seqlen 3]");
    fx_expect_refused(&ctx, rl_attention_fwd(&ctx, a, lse, a, a, a, cu_late, cu, NULL, 2, 4, 4, 2, 1, 2, 1.0f, 1),
                      "rl_attention_fwd: cu_seqlens_q[0] 1 is not 0");
    fx_expect_refused(&ctx, rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu, used, 2, 4, 9, 2, 1, 2, 1.0f, 1),
                      "rl_attention_fwd: seqused_k[1] 9 is outside [0, min(slab 4, max_seqlen_k 9)]");
    int32_t cu_back[3] = {0, 4, 3}, used_ok[2] = {2, 0};
    fx_expect_refused(&ctx, rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu_back, used_ok, 2, 4, 9, 2, 1, 2, 1.0f, 1),
                      "rl_attention_fwd: cu_seqlens_k: key slab 1 has length -1");
    fx_expect_refused(&ctx, rl_attention_bwd(&ctx, a, a, a, a, a, lse, a, a, a, cu, cu, 2, 3, 4, 2, 1, 2, 1.0f, 1),
                      "rl_attention_bwd: cu_seqlens_q: sequence 1 has length 4, outside [0, max_seqlen 3]");
    fx_expect_refused(&ctx, rl_attention_bwd(&ctx, a, a, a, a, a, lse, a, a, a, cu, cu_late, 2, 4, 4, 2, 1, 2, 1.0f, 1),
                      "rl_attention_bwd: cu_seqlens_k[0] 1 is not 0");
}

/* dk/dv of a kv head are summed on one thread in a fixed order: 1 and 3 threads agree bitwise
 * (a case large enough for the backend to use several threads). */
Test(attention, same_bits_for_any_thread_count)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("attention");
    att_case c = load_case(st, "long_causal_gqa2");
    size_t nq = c.total_q * c.n_heads * c.head_dim, nk = c.total_k * c.n_kv * c.head_dim;
    float *res[2][5];
    for (int t = 0; t < 2; t++) {
        ctx.n_threads = t == 0 ? 1 : 3;
        float *out = fx_alloc_poisoned(nq), *lse = fx_alloc_poisoned(c.total_q * c.n_heads);
        float *dq = fx_alloc_poisoned(nq), *dk = fx_alloc_poisoned(nk), *dv = fx_alloc_poisoned(nk);
        cr_assert_eq(rl_attention_fwd(&ctx, out, lse, c.q, c.k, c.v, c.cu_q, c.cu_k, NULL, c.n_seqs, c.max_q,
                                      c.max_k, c.n_heads, c.n_kv, c.head_dim, c.scale, c.causal), 0, "%s",
                     ctx.err.msg);
        cr_assert_eq(rl_attention_bwd(&ctx, dq, dk, dv, c.dout, out, lse, c.q, c.k, c.v, c.cu_q, c.cu_k, c.n_seqs, c.max_q,
                                      c.max_k, c.n_heads, c.n_kv, c.head_dim, c.scale, c.causal), 0, "%s", ctx.err.msg);
        res[t][0] = out, res[t][1] = lse, res[t][2] = dq, res[t][3] = dk, res[t][4] = dv;
    }
    size_t sizes[5] = {nq, c.total_q * c.n_heads, nq, nk, nk};
    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    for (int i = 0; i < 5; i++) {
        cr_expect(memcmp(res[0][i], res[1][i], sizes[i] * sizeof(float)) == 0, "%s differs between 1 and 3 threads",
                  names[i]);
        free(res[0][i]), free(res[1][i]);
    }
    free_case(&c);
    rl_safetensors_close(st);
}
