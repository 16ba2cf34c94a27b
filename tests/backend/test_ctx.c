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

/* The CPU computes in fp32 whatever is asked: auto and fp32 are accepted, bf16 is refused. */
Test(ctx, cpu_precision_is_fp32)
{
    rl_ctx ctx = fx_cpu();
    rl_err err = {""};
    cr_expect_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_AUTO, &err), 0, "%s", err.msg);
    cr_expect_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_FP32, &err), 0, "%s", err.msg);
    cr_expect_eq(ctx.act_dtype, RL_F32);
    cr_expect_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_BF16, &err), -1);
    cr_expect_str_eq(err.msg, "precision bf16: the CPU backend computes in fp32 only (bf16 needs --device cuda)");
    cr_expect_eq(ctx.act_dtype, RL_F32);
    cr_expect_str_eq(rl_ctx_precision_name(&ctx), "fp32");
    rl_ctx_pick_act_dtype(&ctx, 1000);
    cr_expect_eq(ctx.act_dtype, RL_F32, "the CPU is never under auto");
}

/* Auto precision's rule (what a CUDA context does when its first model is created; the rule
 * itself touches no device, so a context marked as CUDA is enough here): fp32 below
 * RL_FP32_AUTO_MAX_PARAMS parameters, bf16 from there, decided once. */
Test(ctx, auto_precision_picks_by_model_size_once)
{
    rl_ctx ctx = {.kind = RL_BACKEND_CUDA, .act_dtype = RL_BF16};
    rl_err err = {""};
    cr_assert_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_AUTO, &err), 0, "%s", err.msg);
    cr_expect_eq(ctx.act_dtype, RL_BF16, "nothing is picked before a model is");
    rl_ctx_pick_act_dtype(&ctx, RL_FP32_AUTO_MAX_PARAMS - 1);
    cr_expect_eq(ctx.act_dtype, RL_F32);
    cr_expect_str_eq(rl_ctx_precision_name(&ctx), "fp32");
    rl_ctx_pick_act_dtype(&ctx, (size_t)RL_FP32_AUTO_MAX_PARAMS * 100);
    cr_expect_eq(ctx.act_dtype, RL_F32, "a second model (reference, value) does not change it");

    cr_assert_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_AUTO, &err), 0, "%s", err.msg);
    rl_ctx_pick_act_dtype(&ctx, RL_FP32_AUTO_MAX_PARAMS);
    cr_expect_eq(ctx.act_dtype, RL_BF16, "Qwen3-0.6B-sized models stay bf16");

    cr_assert_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_FP32, &err), 0, "%s", err.msg);
    rl_ctx_pick_act_dtype(&ctx, (size_t)RL_FP32_AUTO_MAX_PARAMS * 100);
    cr_expect_eq(ctx.act_dtype, RL_F32, "forced fp32 holds for any size");
    cr_assert_eq(rl_ctx_set_precision(&ctx, RL_PRECISION_BF16, &err), 0, "%s", err.msg);
    rl_ctx_pick_act_dtype(&ctx, 1000);
    cr_expect_eq(ctx.act_dtype, RL_BF16, "forced bf16 holds for any size");
}
