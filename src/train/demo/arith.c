/* arith.c — see arith.h. */
#include "train/demo/arith.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/rng.h"

int rl_arith_problems(rl_arith_problem **out, int *n, int lo, int hi, uint64_t seed, rl_err *err)
{
    *out = NULL;
    *n = 0;
    if (lo < 0 || hi < lo || hi > 9999)
        return rl_err_set(err, "arithmetic task: need 0 <= lo <= hi <= 9999, got lo %d, hi %d", lo, hi);
    int span = hi - lo + 1, count = span * span;
    rl_arith_problem *p = malloc((size_t)count * sizeof *p);
    if (!p) return rl_err_oom(err, "arithmetic task", (size_t)count * sizeof *p);
    for (int i = 0; i < count; i++) {
        p[i].a = lo + i / span;
        p[i].b = lo + i % span;
        snprintf(p[i].prompt, sizeof p[i].prompt, "What is %d+%d?", p[i].a, p[i].b);
        snprintf(p[i].answer, sizeof p[i].answer, "%d", p[i].a + p[i].b);
    }
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (int i = count - 1; i > 0; i--) {
        int j = (int)rl_rng_below(&rng, (uint32_t)i + 1);
        rl_arith_problem t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    *out = p;
    *n = count;
    return 0;
}
