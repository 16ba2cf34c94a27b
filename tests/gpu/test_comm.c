/* test_comm.c — the NCCL communicator on one GPU (a run of one rank: what a machine with one
 * GPU can check; the 2-GPU checks are scripts/dist-bench.sh). Every collective on fresh random
 * data against the values a single rank must produce, including the reduce that accumulates
 * (the accumulate kernel against a CPU sum), ordering through tickets, host reductions; then
 * data-parallel SFT through NCCL under ZeRO 1 and 2 against the plain single-GPU trainer.
 * Fails (does not skip) when NCCL cannot be loaded: the message says where it was looked for. */
#include <math.h>
#include <string.h>

#include "dist/dist.h"
#include "gpu_util.h"
#include "train/dp.h"
#include "train/sft.h"

#define SFT_MODEL "tests/fixtures/models/qwen3-tiny-untied"

static rl_dist_config one_rank(void)
{
    rl_dist_config c;
    memset(&c, 0, sizeof c);
    c.world = 1;
    c.local_world = 1;
    snprintf(c.master_addr, sizeof c.master_addr, "127.0.0.1");
    c.master_port = RL_DIST_DEFAULT_PORT;
    c.timeout_s = 10;
    return c;
}

Test(gpu_comm, nccl_collectives_on_one_rank)
{
    gu g;
    gu_begin(&g);
    rl_dist d;
    rl_err err;
    rl_dist_config cfg = one_rank();
    cr_assert_eq(rl_dist_init(&d, &cfg, &g.gpu, "test=1\n", &err), 0, "%s", err.msg);
    cr_assert_str_eq(d.comm->ops->name, "nccl");
    rl_comm *c = d.comm;
    size_t n = ((size_t)1 << 20) + 37;
    float *a = gu_host(&g, n * sizeof(float)), *b = gu_host(&g, n * sizeof(float));
    float *back = gu_host(&g, n * sizeof(float));
    tu_fill_uniform(a, n, -2, 2, 101);
    tu_fill_uniform(b, n, -2, 2, 102);
    float *da = gu_dev(&g, n * sizeof(float)), *db = gu_dev(&g, n * sizeof(float));
    cr_assert_eq(rl_memcpy(&g.gpu, da, a, n * sizeof(float), RL_H2D), 0);
    cr_assert_eq(rl_memcpy(&g.gpu, db, b, n * sizeof(float), RL_H2D), 0);

    /* one rank: the sum is the rank's own values; read back through a ticket wait */
    cr_assert_eq(rl_comm_allreduce(c, da, n, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_comm_wait(c, rl_comm_ticket(c), &err), 0, "%s", err.msg);
    cr_assert_eq(rl_memcpy(&g.gpu, back, da, n * sizeof(float), RL_D2H), 0);
    cr_assert(memcmp(back, a, n * sizeof(float)) == 0, "allreduce on one rank changed the values");

    /* reduce with accumulate: db += da (the accumulate kernel) */
    cr_assert_eq(rl_comm_reduce(c, db, da, n, 0, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_comm_wait(c, rl_comm_ticket(c), &err), 0, "%s", err.msg);
    cr_assert_eq(rl_memcpy(&g.gpu, back, db, n * sizeof(float), RL_D2H), 0);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)back[i] - (double)(b[i] + a[i])));
    printf("nccl reduce with accumulate: largest error %.3g (fp32 add, expect 0)\n", worst);
    cr_assert_eq(worst, 0.0);

    /* broadcast and allgatherv leave one rank's data as it is; host reductions */
    cr_assert_eq(rl_comm_broadcast(c, db, n * sizeof(float), 0, &err), 0, "%s", err.msg);
    size_t off[2] = {0, n};
    cr_assert_eq(rl_comm_allgatherv(c, db, off, sizeof(float), &err), 0, "%s", err.msg);
    cr_assert_eq(rl_comm_wait(c, rl_comm_ticket(c), &err), 0, "%s", err.msg);
    float *again = gu_host(&g, n * sizeof(float));
    cr_assert_eq(rl_memcpy(&g.gpu, again, db, n * sizeof(float), RL_D2H), 0);
    cr_assert(memcmp(again, back, n * sizeof(float)) == 0);
    double x[3] = {1.5, -2, 7}, y[3] = {3, 4, 5};
    cr_assert_eq(rl_comm_host_reduce(c, x, 3, RL_COMM_SUM, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_comm_host_reduce(c, y, 3, RL_COMM_MAX, &err), 0, "%s", err.msg);
    cr_assert(x[0] == 1.5 && x[1] == -2 && x[2] == 7 && y[0] == 3 && y[2] == 5);
    cr_assert_eq(rl_dist_finish(&d, 1, &err), 0, "%s", err.msg);
    gu_end(&g);
}

/* Per-step SFT losses on the GPU: plain (dp NULL) or through NCCL with ZeRO `zero`. */
static void sft_losses(rl_ctx *ctx, int zero, double *loss, int steps)
{
    rl_err err = {{0}};
    rl_model m;
    cr_assert_eq(rl_model_load(&m, ctx, SFT_MODEL, &err), 0, "%s", err.msg);
    static int32_t ids[6][14];
    rl_sft_example ex[6];
    rl_rng rng;
    rl_rng_init(&rng, 11);
    for (int i = 0; i < 6; i++) {
        int k = 9 + i;
        for (int t = 0; t < k; t++) ids[i][t] = (int32_t)rl_rng_below(&rng, (uint32_t)m.config.vocab_size);
        ex[i] = (rl_sft_example){ids[i], k, 3};
    }
    rl_dist d = {0};
    rl_dp *dp = NULL;
    rl_dist_config cfg = one_rank();
    if (zero >= 0) {
        cr_assert_eq(rl_dist_init(&d, &cfg, ctx, "test=1\n", &err), 0, "%s", err.msg);
        cr_assert_eq(rl_dp_create(&dp, d.comm, zero, &err), 0, "%s", err.msg);
    }
    rl_sft_config c = rl_sft_defaults();
    c.max_tokens = 32;
    c.grad_accum = 2;
    c.shuffle = 0;
    c.optim.schedule.peak = 3e-3;
    c.optim.dp = dp;
    rl_sft t;
    cr_assert_eq(rl_sft_create(&t, &m, ex, 6, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_sft_step(&t, &st, &err), 0, "%s", err.msg);
        loss[s] = st.loss;
    }
    rl_sft_free(&t);
    rl_dp_free(dp);
    if (zero >= 0) cr_assert_eq(rl_dist_finish(&d, 1, &err), 0, "%s", err.msg);
    rl_model_free(&m);
}

Test(gpu_comm, zero_1_and_2_through_nccl_match_the_plain_trainer)
{
    gu g;
    gu_begin(&g);
    enum { STEPS = 6 };
    double plain[STEPS], dp[STEPS];
    sft_losses(&g.gpu, -1, plain, STEPS);
    for (int zero = 1; zero <= 2; zero++) {
        sft_losses(&g.gpu, zero, dp, STEPS);
        double worst = 0;
        for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(dp[s] - plain[s]) / plain[s]);
        printf("ZeRO %d through NCCL on one GPU: losses %.5f -> %.5f, largest relative difference to plain %.2e\n",
               zero, dp[0], dp[STEPS - 1], worst);
        cr_assert(worst < 1e-3, "ZeRO %d: loss differs from the plain trainer's by %.2e", zero, worst);
    }
    gu_end(&g);
}
