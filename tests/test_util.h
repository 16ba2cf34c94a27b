/* test_util.h — shared helpers for the Criterion tests: fixture paths, random data, the
 * largest relative error of two arrays. Tests run from the repository root. */
#ifndef RL_TEST_UTIL_H
#define RL_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/rng.h"

/* Fresh random values in [lo, hi) (never all zeros), from a seed the test names. */
static inline void tu_fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed)
{
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rl_rng_uniform(&rng);
}

/* max_i |a - b| / (|b| + atol_floor): relative error with a floor so that tiny references do
 * not dominate. Also reports (through *max_abs, if given) the largest absolute difference. */
static inline double tu_max_rel_err(const float *a, const float *b, size_t n, double floor_abs,
                                    double *max_abs)
{
    double worst = 0, worst_abs = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d == d)) return INFINITY; /* NaN */
        double r = d / (fabs((double)b[i]) + floor_abs);
        if (r > worst) worst = r;
        if (d > worst_abs) worst_abs = d;
    }
    if (max_abs) *max_abs = worst_abs;
    return worst;
}

/* NaN poison so that an element an op forgot to write fails the comparison. */
static inline void tu_poison(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

#endif
