/* test_embedding.c — CUDA embedding forward (exact copy) and backward (fp32 adds, repeated ids,
 * in token order) against the CPU op on random tables; the backward gives the same bits
 * in two identical calls. */
#include "gpu_util.h"

/* few: every id drawn from 5 (long runs of repeated ids). */
static void run_ids(int vocab, int dim, int n_tokens, uint64_t seed, int few)
{
    gu g;
    gu_begin(&g);
    float *table = gu_rand(&g, (size_t)vocab * dim, -1, 1, seed);
    int32_t *ids = gu_host(&g, n_tokens * sizeof(int32_t));
    rl_rng rng;
    rl_rng_init(&rng, seed + 1);
    for (int t = 0; t < n_tokens; t++) ids[t] = (int32_t)rl_rng_below(&rng, (uint32_t)(t % 3 && !few ? vocab : 5));
    int32_t *d_ids = gu_up_bytes(&g, ids, n_tokens * sizeof(int32_t));
    void *d_table = gu_up_bf16(&g, table, (size_t)vocab * dim);
    void *d_out = gu_nan_bf16(&g, (size_t)n_tokens * dim);
    GU_OK(&g, rl_embedding_fwd(&g.gpu, d_out, d_ids, d_table, n_tokens, dim));
    float *ref = gu_host(&g, (size_t)n_tokens * dim * sizeof(float));
    GU_CPU_OK(&g, rl_cpu_embedding_fwd(&g.cpu, ref, ids, table, n_tokens, dim));
    char what[96];
    snprintf(what, sizeof what, "embedding_fwd V%d D%d T%d", vocab, dim, n_tokens);
    gu_check(what, gu_get_bf16(&g, d_out, (size_t)n_tokens * dim), ref, (size_t)n_tokens * dim, 0.0);

    float *dout = gu_rand(&g, (size_t)n_tokens * dim, -1, 1, seed + 2);
    float *dtable = gu_rand(&g, (size_t)vocab * dim, -1, 1, seed + 3); /* adds onto existing values */
    float *d_dtable = gu_up_f32(&g, dtable, (size_t)vocab * dim);
    float *d_dtable2 = gu_up_f32(&g, dtable, (size_t)vocab * dim);
    void *d_dout = gu_up_bf16(&g, dout, (size_t)n_tokens * dim);
    GU_OK(&g, rl_embedding_bwd(&g.gpu, d_dtable, d_ids, d_dout, n_tokens, dim));
    GU_OK(&g, rl_embedding_bwd(&g.gpu, d_dtable2, d_ids, d_dout, n_tokens, dim));
    GU_CPU_OK(&g, rl_cpu_embedding_bwd(&g.cpu, dtable, ids, dout, n_tokens, dim));
    snprintf(what, sizeof what, "embedding_bwd V%d D%d T%d (fp32)", vocab, dim, n_tokens);
    float *got = gu_get_f32(&g, d_dtable, (size_t)vocab * dim);
    gu_check(what, got, dtable, (size_t)vocab * dim, 1e-5);
    /* repeated ids add in token order: two identical calls give the same bits */
    cr_expect(!memcmp(got, gu_get_f32(&g, d_dtable2, (size_t)vocab * dim), (size_t)vocab * dim * sizeof(float)),
              "%s: two identical calls differ", what);
    gu_end(&g);
}

static void run(int vocab, int dim, int n_tokens, uint64_t seed) { run_ids(vocab, dim, n_tokens, seed, 0); }

Test(gpu_embedding, small_odd) { run(37, 13, 50, 11); }
Test(gpu_embedding, vector_rows) { run(1000, 256, 777, 12); }
/* A training batch's shape: 4096 tokens of 5 ids (runs of ~700 rows), 1024 wide. */
Test(gpu_embedding, long_runs_of_repeated_ids) { run_ids(151, 1024, 4096, 13, 1); }
