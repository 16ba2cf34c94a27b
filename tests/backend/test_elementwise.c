/* test_elementwise.c — add, scale and the double-precision sum of squares against plain loops
 * (exact for add and scale; sumsq to 1e-12 relative: the op sums in double). */
#include "op_fixture.h"

enum { N = 100003 };

Test(elementwise, add_scale_sumsq)
{
    rl_ctx ctx = fx_cpu();
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *ref = malloc(N * sizeof *ref);
    tu_fill_uniform(x, N, -1, 1, 1);
    tu_fill_uniform(y, N, -1, 1, 2);
    for (int i = 0; i < N; i++) ref[i] = y[i] + x[i];
    cr_assert_eq(rl_add(&ctx, y, x, N), 0, "%s", ctx.err.msg);
    fx_expect_close("add", y, ref, N, 0, 1e-3);
    for (int i = 0; i < N; i++) ref[i] = y[i] * 0.37f;
    cr_assert_eq(rl_scale(&ctx, y, 0.37f, N), 0, "%s", ctx.err.msg);
    fx_expect_close("scale", y, ref, N, 0, 1e-3);
    double want = 0, got = -1;
    for (int i = 0; i < N; i++) want += (double)y[i] * y[i];
    cr_assert_eq(rl_sumsq(&ctx, &got, y, N), 0, "%s", ctx.err.msg);
    cr_expect(fabs(got - want) <= 1e-12 * want, "sumsq %.17g, want %.17g", got, want);
    free(x), free(y), free(ref);
}
