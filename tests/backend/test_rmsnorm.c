/* test_rmsnorm.c — RMSNorm forward (out, rstd) and backward (dx overwrite and add, dweight +=)
 * against a float64 torch reference checked against transformers' Qwen3RMSNorm, finite
 * differences, bad arguments. fp32 tolerance: 1e-5 relative to max(|ref|, 0.1) (inputs and
 * outputs are O(1): near-zero elements keep the ~1e-7 absolute rounding of their O(1) terms);
 * the row sums over dim = 53 are accumulated in double. */
#include "op_fixture.h"

enum { ROWS = 37, DIM = 53 };

Test(rmsnorm, forward_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("rmsnorm");
    float *x = fx_get(st, "x", ROWS * DIM), *w = fx_get(st, "weight", DIM), *eps = fx_get(st, "eps", 1);
    float *ref = fx_get(st, "out", ROWS * DIM), *ref_rstd = fx_get(st, "rstd", ROWS);
    float *out = fx_alloc_poisoned(ROWS * DIM), *rstd = fx_alloc_poisoned(ROWS);
    cr_assert_eq(rl_rmsnorm_fwd(&ctx, out, rstd, x, w, ROWS, DIM, eps[0]), 0, "%s", ctx.err.msg);
    fx_expect_close("out", out, ref, ROWS * DIM, 1e-5, 0.1);
    fx_expect_close("rstd", rstd, ref_rstd, ROWS, 1e-5, 0.1);
    free(x), free(w), free(eps), free(ref), free(ref_rstd), free(out), free(rstd);
    rl_safetensors_close(st);
}

Test(rmsnorm, backward_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("rmsnorm");
    float *x = fx_get(st, "x", ROWS * DIM), *w = fx_get(st, "weight", DIM), *rstd = fx_get(st, "rstd", ROWS);
    float *dout = fx_get(st, "dout", ROWS * DIM), *ref_dx = fx_get(st, "dx", ROWS * DIM);
    float *ref_dw = fx_get(st, "dweight", DIM);
    float *dx = fx_alloc_poisoned(ROWS * DIM), *dw = malloc(DIM * sizeof *dw);
    tu_fill_uniform(dw, DIM, -1, 1, 5);
    for (int j = 0; j < DIM; j++) ref_dw[j] += dw[j];
    cr_assert_eq(rl_rmsnorm_bwd(&ctx, dx, dw, dout, x, w, rstd, ROWS, DIM, 0), 0, "%s", ctx.err.msg);
    fx_expect_close("dx", dx, ref_dx, ROWS * DIM, 1e-5, 0.1);
    fx_expect_close("dweight (+=)", dw, ref_dw, DIM, 1e-5, 0.1);
    /* accumulate_dx: dx += gradient (the residual stream's add folded in) */
    float *resid = malloc(ROWS * DIM * sizeof *resid);
    tu_fill_uniform(resid, ROWS * DIM, -1, 1, 6);
    memcpy(dx, resid, ROWS * DIM * sizeof *dx);
    for (int i = 0; i < ROWS * DIM; i++) ref_dx[i] += resid[i];
    cr_assert_eq(rl_rmsnorm_bwd(&ctx, dx, NULL, dout, x, w, rstd, ROWS, DIM, 1), 0, "%s", ctx.err.msg);
    fx_expect_close("dx (accumulate)", dx, ref_dx, ROWS * DIM, 1e-5, 0.1);
    free(x), free(w), free(rstd), free(dout), free(ref_dx), free(ref_dw), free(dx), free(dw), free(resid);
    rl_safetensors_close(st);
}

typedef struct fd_state {
    rl_ctx *ctx;
    float *x, *w, *dout, *out, *rstd;
} fd_state;

enum { FR = 3, FD = 7 };

static double fd_loss(void *user)
{
    fd_state *s = user;
    cr_assert_eq(rl_rmsnorm_fwd(s->ctx, s->out, s->rstd, s->x, s->w, FR, FD, 1e-6f), 0);
    return fx_dot(s->dout, s->out, FR * FD);
}

Test(rmsnorm, finite_differences)
{
    rl_ctx ctx = fx_cpu();
    float x[FR * FD], w[FD], dout[FR * FD], out[FR * FD], rstd[FR], dx[FR * FD], dw[FD] = {0};
    tu_fill_uniform(x, FR * FD, -2, 2, 1);
    tu_fill_uniform(w, FD, 0.5f, 1.5f, 2);
    tu_fill_uniform(dout, FR * FD, -1, 1, 3);
    fd_state s = {&ctx, x, w, dout, out, rstd};
    fd_loss(&s);
    cr_assert_eq(rl_rmsnorm_bwd(&ctx, dx, dw, dout, x, w, rstd, FR, FD, 0), 0, "%s", ctx.err.msg);
    fx_check_fd("rmsnorm dx", x, FR * FD, dx, fd_loss, &s, 1e-2f, 1e-3);
    fx_check_fd("rmsnorm dweight", w, FD, dw, fd_loss, &s, 1e-2f, 1e-3);
}

/* dweight is split by columns over threads: 1 and 3 threads agree bitwise (rows x dim is
 * large enough for the backend to use several threads). */
Test(rmsnorm, same_bits_for_any_thread_count)
{
    enum { R = 301, C = 131 };
    rl_ctx ctx = fx_cpu();
    float *x = malloc(R * C * sizeof *x), *w = malloc(C * sizeof *w), *dy = malloc(R * C * sizeof *dy);
    tu_fill_uniform(x, R * C, -2, 2, 61);
    tu_fill_uniform(w, C, 0.5f, 1.5f, 62);
    tu_fill_uniform(dy, R * C, -1, 1, 63);
    float *out[2], *rstd[2], *dx[2], *dw[2];
    for (int t = 0; t < 2; t++) {
        ctx.n_threads = t == 0 ? 1 : 3;
        out[t] = fx_alloc_poisoned(R * C), rstd[t] = fx_alloc_poisoned(R), dx[t] = fx_alloc_poisoned(R * C);
        dw[t] = calloc(C, sizeof(float));
        cr_assert_eq(rl_rmsnorm_fwd(&ctx, out[t], rstd[t], x, w, R, C, 1e-6f), 0, "%s", ctx.err.msg);
        cr_assert_eq(rl_rmsnorm_bwd(&ctx, dx[t], dw[t], dy, x, w, rstd[t], R, C, 0), 0, "%s", ctx.err.msg);
    }
    cr_expect(memcmp(out[0], out[1], R * C * sizeof(float)) == 0, "out differs between 1 and 3 threads");
    cr_expect(memcmp(dx[0], dx[1], R * C * sizeof(float)) == 0, "dx differs between 1 and 3 threads");
    cr_expect(memcmp(dw[0], dw[1], C * sizeof(float)) == 0, "dweight differs between 1 and 3 threads");
    for (int t = 0; t < 2; t++) free(out[t]), free(rstd[t]), free(dx[t]), free(dw[t]);
    free(x), free(w), free(dy);
}
