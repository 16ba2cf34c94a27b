/* test_arith.c — the demo's addition task: every pair once, true sums, a deterministic
 * shuffle (the held-out split depends only on the seed), range checks. */
#include <string.h>

#include "train/demo/arith.h"
#include "test_util.h"

Test(arith, all_pairs_once_with_true_sums)
{
    rl_arith_problem *p, *q;
    int n, m;
    rl_err err;
    cr_assert_eq(rl_arith_problems(&p, &n, 3, 12, 7, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 100);
    int seen[10][10] = {{0}};
    for (int i = 0; i < n; i++) {
        cr_assert(p[i].a >= 3 && p[i].a <= 12 && p[i].b >= 3 && p[i].b <= 12);
        seen[p[i].a - 3][p[i].b - 3]++;
        char want[48];
        snprintf(want, sizeof want, "What is %d+%d?", p[i].a, p[i].b);
        cr_assert_str_eq(p[i].prompt, want);
        cr_assert_eq(atoi(p[i].answer), p[i].a + p[i].b);
    }
    for (int a = 0; a < 10; a++)
        for (int b = 0; b < 10; b++) cr_assert_eq(seen[a][b], 1);
    cr_assert_eq(rl_arith_problems(&q, &m, 3, 12, 7, &err), 0);
    cr_assert(memcmp(p, q, (size_t)n * sizeof *p) == 0, "same seed, different order");
    free(q);
    cr_assert_eq(rl_arith_problems(&q, &m, 3, 12, 8, &err), 0);
    cr_assert(memcmp(p, q, (size_t)n * sizeof *p) != 0, "the seed does not matter");
    free(q);
    free(p);
    cr_assert_eq(rl_arith_problems(&p, &n, 5, 4, 1, &err), -1);
    cr_assert(strstr(err.msg, "lo 5, hi 4"), "%s", err.msg);
}
