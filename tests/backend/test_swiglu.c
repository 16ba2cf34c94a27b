/* test_swiglu.c — SwiGLU forward and backward against torch (silu(gate) * up) on one fused
 * gate_up buffer (in_stride = 2 dim) and on separate buffers (in_stride = dim), finite
 * differences, bad arguments. fp32 tolerance 1e-5 relative to max(|ref|, 0.1): elementwise,
 * O(1) data. */
#include "op_fixture.h"

enum { ROWS = 29, DIM = 41 };

Test(swiglu, fused_layout_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("swiglu");
    float *gu = fx_get(st, "gate_up", ROWS * 2 * DIM), *ref = fx_get(st, "out", ROWS * DIM);
    float *dout = fx_get(st, "dout", ROWS * DIM), *ref_dgu = fx_get(st, "dgate_up", ROWS * 2 * DIM);
    float *out = fx_alloc_poisoned(ROWS * DIM), *dgu = fx_alloc_poisoned(ROWS * 2 * DIM);
    cr_assert_eq(rl_swiglu_fwd(&ctx, out, gu, gu + DIM, ROWS, DIM, 2 * DIM), 0, "%s", ctx.err.msg);
    fx_expect_close("out", out, ref, ROWS * DIM, 1e-5, 0.1);
    cr_assert_eq(rl_swiglu_bwd(&ctx, dgu, dgu + DIM, dout, gu, gu + DIM, ROWS, DIM, 2 * DIM), 0, "%s",
                 ctx.err.msg);
    fx_expect_close("dgate_up", dgu, ref_dgu, ROWS * 2 * DIM, 1e-5, 0.1);
    free(gu), free(ref), free(dout), free(ref_dgu), free(out), free(dgu);
    rl_safetensors_close(st);
}

Test(swiglu, separate_buffers_match_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("swiglu");
    float *gu = fx_get(st, "gate_up", ROWS * 2 * DIM), *ref = fx_get(st, "out", ROWS * DIM);
    float *dout = fx_get(st, "dout", ROWS * DIM), *ref_dgu = fx_get(st, "dgate_up", ROWS * 2 * DIM);
    float *gate = malloc(ROWS * DIM * sizeof *gate), *up = malloc(ROWS * DIM * sizeof *up);
    float *ref_dg = malloc(ROWS * DIM * sizeof *ref_dg), *ref_du = malloc(ROWS * DIM * sizeof *ref_du);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < DIM; j++) {
            gate[r * DIM + j] = gu[r * 2 * DIM + j];
            up[r * DIM + j] = gu[r * 2 * DIM + DIM + j];
            ref_dg[r * DIM + j] = ref_dgu[r * 2 * DIM + j];
            ref_du[r * DIM + j] = ref_dgu[r * 2 * DIM + DIM + j];
        }
    float *out = fx_alloc_poisoned(ROWS * DIM), *dg = fx_alloc_poisoned(ROWS * DIM), *du = fx_alloc_poisoned(ROWS * DIM);
    cr_assert_eq(rl_swiglu_fwd(&ctx, out, gate, up, ROWS, DIM, DIM), 0, "%s", ctx.err.msg);
    fx_expect_close("out", out, ref, ROWS * DIM, 1e-5, 0.1);
    cr_assert_eq(rl_swiglu_bwd(&ctx, dg, du, dout, gate, up, ROWS, DIM, DIM), 0, "%s", ctx.err.msg);
    fx_expect_close("dgate", dg, ref_dg, ROWS * DIM, 1e-5, 0.1);
    fx_expect_close("dup", du, ref_du, ROWS * DIM, 1e-5, 0.1);
    free(gu), free(ref), free(dout), free(ref_dgu), free(gate), free(up), free(ref_dg), free(ref_du);
    free(out), free(dg), free(du);
    rl_safetensors_close(st);
}

typedef struct fd_state {
    rl_ctx *ctx;
    float *gu, *dout, *out;
} fd_state;

enum { FR = 2, FD = 5 };

static double fd_loss(void *user)
{
    fd_state *s = user;
    cr_assert_eq(rl_swiglu_fwd(s->ctx, s->out, s->gu, s->gu + FD, FR, FD, 2 * FD), 0);
    return fx_dot(s->dout, s->out, FR * FD);
}

Test(swiglu, finite_differences)
{
    rl_ctx ctx = fx_cpu();
    float gu[FR * 2 * FD], dout[FR * FD], out[FR * FD], dgu[FR * 2 * FD];
    tu_fill_uniform(gu, FR * 2 * FD, -4, 4, 1);
    tu_fill_uniform(dout, FR * FD, -1, 1, 2);
    cr_assert_eq(rl_swiglu_bwd(&ctx, dgu, dgu + FD, dout, gu, gu + FD, FR, FD, 2 * FD), 0, "%s", ctx.err.msg);
    fd_state s = {&ctx, gu, dout, out};
    fx_check_fd("swiglu dgate_up", gu, FR * 2 * FD, dgu, fd_loss, &s, 1e-2f, 1e-3);
}
