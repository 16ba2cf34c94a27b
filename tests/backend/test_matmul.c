/* test_matmul.c — the linear layer (matmul.c over gemm.c): forward with bias against torch,
 * accumulate forms, the three backward products against torch autograd, sizes that cross every
 * tile edge against a double-precision loop, finite differences, and bad arguments.
 * Tolerance fp32: errors relative to max(|ref|, 1). The outputs are dot products of k random
 * terms in [-1, 1] (typical size sqrt(k / 9) >= 1): where they cancel to a small value, the
 * rounding of the large partial sums remains, so a pure relative error would be meaningless.
 * 1e-5 for k <= 67; 5e-5 for k = 512..600, since fp32 rounding grows with the number of
 * terms (~sqrt(k) ulp with random signs). */
#include "op_fixture.h"

enum { M = 37, N = 45, K = 67 };

Test(matmul, forward_with_bias_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("matmul");
    float *x = fx_get(st, "in", M * K), *w = fx_get(st, "weight", N * K), *b = fx_get(st, "bias", N);
    float *ref = fx_get(st, "out", M * N), *out = fx_alloc_poisoned(M * N);
    cr_assert_eq(rl_matmul_fwd(&ctx, out, x, w, b, M, N, K, 0), 0, "%s", ctx.err.msg);
    fx_expect_close("out", out, ref, M * N, 1e-5, 1.0);
    /* accumulate: out += x W^T + b, starting from the first result */
    cr_assert_eq(rl_matmul_fwd(&ctx, out, x, w, b, M, N, K, 1), 0, "%s", ctx.err.msg);
    for (int i = 0; i < M * N; i++) ref[i] *= 2.0f;
    fx_expect_close("out (accumulate)", out, ref, M * N, 1e-5, 1.0);
    free(x), free(w), free(b), free(ref), free(out);
    rl_safetensors_close(st);
}

Test(matmul, backward_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("matmul");
    float *x = fx_get(st, "in", M * K), *w = fx_get(st, "weight", N * K), *dout = fx_get(st, "dout", M * N);
    float *din_ref = fx_get(st, "din", M * K), *dw_ref = fx_get(st, "dweight", N * K);
    float *db_ref = fx_get(st, "dbias", N);
    float *din = fx_alloc_poisoned(M * K), *dw = malloc(N * K * sizeof *dw), *db = malloc(N * sizeof *db);
    /* weight gradients add: start from non-zero values and expect start + reference */
    tu_fill_uniform(dw, N * K, -1, 1, 11);
    tu_fill_uniform(db, N, -1, 1, 12);
    for (int i = 0; i < N * K; i++) dw_ref[i] += dw[i];
    for (int i = 0; i < N; i++) db_ref[i] += db[i];
    cr_assert_eq(rl_matmul_bwd(&ctx, din, dw, db, dout, x, w, M, N, K, 0), 0, "%s", ctx.err.msg);
    fx_expect_close("din", din, din_ref, M * K, 1e-5, 1.0);
    fx_expect_close("dweight (+=)", dw, dw_ref, N * K, 1e-5, 1.0);
    fx_expect_close("dbias (+=)", db, db_ref, N, 1e-5, 1.0);
    /* accumulate_din adds; NULL dweight and dbias are skipped */
    cr_assert_eq(rl_matmul_bwd(&ctx, din, NULL, NULL, dout, x, w, M, N, K, 1), 0, "%s", ctx.err.msg);
    for (int i = 0; i < M * K; i++) din_ref[i] *= 2.0f;
    fx_expect_close("din (accumulate)", din, din_ref, M * K, 1e-5, 1.0);
    free(x), free(w), free(dout), free(din_ref), free(dw_ref), free(db_ref), free(din), free(dw), free(db);
    rl_safetensors_close(st);
}

/* Sizes past every blocking edge (MC 96, NC 256, KC 256, MR 6, NR 32) against double loops. */
Test(matmul, tile_edges_against_double_loops)
{
    enum { BM = 197, BN = 301, BK = 600 };
    rl_ctx ctx = fx_cpu();
    float *x = malloc(BM * BK * sizeof *x), *w = malloc(BN * BK * sizeof *w), *dy = malloc(BM * BN * sizeof *dy);
    tu_fill_uniform(x, BM * BK, -1, 1, 21);
    tu_fill_uniform(w, BN * BK, -1, 1, 22);
    tu_fill_uniform(dy, BM * BN, -1, 1, 23);
    float *out = fx_alloc_poisoned(BM * BN), *din = fx_alloc_poisoned(BM * BK), *dw = calloc(BN * BK, sizeof *dw);
    float *ref_out = malloc(BM * BN * sizeof *ref_out), *ref_din = malloc(BM * BK * sizeof *ref_din);
    float *ref_dw = malloc(BN * BK * sizeof *ref_dw);
    for (int i = 0; i < BM; i++)
        for (int j = 0; j < BN; j++) {
            double s = 0;
            for (int p = 0; p < BK; p++) s += (double)x[i * BK + p] * w[j * BK + p];
            ref_out[i * BN + j] = (float)s;
        }
    for (int i = 0; i < BM; i++)
        for (int p = 0; p < BK; p++) {
            double s = 0;
            for (int j = 0; j < BN; j++) s += (double)dy[i * BN + j] * w[j * BK + p];
            ref_din[i * BK + p] = (float)s;
        }
    for (int j = 0; j < BN; j++)
        for (int p = 0; p < BK; p++) {
            double s = 0;
            for (int i = 0; i < BM; i++) s += (double)dy[i * BN + j] * x[i * BK + p];
            ref_dw[j * BK + p] = (float)s;
        }
    cr_assert_eq(rl_matmul_fwd(&ctx, out, x, w, NULL, BM, BN, BK, 0), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_matmul_bwd(&ctx, din, dw, NULL, dy, x, w, BM, BN, BK, 0), 0, "%s", ctx.err.msg);
    fx_expect_close("out 197x301x600", out, ref_out, BM * BN, 5e-5, 1.0);
    fx_expect_close("din 197x301x600", din, ref_din, BM * BK, 5e-5, 1.0);
    fx_expect_close("dweight 197x301x600", dw, ref_dw, BN * BK, 5e-5, 1.0);
    free(x), free(w), free(dy), free(out), free(din), free(dw), free(ref_out), free(ref_din), free(ref_dw);
}

/* 512^3 against double dot products on a sample of entries. */
Test(matmul, square_512_sampled)
{
    enum { S = 512 };
    rl_ctx ctx = fx_cpu();
    float *x = malloc(S * S * sizeof *x), *w = malloc(S * S * sizeof *w), *out = fx_alloc_poisoned(S * S);
    tu_fill_uniform(x, S * S, -1, 1, 31);
    tu_fill_uniform(w, S * S, -1, 1, 32);
    cr_assert_eq(rl_matmul_fwd(&ctx, out, x, w, NULL, S, S, S, 0), 0, "%s", ctx.err.msg);
    double worst = 0;
    for (int i = 0; i < S; i += 7)
        for (int j = 0; j < S; j += 5) {
            double s = 0;
            for (int p = 0; p < S; p++) s += (double)x[i * S + p] * w[j * S + p];
            worst = fmax(worst, fabs(out[i * S + j] - s) / fmax(fabs(s), 1.0));
        }
    cr_expect(worst <= 5e-5, "512^3: max err %.3g relative to max(|ref|, 1) > 5e-5", worst);
    free(x), free(w), free(out);
}

typedef struct fd_state {
    rl_ctx *ctx;
    float *x, *w, *b, *dout, *out;
    int m, n, k;
} fd_state;

static double fd_loss(void *user)
{
    fd_state *s = user;
    cr_assert_eq(rl_matmul_fwd(s->ctx, s->out, s->x, s->w, s->b, s->m, s->n, s->k, 0), 0);
    return fx_dot(s->dout, s->out, (size_t)s->m * s->n);
}

Test(matmul, finite_differences)
{
    enum { FM = 3, FN = 5, FK = 7 };
    rl_ctx ctx = fx_cpu();
    float x[FM * FK], w[FN * FK], b[FN], dout[FM * FN], out[FM * FN];
    float din[FM * FK], dw[FN * FK] = {0}, db[FN] = {0};
    tu_fill_uniform(x, FM * FK, -1, 1, 41);
    tu_fill_uniform(w, FN * FK, -1, 1, 42);
    tu_fill_uniform(b, FN, -1, 1, 43);
    tu_fill_uniform(dout, FM * FN, -1, 1, 44);
    cr_assert_eq(rl_matmul_bwd(&ctx, din, dw, db, dout, x, w, FM, FN, FK, 0), 0, "%s", ctx.err.msg);
    fd_state s = {&ctx, x, w, b, dout, out, FM, FN, FK};
    fx_check_fd("matmul din", x, FM * FK, din, fd_loss, &s, 1e-2f, 1e-4);
    fx_check_fd("matmul dweight", w, FN * FK, dw, fd_loss, &s, 1e-2f, 1e-4);
    fx_check_fd("matmul dbias", b, FN, db, fd_loss, &s, 1e-2f, 1e-4);
}

/* Each thread owns its C tiles, so 1, 2 and 3 threads give bit-identical results (a race in
 * the weight-gradient sums would not). */
Test(matmul, same_bits_for_any_thread_count)
{
    enum { TM = 131, TN = 290, TK = 77 };
    rl_ctx ctx = fx_cpu();
    float *x = malloc(TM * TK * sizeof *x), *w = malloc(TN * TK * sizeof *w), *dy = malloc(TM * TN * sizeof *dy);
    tu_fill_uniform(x, TM * TK, -1, 1, 51);
    tu_fill_uniform(w, TN * TK, -1, 1, 52);
    tu_fill_uniform(dy, TM * TN, -1, 1, 53);
    float bias[TN];
    tu_fill_uniform(bias, TN, -1, 1, 54);
    float *out[3], *din[3], *dw[3], *db[3];
    for (int t = 0; t < 3; t++) {
        ctx.n_threads = t + 1;
        out[t] = fx_alloc_poisoned(TM * TN), din[t] = fx_alloc_poisoned(TM * TK);
        dw[t] = calloc(TN * TK, sizeof(float)), db[t] = calloc(TN, sizeof(float));
        cr_assert_eq(rl_matmul_fwd(&ctx, out[t], x, w, bias, TM, TN, TK, 0), 0, "%s", ctx.err.msg);
        cr_assert_eq(rl_matmul_bwd(&ctx, din[t], dw[t], db[t], dy, x, w, TM, TN, TK, 0), 0, "%s", ctx.err.msg);
    }
    for (int t = 1; t < 3; t++) {
        cr_expect(memcmp(out[0], out[t], TM * TN * sizeof(float)) == 0, "out differs with %d threads", t + 1);
        cr_expect(memcmp(din[0], din[t], TM * TK * sizeof(float)) == 0, "din differs with %d threads", t + 1);
        cr_expect(memcmp(dw[0], dw[t], TN * TK * sizeof(float)) == 0, "dweight differs with %d threads", t + 1);
        cr_expect(memcmp(db[0], db[t], TN * sizeof(float)) == 0, "dbias differs with %d threads", t + 1);
    }
    for (int t = 0; t < 3; t++) free(out[t]), free(din[t]), free(dw[t]), free(db[t]);
    free(x), free(w), free(dy);
}

/* The fused forms are the two ops one after the other: the same bits as running them so, and
 * the intermediate (xn and rstd, act) written as the first op writes it. */
Test(matmul, fused_forms_are_the_two_ops)
{
    enum { FM = 5, FN = 33, FK = 40 };
    rl_ctx ctx = fx_cpu();
    float x[FM * 2 * FK], nw[FK], w[FN * FK], bias[FN], res[FM * FN];
    tu_fill_uniform(x, FM * 2 * FK, -2, 2, 61);
    tu_fill_uniform(nw, FK, 0.5f, 1.5f, 62);
    tu_fill_uniform(w, FN * FK, -1, 1, 63);
    tu_fill_uniform(bias, FN, -1, 1, 64);
    tu_fill_uniform(res, FM * FN, -1, 1, 65);
    float *out = fx_alloc_poisoned(FM * FN), *ref = fx_alloc_poisoned(FM * FN);
    float *xn = fx_alloc_poisoned(FM * FK), *xn_ref = fx_alloc_poisoned(FM * FK), rstd[FM], rstd_ref[FM];
    cr_assert_eq(rl_rmsnorm_matmul_fwd(&ctx, out, xn, rstd, x, nw, 1e-6f, w, bias, FM, FN, FK), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_rmsnorm_fwd(&ctx, xn_ref, rstd_ref, x, nw, FM, FK, 1e-6f), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_matmul_fwd(&ctx, ref, xn_ref, w, bias, FM, FN, FK, 0), 0, "%s", ctx.err.msg);
    cr_expect(memcmp(out, ref, sizeof(float) * FM * FN) == 0, "rmsnorm_matmul out differs from the two ops");
    cr_expect(memcmp(xn, xn_ref, sizeof(float) * FM * FK) == 0, "rmsnorm_matmul xn differs from rmsnorm_fwd's");
    cr_expect(memcmp(rstd, rstd_ref, sizeof rstd) == 0, "rmsnorm_matmul rstd differs from rmsnorm_fwd's");

    /* SwiGLU from the fused gate|up layout (in_stride 2 k), in place on the residual */
    float *act = fx_alloc_poisoned(FM * FK), *act_ref = fx_alloc_poisoned(FM * FK);
    float out2[FM * FN], ref2[FM * FN];
    memcpy(out2, res, sizeof res);
    cr_assert_eq(rl_swiglu_matmul_residual_fwd(&ctx, out2, act, out2, x, x + FK, 2 * FK, w, FM, FN, FK), 0, "%s",
                 ctx.err.msg);
    cr_assert_eq(rl_swiglu_fwd(&ctx, act_ref, x, x + FK, FM, FK, 2 * FK), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_matmul_residual_fwd(&ctx, ref2, res, act_ref, w, FM, FN, FK), 0, "%s", ctx.err.msg);
    cr_expect(memcmp(out2, ref2, sizeof ref2) == 0, "swiglu_matmul_residual out differs from the two ops");
    cr_expect(memcmp(act, act_ref, sizeof(float) * FM * FK) == 0, "swiglu_matmul_residual act differs");

    /* the product added to the residual and the norm of the sum, in place on the residual */
    float out3[FM * FN], ref3[FM * FN], nw3[FN];
    float *xn3 = fx_alloc_poisoned(FM * FN), *xn3_ref = fx_alloc_poisoned(FM * FN);
    tu_fill_uniform(nw3, FN, 0.5f, 1.5f, 66);
    memcpy(out3, res, sizeof res);
    cr_assert_eq(rl_matmul_residual_rmsnorm_fwd(&ctx, out3, xn3, rstd, out3, x, w, nw3, 1e-6f, FM, FN, FK), 0, "%s",
                 ctx.err.msg);
    cr_assert_eq(rl_matmul_residual_fwd(&ctx, ref3, res, x, w, FM, FN, FK), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_rmsnorm_fwd(&ctx, xn3_ref, rstd_ref, ref3, nw3, FM, FN, 1e-6f), 0, "%s", ctx.err.msg);
    cr_expect(memcmp(out3, ref3, sizeof ref3) == 0, "matmul_residual_rmsnorm out differs from the two ops");
    cr_expect(memcmp(xn3, xn3_ref, sizeof(float) * FM * FN) == 0, "matmul_residual_rmsnorm xn differs");
    cr_expect(memcmp(rstd, rstd_ref, sizeof rstd) == 0, "matmul_residual_rmsnorm rstd differs");
    free(out), free(ref), free(xn), free(xn_ref), free(act), free(act_ref), free(xn3), free(xn3_ref);
}
