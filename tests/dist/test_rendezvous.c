/* test_rendezvous.c — how ranks meet, and every way it can go wrong with a message that says
 * what to fix: different options on two ranks (named by the first differing line), an
 * unreachable MASTER_ADDR (the address and the time in the message, within the timeout), two
 * processes claiming one rank, disagreeing world sizes; and reading the launchers'
 * environments (torchrun-style, Open MPI, MPICH) with their malformed cases. */
#include <stdlib.h>
#include <time.h>

#include "dist/rendezvous.h"
#include "ranks.h"

typedef struct join_case {
    const char *text[TR_MAX_RANKS];
    int claimed_rank[TR_MAX_RANKS]; /* -1: its own */
    int claimed_world[TR_MAX_RANKS]; /* 0: the real one */
    const char *addr;
    int port;           /* 0: the run's */
    double timeout_s;
    double delay_s[TR_MAX_RANKS]; /* a late start */
} join_case;

static int join(tr_rank *me, void *user)
{
    const join_case *jc = user;
    rl_dist_config c = me->cfg;
    if (jc->claimed_rank[me->rank] >= 0) c.rank = jc->claimed_rank[me->rank];
    if (jc->claimed_world[me->rank]) c.world = jc->claimed_world[me->rank];
    if (jc->addr) snprintf(c.master_addr, sizeof c.master_addr, "%s", jc->addr);
    if (jc->port) c.master_port = jc->port;
    if (jc->timeout_s > 0) c.timeout_s = jc->timeout_s;
    if (jc->delay_s[me->rank] > 0) nanosleep(&(struct timespec){0, (long)(jc->delay_s[me->rank] * 1e9)}, NULL);
    rl_ctx ctx;
    rl_dist d;
    rl_err err;
    rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err);
    if (rl_dist_init(&d, &c, &ctx, jc->text[me->rank] ? jc->text[me->rank] : "steps=5\n", &err) != 0)
        return tr_fail(me, "%s", err.msg);
    rl_dist_finish(&d, 1, &err);
    return tr_fail(me, "joined");
}

static join_case plain(void)
{
    join_case jc;
    memset(&jc, 0, sizeof jc);
    for (int r = 0; r < TR_MAX_RANKS; r++) jc.claimed_rank[r] = -1;
    return jc;
}

Test(rendezvous, same_configuration_joins)
{
    join_case jc = plain();
    tr_result res;
    tr_run(3, NULL, join, &jc, &res);
    for (int r = 0; r < 3; r++) cr_assert_str_eq(res.msg[r], "joined", "rank %d: %s", r, res.msg[r]);
}

Test(rendezvous, different_options_are_named)
{
    join_case jc = plain();
    jc.text[0] = "model=m\nlr=0.001\nsteps=5\n";
    jc.text[1] = "model=m\nlr=0.001\nsteps=5\n";
    jc.text[2] = "model=m\nlr=0.002\nsteps=5\n";
    jc.delay_s[1] = 0.5; /* rank 1 arrives after rank 0 has found the difference: it still hears it */
    tr_result res;
    tr_run(3, NULL, join, &jc, &res);
    for (int r = 0; r < 3; r++) {
        cr_assert_neq(res.status[r], 0, "rank %d joined a run with mismatched options", r);
        cr_assert(strstr(res.msg[r], "rank 2's run configuration differs from rank 0's") &&
                      strstr(res.msg[r], "'lr=0.001'") && strstr(res.msg[r], "'lr=0.002'"),
                  "rank %d: %s", r, res.msg[r]);
    }
    printf("mismatch message: %s\n", res.msg[1]);
}

Test(rendezvous, unreachable_master_times_out_naming_the_address)
{
    join_case jc = plain();
    int port = tr_free_port(); /* nobody listens there */
    jc.port = port;
    jc.timeout_s = 1.5;
    int run[2] = {0, 1};
    tr_result res;
    tr_run(2, run, join, &jc, &res);
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    cr_assert_neq(res.status[1], 0);
    cr_assert(strstr(res.msg[1], want) && strstr(res.msg[1], "within 1.5 s"), "%s", res.msg[1]);
    cr_assert(res.seconds >= 1.4 && res.seconds < 5, "gave up after %.2f s, timeout 1.5 s", res.seconds);
    printf("unreachable: %s\n", res.msg[1]);

    jc.addr = "no-such-host.invalid";
    jc.timeout_s = 0.5;
    tr_run(2, run, join, &jc, &res);
    cr_assert(strstr(res.msg[1], "no-such-host.invalid") && strstr(res.msg[1], "resolve"), "%s", res.msg[1]);
}

Test(rendezvous, rank_0_waits_for_missing_ranks_with_a_timeout)
{
    join_case jc = plain();
    jc.timeout_s = 1.0;
    int run[3] = {1, 1, 0};
    tr_result res;
    tr_run(3, run, join, &jc, &res);
    cr_assert_neq(res.status[0], 0);
    cr_assert(strstr(res.msg[0], "rank(s) 2 of 3"), "%s", res.msg[0]);
    cr_assert(strstr(res.msg[1], "refused"), "rank 1 should hear why: %s", res.msg[1]);
}

Test(rendezvous, duplicate_ranks_and_world_sizes_are_refused)
{
    join_case jc = plain();
    jc.claimed_rank[2] = 1;
    jc.timeout_s = 3;
    tr_result res;
    tr_run(3, NULL, join, &jc, &res);
    cr_assert(strstr(res.msg[0], "two processes claim rank 1"), "%s", res.msg[0]);

    jc = plain();
    jc.claimed_world[1] = 4;
    jc.timeout_s = 3;
    tr_run(2, NULL, join, &jc, &res);
    cr_assert(strstr(res.msg[0], "rank 1 says the run has 4 ranks (WORLD_SIZE), rank 0 has 2"), "%s", res.msg[0]);
    cr_assert_neq(res.status[1], 0);
}

static void clear_env(void)
{
    const char *names[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                           "RLC_DIST_TIMEOUT", "RLC_DIST_LAUNCHER", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE",
                           "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unsetenv(names[i]);
}

Test(rendezvous, launcher_environments)
{
    rl_dist_config c;
    rl_err err;
    clear_env();
    cr_assert_eq(rl_dist_from_env(&c, &err), 0, "no launcher: a single process");

    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "node0", 1);
    setenv("MASTER_PORT", "29611", 1);
    setenv("RLC_DIST_TIMEOUT", "12.5", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), 1, "%s", err.msg);
    cr_assert(c.rank == 3 && c.world == 8 && c.local_rank == 1 && c.local_world == 2 && c.master_port == 29611);
    cr_assert_str_eq(c.master_addr, "node0");
    cr_assert_eq(c.timeout_s, 12.5);

    setenv("RANK", "8", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), -1);
    cr_assert(strstr(err.msg, "RANK=8 is not a rank of WORLD_SIZE=8"), "%s", err.msg);
    setenv("RANK", "x1", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), -1);
    cr_assert(strstr(err.msg, "RANK='x1'"), "%s", err.msg);
    setenv("RANK", "1", 1);
    setenv("MASTER_PORT", "70000", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), -1);
    cr_assert(strstr(err.msg, "MASTER_PORT=70000"), "%s", err.msg);
    setenv("MASTER_PORT", "29611", 1);
    unsetenv("MASTER_ADDR");
    cr_assert_eq(rl_dist_from_env(&c, &err), -1, "8 ranks over machines of 2 need MASTER_ADDR");
    cr_assert(strstr(err.msg, "MASTER_ADDR is not set"), "%s", err.msg);
    setenv("RLC_DIST_TIMEOUT", "soon", 1);
    setenv("MASTER_ADDR", "node0", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), -1);
    cr_assert(strstr(err.msg, "RLC_DIST_TIMEOUT='soon'"), "%s", err.msg);

    clear_env();
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), 1, "%s", err.msg);
    cr_assert(c.rank == 1 && c.world == 2 && c.local_rank == 1 && c.master_port == RL_DIST_DEFAULT_PORT);
    cr_assert_str_eq(c.master_addr, "127.0.0.1", "every rank on this machine: rank 0 is here");
    cr_assert(strstr(c.launcher, "Open MPI"), "%s", c.launcher);

    clear_env();
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "4", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), -1, "no local size: the ranks may span machines");
    setenv("MPI_LOCALRANKID", "0", 1);
    setenv("MPI_LOCALNRANKS", "4", 1);
    cr_assert_eq(rl_dist_from_env(&c, &err), 1, "%s", err.msg);
    cr_assert(c.rank == 0 && c.world == 4 && c.local_rank == 0);
    clear_env();
}
