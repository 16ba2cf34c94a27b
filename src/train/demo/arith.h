/* arith.h — the demo's task: two-number addition in words ("What is 23+58?" -> "81").
 *
 * Every pair (a, b) with lo <= a, b <= hi is one problem; the list is shuffled by seed so a
 * fixed-size prefix can be held out for evaluation and the rest used for training. The task is
 * built in C so the demo needs no data files. */
#ifndef RL_TRAIN_DEMO_ARITH_H
#define RL_TRAIN_DEMO_ARITH_H

#include <stdint.h>

#include "core/error.h"

typedef struct rl_arith_problem {
    int a, b;
    char prompt[48]; /* "What is 23+58?" */
    char answer[16]; /* "81" */
} rl_arith_problem;

/* *out (malloc'd) receives (hi - lo + 1)^2 problems in shuffled order. */
int rl_arith_problems(rl_arith_problem **out, int *n, int lo, int hi, uint64_t seed, rl_err *err);

#endif
