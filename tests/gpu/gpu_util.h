/* gpu_util.h — helpers for the CUDA-vs-CPU op tests: a CPU and a CUDA context side by side,
 * random inputs rounded to bf16 (so both backends see the same values), NaN-poisoned device
 * outputs, and an error check that reports the largest error.
 *
 * Every test draws fresh random data (never zeros), runs the CPU op (fp32 reference) and the
 * CUDA op on the same values, and compares with a tolerance stated at the call:
 * err = max_i |gpu_i - cpu_i| / (|cpu_i| + 0.1 rms(cpu)), the relative error with a floor at a
 * tenth of the typical magnitude (bf16 outputs of sums of cancelling terms need it). Tests skip
 * when no CUDA device is visible. Memory is tracked and freed by gu_end. */
#ifndef RL_TESTS_GPU_UTIL_H
#define RL_TESTS_GPU_UTIL_H

#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/ctx.h"
#include "backend/ops.h"
#include "core/dtype.h"
#include "io/config.h"
#include "test_util.h"

#define GU_MAX_PTRS 256

typedef struct gu {
    rl_ctx cpu, gpu;
    void *dev[GU_MAX_PTRS];
    void *host[GU_MAX_PTRS];
    int n_dev, n_host;
} gu;

static inline void gu_begin(gu *g)
{
    memset(g, 0, sizeof *g);
    if (!rl_cuda_available()) cr_skip_test("no CUDA device visible");
    rl_err err;
    cr_assert_eq(rl_ctx_create(&g->gpu, RL_BACKEND_CUDA, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_ctx_create(&g->cpu, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
}

/* The same pair with the GPU context in the fp32 mode (backend/ctx.h: fp32 activations and
 * working weights, for small models); inputs then need no bf16 rounding (gu_rand_f32) and move
 * with the act helpers below. */
static inline void gu_begin_fp32(gu *g)
{
    gu_begin(g);
    rl_err err;
    cr_assert_eq(rl_ctx_set_precision(&g->gpu, RL_PRECISION_FP32, &err), 0, "%s", err.msg);
    cr_assert_eq(g->gpu.act_dtype, RL_F32);
}

static inline void gu_end(gu *g)
{
    for (int i = 0; i < g->n_dev; i++) rl_free(&g->gpu, g->dev[i]);
    for (int i = 0; i < g->n_host; i++) free(g->host[i]);
    rl_ctx_free(&g->gpu);
    rl_ctx_free(&g->cpu);
}

static inline void *gu_host(gu *g, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    cr_assert(p && g->n_host < GU_MAX_PTRS);
    g->host[g->n_host++] = p;
    return p;
}

static inline void *gu_dev(gu *g, size_t bytes)
{
    void *p = rl_alloc(&g->gpu, bytes);
    cr_assert(p && g->n_dev < GU_MAX_PTRS, "%s", g->gpu.err.msg);
    g->dev[g->n_dev++] = p;
    return p;
}

static inline void gu_round_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = rl_bf16_to_f32(rl_f32_to_bf16(x[i]));
}

/* Host array of n uniform values in [lo, hi), rounded to bf16. */
static inline float *gu_rand(gu *g, size_t n, float lo, float hi, uint64_t seed)
{
    float *x = gu_host(g, n * sizeof(float));
    tu_fill_uniform(x, n, lo, hi, seed);
    gu_round_bf16(x, n);
    return x;
}

static inline void *gu_up_bf16(gu *g, const float *h, size_t n)
{
    void *d = gu_dev(g, n * 2);
    cr_assert_eq(rl_upload_act(&g->gpu, d, h, n), 0, "%s", g->gpu.err.msg);
    return d;
}

/* Host array of n uniform values in [lo, hi), full fp32 (for the fp32 mode). */
static inline float *gu_rand_f32(gu *g, size_t n, float lo, float hi, uint64_t seed)
{
    float *x = gu_host(g, n * sizeof(float));
    tu_fill_uniform(x, n, lo, hi, seed);
    return x;
}

/* Activations in the GPU context's act dtype (bf16, or fp32 after gu_begin_fp32). */
static inline void *gu_up_act(gu *g, const float *h, size_t n)
{
    void *d = gu_dev(g, n * rl_dtype_size(g->gpu.act_dtype));
    cr_assert_eq(rl_upload_act(&g->gpu, d, h, n), 0, "%s", g->gpu.err.msg);
    return d;
}

static inline void *gu_up_bytes(gu *g, const void *h, size_t bytes)
{
    void *d = gu_dev(g, bytes);
    cr_assert_eq(rl_memcpy(&g->gpu, d, h, bytes, RL_H2D), 0, "%s", g->gpu.err.msg);
    return d;
}

static inline float *gu_up_f32(gu *g, const float *h, size_t n) { return gu_up_bytes(g, h, n * sizeof(float)); }

static inline void *gu_nan_bf16(gu *g, size_t n)
{
    float *h = gu_host(g, n * sizeof(float));
    tu_poison(h, n);
    return gu_up_bf16(g, h, n);
}

static inline float *gu_nan_f32(gu *g, size_t n)
{
    float *h = gu_host(g, n * sizeof(float));
    tu_poison(h, n);
    return gu_up_f32(g, h, n);
}

static inline void *gu_nan_act(gu *g, size_t n)
{
    float *h = gu_host(g, n * sizeof(float));
    tu_poison(h, n);
    return gu_up_act(g, h, n);
}

/* Downloads n activations of the act dtype (either) as fp32. */
static inline float *gu_get_bf16(gu *g, const void *d, size_t n)
{
    float *h = gu_host(g, n * sizeof(float));
    cr_assert_eq(rl_download_act(&g->gpu, h, d, n), 0, "%s", g->gpu.err.msg);
    return h;
}

static inline float *gu_get_f32(gu *g, const float *d, size_t n)
{
    float *h = gu_host(g, n * sizeof(float));
    cr_assert_eq(rl_memcpy(&g->gpu, h, d, n * sizeof(float), RL_D2H), 0, "%s", g->gpu.err.msg);
    return h;
}

static inline float *gu_copy(gu *g, const float *h, size_t n)
{
    float *c = gu_host(g, n * sizeof(float));
    memcpy(c, h, n * sizeof(float));
    return c;
}

/* Asserts the error (see the top of this file) is <= tol; prints it either way. */
static inline double gu_check(const char *what, const float *got, const float *ref, size_t n, double tol)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)ref[i] * ref[i];
    double rms = n ? sqrt(ss / n) : 0;
    double max_abs = 0;
    double err = tu_max_rel_err(got, ref, n, 0.1 * rms + 1e-30, &max_abs);
    fprintf(stderr, "[err] %-44s max err %.3g (tol %.3g), max abs %.3g\n", what, err, tol, max_abs);
    cr_assert(err <= tol, "%s: max error %.4g > tolerance %.4g (max abs diff %.4g, rms ref %.4g)", what, err, tol,
              max_abs, rms);
    return err;
}

/* For results that pass through bf16 intermediates (attention's P, lm_head's dz, as in
 * FlashAttention and torch's bf16 training): the norm-relative error ||got - ref|| / ||ref||
 * must be <= tol_norm (bf16 operands land between 1e-3 and 1e-2) and the elementwise error
 * above <= tol_max. */
static inline void gu_check_norm(const char *what, const float *got, const float *ref, size_t n, double tol_norm,
                                 double tol_max)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    if (!(rel == rel)) rel = INFINITY;
    fprintf(stderr, "[err] %-44s norm-relative err %.3g (tol %.3g)\n", what, rel, tol_norm);
    cr_assert(rel <= tol_norm, "%s: norm-relative error %.4g > tolerance %.4g", what, rel, tol_norm);
    gu_check(what, got, ref, n, tol_max);
}

#define GU_OK(g, expr) cr_assert_eq((expr), 0, "%s: %s", #expr, (g)->gpu.err.msg)
#define GU_CPU_OK(g, expr) cr_assert_eq((expr), 0, "%s: %s", #expr, (g)->cpu.err.msg)

/* A small model config with Qwen3-0.6B's head_dim 128 and a GQA group of 2 (the tensor-core
 * attention kernels), hidden 128, intermediate 256. */
static inline void gu_wide_heads(rl_model_config *cfg)
{
    cfg->head_dim = 128;
    cfg->n_heads = 4;
    cfg->n_kv_heads = 2;
    cfg->hidden_size = 128;
    cfg->intermediate_size = 256;
}

#endif
