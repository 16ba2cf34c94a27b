/* test_ctx.c — the bridge from an op's ctx->err to a caller's rl_err (RL_TRY_OP, rl_ctx_error). */
#include "op_fixture.h"

/* A caller in the style of model/ and train/: two ops, the second refused. */
static int two_ops(rl_ctx *ctx, float *a, int *reached, rl_err *err)
{
    RL_TRY_OP(ctx, err, rl_scale(ctx, a, 2.0f, 2));
    *reached = 1;
    RL_TRY_OP(ctx, err, rl_add(ctx, a, NULL, 2));
    *reached = 2;
    return 0;
}

Test(ctx, try_op_returns_with_the_op_message)
{
    rl_ctx ctx = fx_cpu();
    float a[2] = {1, 2};
    int reached = 0;
    rl_err err = {"stale"};
    cr_expect_eq(two_ops(&ctx, a, &reached, &err), -1);
    cr_expect_eq(reached, 1, "RL_TRY_OP went on after a failure, or stopped before one");
    cr_expect_str_eq(err.msg, "rl_add: x is NULL");
    cr_expect(a[0] == 2 && a[1] == 4, "the first op did not run");
}

Test(ctx, ctx_error_copies_and_returns_minus_one)
{
    rl_ctx ctx = fx_cpu();
    rl_err err = {"stale"};
    cr_expect_eq(rl_sumsq(&ctx, NULL, NULL, 0), -1);
    cr_expect_eq(rl_ctx_error(&ctx, &err), -1);
    cr_expect_str_eq(err.msg, "rl_sumsq: out is NULL");
    cr_expect_eq(rl_ctx_error(&ctx, &ctx.err), -1, "the context's own error as the target");
    cr_expect_str_eq(ctx.err.msg, "rl_sumsq: out is NULL");
}
