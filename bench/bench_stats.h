/* bench_stats.h — the median the benchmarks report (header-only: each bench is one file). */
#ifndef RL_BENCH_STATS_H
#define RL_BENCH_STATS_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts x[n] in place and returns its median. */
static inline double bench_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, bench_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

#endif
