/* test_comm.c — the CPU communicator between real processes: every collective against a
 * sequential computation of the same values (sums bit-identical to adding the ranks in order,
 * at sizes that cross the chunk size and leave ragged tails), on 1, 2 and 3 ranks; and a rank
 * that dies in the middle of a run stops the others within seconds, whichever rank it is. */
#include <stdlib.h>

#include "dist/comm.h"
#include "ranks.h"

/* The value rank r contributes at index i: fresh, rank-dependent, never all zeros. */
static float val(int r, size_t i) { return (float)((i * 2654435761u + 97u * (unsigned)r) % 1000003u) / 1000003.0f - 0.5f; }

static int exercise(tr_rank *me, void *user)
{
    rl_ctx ctx;
    rl_dist d;
    rl_err err;
    if (rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err) || rl_dist_init(&d, &me->cfg, &ctx, "test=1\n", &err))
        return tr_fail(me, "init: %s", err.msg);
    rl_comm *c = d.comm;
    int W = me->world, R = me->rank;
    size_t n = ((size_t)1 << 21) + 4099; /* two chunks and a ragged tail */
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) a[i] = val(R, i);
    if (rl_comm_allreduce(c, a, n, &err)) return tr_fail(me, "allreduce: %s", err.msg);
    for (size_t i = 0; i < n; i++) {
        float want = val(0, i);
        for (int r = 1; r < W; r++) want += val(r, i);
        if (a[i] != want) return tr_fail(me, "allreduce: element %zu is %.9g, the ranks in order sum to %.9g", i, a[i], want);
    }
    /* reduce to the last rank, accumulating onto what it holds */
    int root = W - 1;
    for (size_t i = 0; i < n; i++) a[i] = val(R + 5, i), b[i] = 0.25f;
    if (rl_comm_reduce(c, b, a, n, root, 1, &err)) return tr_fail(me, "reduce: %s", err.msg);
    for (size_t i = 0; R == root && i < n; i++) {
        float sum = val(5, i);
        for (int r = 1; r < W; r++) sum += val(r + 5, i);
        if (b[i] != 0.25f + sum) return tr_fail(me, "reduce: element %zu is %.9g, want %.9g", i, b[i], 0.25f + sum);
    }
    for (size_t i = 0; R != root && i < n; i++)
        if (b[i] != 0.25f) return tr_fail(me, "reduce: rank %d (not the root) had its buffer changed", R);
    /* broadcast from the middle rank */
    int from = W / 2;
    for (size_t i = 0; i < n; i++) a[i] = R == from ? val(9, i) : -1.0f;
    if (rl_comm_broadcast(c, a, n * sizeof *a, from, &err)) return tr_fail(me, "broadcast: %s", err.msg);
    for (size_t i = 0; i < n; i++)
        if (a[i] != val(9, i)) return tr_fail(me, "broadcast: element %zu differs", i);
    /* allgatherv with uneven parts, the last one empty when there are several ranks */
    size_t off[TR_MAX_RANKS + 1] = {0};
    for (int r = 0; r < W; r++) off[r + 1] = r == W - 1 && W > 1 ? off[r] : off[r] + 1000 + 777 * (size_t)r;
    for (size_t i = 0; i < off[W]; i++) a[i] = i >= off[R] && i < off[R + 1] ? val(R, i) : NAN;
    if (rl_comm_allgatherv(c, a, off, sizeof(float), &err)) return tr_fail(me, "allgatherv: %s", err.msg);
    for (int r = 0; r < W; r++)
        for (size_t i = off[r]; i < off[r + 1]; i++)
            if (a[i] != val(r, i)) return tr_fail(me, "allgatherv: element %zu of rank %d's part differs", i, r);
    /* point to point with rank 0 */
    for (int r = 1; r < W; r++) {
        if (R == r) {
            for (size_t i = 0; i < 3000; i++) a[i] = val(r + 20, i);
            if (rl_comm_send(c, a, 3000 * sizeof *a, 0, &err)) return tr_fail(me, "send: %s", err.msg);
        } else if (R == 0) {
            if (rl_comm_recv(c, b, 3000 * sizeof *b, r, &err)) return tr_fail(me, "recv: %s", err.msg);
            for (size_t i = 0; i < 3000; i++)
                if (b[i] != val(r + 20, i)) return tr_fail(me, "recv from rank %d: element %zu differs", r, i);
        }
    }
    double x[3] = {R + 0.5, -R, 1}, y[2] = {R * 3.0, -R};
    if (rl_comm_host_reduce(c, x, 3, RL_COMM_SUM, &err) || rl_comm_host_reduce(c, y, 2, RL_COMM_MAX, &err))
        return tr_fail(me, "host reduce: %s", err.msg);
    double sum_r = W * (W - 1) / 2.0;
    if (x[0] != sum_r + 0.5 * W || x[1] != -sum_r || x[2] != W || y[0] != 3.0 * (W - 1) || y[1] != 0)
        return tr_fail(me, "host reduce: got %g %g %g / %g %g", x[0], x[1], x[2], y[0], y[1]);
    if (R > 0 && W > 2 && rl_comm_send(c, a, 4, R == 1 ? 2 : 1, &err) == 0)
        return tr_fail(me, "a send between two ranks other than 0 was accepted");
    free(a);
    free(b);
    if (rl_dist_finish(&d, 1, &err)) return tr_fail(me, "finish: %s", err.msg);
    rl_ctx_free(&ctx);
    return 0;
}

static void check_all(int world)
{
    tr_result res;
    tr_run(world, NULL, exercise, NULL, &res);
    for (int r = 0; r < world; r++) cr_assert_eq(res.status[r], 0, "rank %d of %d: %s", r, world, res.msg[r]);
}

Test(comm, collectives_one_rank) { check_all(1); }
Test(comm, collectives_two_ranks) { check_all(2); }
Test(comm, collectives_three_ranks) { check_all(3); }

/* The victim joins, then exits without a word while the others sit in an allreduce. */
static int die_in_the_middle(tr_rank *me, void *user)
{
    int victim = *(int *)user;
    rl_ctx ctx;
    rl_dist d;
    rl_err err;
    if (rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err) || rl_dist_init(&d, &me->cfg, &ctx, "test=1\n", &err))
        return tr_fail(me, "init: %s", err.msg);
    float x[16] = {1};
    if (rl_comm_allreduce(d.comm, x, 16, &err)) return tr_fail(me, "first allreduce: %s", err.msg);
    if (me->rank == victim) {
        usleep(300000);
        _exit(7);
    }
    for (int i = 0; i < 1000; i++)
        if (rl_comm_allreduce(d.comm, x, 16, &err) != 0) {
            rl_dist_finish(&d, 0, &err);
            return tr_fail(me, "stopped: %s", err.msg);
        }
    return tr_fail(me, "the allreduces went on without rank %d", victim);
}

static void check_death(int victim)
{
    tr_result res;
    tr_run(3, NULL, die_in_the_middle, &victim, &res);
    cr_assert_eq(res.status[victim], 7);
    for (int r = 0; r < 3; r++) {
        if (r == victim) continue;
        cr_assert_neq(res.status[r], 0, "rank %d kept going after rank %d died: %s", r, victim, res.msg[r]);
        cr_assert(res.status[r] < 128, "rank %d ended by a signal (%d), not by its error path", r, res.status[r]);
    }
    cr_assert(res.seconds < 8.0, "the ranks took %.1f s to stop after rank %d died", res.seconds, victim);
    printf("rank %d died: the others stopped after %.2f s (rank %d: %s)\n", victim, res.seconds, victim ? 0 : 1,
           res.msg[victim ? 0 : 1]);
}

Test(comm, death_of_rank_2_stops_the_others) { check_death(2); }
Test(comm, death_of_rank_0_stops_the_others) { check_death(0); }
