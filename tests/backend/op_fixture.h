/* op_fixture.h — helpers for the CPU op tests: a CPU context, reading the torch references that
 * tools/make_op_fixtures.py writes to tests/fixtures/ops/<family>.safetensors (integers are
 * stored as F32 there), comparing arrays with the max abs / rel errors in the message, a
 * central finite-difference check of a gradient against a scalar loss summed in double, and the
 * check that an op refuses bad arguments with the expected message. */
#ifndef RL_TESTS_OP_FIXTURE_H
#define RL_TESTS_OP_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "backend/ctx.h"
#include "backend/ops.h"
#include "io/safetensors.h"
#include "test_util.h"

static inline rl_ctx fx_cpu(void)
{
    rl_ctx ctx;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    ctx.n_threads = 2;
    return ctx;
}

static inline rl_safetensors *fx_open(const char *family)
{
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/ops/%s.safetensors", family);
    rl_safetensors *st = NULL;
    rl_err err;
    cr_assert_eq(rl_safetensors_open(&st, path, &err), 0, "%s (run tools/make_op_fixtures.py)", err.msg);
    return st;
}

/* A malloc'd fp32 copy of tensor `name`; numel, when not 0, must match. */
static inline float *fx_get(const rl_safetensors *st, const char *name, size_t numel)
{
    const rl_st_tensor *t = rl_safetensors_find(st, name);
    cr_assert_not_null(t, "fixture tensor '%s' is missing", name);
    size_t n = (size_t)rl_st_tensor_numel(t);
    cr_assert(numel == 0 || n == numel, "fixture tensor '%s' has %zu elements, expected %zu", name, n, numel);
    float *x = malloc((n ? n : 1) * sizeof *x);
    rl_safetensors_to_f32(t, x);
    return x;
}

static inline int32_t *fx_ints(const rl_safetensors *st, const char *name, size_t numel)
{
    float *f = fx_get(st, name, numel);
    size_t n = (size_t)rl_st_tensor_numel(rl_safetensors_find(st, name));
    int32_t *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)f[i];
    free(f);
    return x;
}

static inline float *fx_alloc_poisoned(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    tu_poison(x, n);
    return x;
}

/* Expects an op's refusal: rc -1 and exactly the message want (ops.h's one format,
 * "rl_<op>: <what> <value> <problem>"). */
static inline void fx_expect_refused(const rl_ctx *ctx, int rc, const char *want)
{
    cr_expect_eq(rc, -1, "accepted, expected the refusal \"%s\"", want);
    cr_expect_str_eq(ctx->err.msg, want);
}

/* Expects max |got - ref| / (|ref| + floor) <= rtol; the message names both errors. */
static inline void fx_expect_close(const char *what, const float *got, const float *ref, size_t n,
                                   double rtol, double floor_abs)
{
    double max_abs = 0;
    double rel = tu_max_rel_err(got, ref, n, floor_abs, &max_abs);
    cr_expect(rel <= rtol, "%s: max rel err %.3g (floor %.1g) > %.1g, max abs err %.3g", what, rel,
              floor_abs, rtol, max_abs);
}

/* Central differences of loss() with respect to each x[i], compared with grad[i]. The error is
 * measured against the largest |grad| (a gradient-scale relative error), because fp32 noise in
 * the loss limits the accuracy of small entries. */
typedef double (*fx_loss_fn)(void *user);

static inline void fx_check_fd(const char *what, float *x, size_t n, const float *grad,
                               fx_loss_fn loss, void *user, float h, double tol)
{
    double scale = 1e-6, worst = 0;
    size_t worst_i = 0;
    double worst_num = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(grad[i]));
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i], xp = x0 + h, xm = x0 - h;
        x[i] = xp;
        double lp = loss(user);
        x[i] = xm;
        double lm = loss(user);
        x[i] = x0;
        double num = (lp - lm) / ((double)xp - (double)xm);
        double err = fabs(num - grad[i]) / scale;
        if (!(err <= worst)) {
            worst = err;
            worst_i = i;
            worst_num = num;
        }
    }
    cr_expect(worst <= tol, "%s: finite differences disagree: element %zu numeric %.6g analytic %.6g "
              "(error %.3g of max |grad| %.3g, tol %.1g)", what, worst_i, worst_num,
              (double)grad[worst_i], worst, scale, tol);
}

/* sum_i w[i] * y[i] in double. */
static inline double fx_dot(const float *w, const float *y, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * y[i];
    return s;
}

#endif
