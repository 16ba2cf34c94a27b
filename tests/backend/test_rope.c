/* test_rope.c — rotary embedding (split-half, transformers' apply_rotary_pos_emb) forward and
 * backward against torch, the round trip fwd then bwd, finite differences, bad arguments.
 * Positions go up to 4000: the fp32 angle is formed exactly as transformers does, and cos/sin
 * of it are accurate to ~1 ulp, so 1e-5 relative to max(|ref|, 0.1) holds (O(1) data). */
#include "op_fixture.h"

enum { T = 23, H = 3, D = 38 };

Test(rope, forward_and_backward_match_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("rope");
    float *x = fx_get(st, "x", T * H * D), *inv_freq = fx_get(st, "inv_freq", D / 2);
    int32_t *pos = fx_ints(st, "positions", T);
    float *ref = fx_get(st, "out", T * H * D), *dout = fx_get(st, "dout", T * H * D);
    float *ref_dx = fx_get(st, "dx", T * H * D);
    cr_assert_eq(rl_rope_fwd(&ctx, x, pos, inv_freq, T, H, D), 0, "%s", ctx.err.msg);
    fx_expect_close("out", x, ref, T * H * D, 1e-5, 0.1);
    cr_assert_eq(rl_rope_bwd(&ctx, dout, pos, inv_freq, T, H, D), 0, "%s", ctx.err.msg);
    fx_expect_close("dx", dout, ref_dx, T * H * D, 1e-5, 0.1);
    free(x), free(inv_freq), free(pos), free(ref), free(dout), free(ref_dx);
    rl_safetensors_close(st);
}

Test(rope, backward_undoes_forward)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("rope");
    float *x = fx_get(st, "x", T * H * D), *inv_freq = fx_get(st, "inv_freq", D / 2);
    int32_t *pos = fx_ints(st, "positions", T);
    float *y = malloc(T * H * D * sizeof *y);
    memcpy(y, x, T * H * D * sizeof *y);
    cr_assert_eq(rl_rope_fwd(&ctx, y, pos, inv_freq, T, H, D), 0, "%s", ctx.err.msg);
    cr_assert_eq(rl_rope_bwd(&ctx, y, pos, inv_freq, T, H, D), 0, "%s", ctx.err.msg);
    fx_expect_close("bwd(fwd(x))", y, x, T * H * D, 1e-5, 0.1);
    free(x), free(inv_freq), free(pos), free(y);
    rl_safetensors_close(st);
}

typedef struct fd_state {
    rl_ctx *ctx;
    float *x, *y, *dout, *inv_freq;
    int32_t *pos;
} fd_state;

enum { FT = 3, FH = 2, FD = 6 };

static double fd_loss(void *user)
{
    fd_state *s = user;
    memcpy(s->y, s->x, FT * FH * FD * sizeof(float));
    cr_assert_eq(rl_rope_fwd(s->ctx, s->y, s->pos, s->inv_freq, FT, FH, FD), 0);
    return fx_dot(s->dout, s->y, FT * FH * FD);
}

Test(rope, finite_differences)
{
    rl_ctx ctx = fx_cpu();
    float x[FT * FH * FD], y[FT * FH * FD], dout[FT * FH * FD], dx[FT * FH * FD];
    float inv_freq[FD / 2] = {1.0f, 0.3f, 0.01f};
    int32_t pos[FT] = {0, 5, 17};
    tu_fill_uniform(x, FT * FH * FD, -1, 1, 1);
    tu_fill_uniform(dout, FT * FH * FD, -1, 1, 2);
    memcpy(dx, dout, sizeof dx);
    cr_assert_eq(rl_rope_bwd(&ctx, dx, pos, inv_freq, FT, FH, FD), 0, "%s", ctx.err.msg);
    fd_state s = {&ctx, x, y, dout, inv_freq, pos};
    fx_check_fd("rope dx", x, FT * FH * FD, dx, fd_loss, &s, 1e-2f, 1e-4);
}
