/* test_embedding.c — embedding lookup and its gradient with repeated ids (adds into a non-zero
 * dtable) against torch index_add_, bad ids. Gathers are exact; the repeated-id sums get 1e-6
 * relative (floor 1e-3). */
#include "op_fixture.h"

enum { VOCAB = 50, DIM = 19, T = 31 };

Test(embedding, forward_and_backward_match_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("embedding");
    float *table = fx_get(st, "table", VOCAB * DIM), *ref = fx_get(st, "out", T * DIM);
    float *dout = fx_get(st, "dout", T * DIM), *ref_dt = fx_get(st, "dtable", VOCAB * DIM);
    int32_t *ids = fx_ints(st, "ids", T);
    float *out = fx_alloc_poisoned(T * DIM), *dt = malloc(VOCAB * DIM * sizeof *dt);
    cr_assert_eq(rl_embedding_fwd(&ctx, out, ids, table, T, DIM), 0, "%s", ctx.err.msg);
    fx_expect_close("out", out, ref, T * DIM, 0, 1e-3);
    tu_fill_uniform(dt, VOCAB * DIM, -1, 1, 9);
    for (int i = 0; i < VOCAB * DIM; i++) ref_dt[i] += dt[i];
    cr_assert_eq(rl_embedding_bwd(&ctx, dt, ids, dout, T, DIM), 0, "%s", ctx.err.msg);
    fx_expect_close("dtable (+=, repeated ids)", dt, ref_dt, VOCAB * DIM, 1e-6, 1e-3);
    free(table), free(ref), free(dout), free(ref_dt), free(ids), free(out), free(dt);
    rl_safetensors_close(st);
}

/* Repeated ids: threads own column blocks, so 1 and 3 threads agree bitwise (tokens x dim is
 * large enough for the backend to use several threads). */
Test(embedding, same_bits_for_any_thread_count)
{
    enum { V = 40, D = 300, NT = 257 };
    rl_ctx ctx = fx_cpu();
    float *dy = malloc(NT * D * sizeof *dy), *dt[2];
    int32_t ids[NT];
    tu_fill_uniform(dy, NT * D, -1, 1, 71);
    for (int t = 0; t < NT; t++) ids[t] = (t * 7) % 13; /* 13 distinct ids, each ~20 times */
    for (int t = 0; t < 2; t++) {
        ctx.n_threads = t == 0 ? 1 : 3;
        dt[t] = calloc(V * D, sizeof(float));
        cr_assert_eq(rl_embedding_bwd(&ctx, dt[t], ids, dy, NT, D), 0, "%s", ctx.err.msg);
    }
    cr_expect(memcmp(dt[0], dt[1], V * D * sizeof(float)) == 0, "dtable differs between 1 and 3 threads");
    free(dy), free(dt[0]), free(dt[1]);
}

Test(embedding, negative_id_is_refused)
{
    rl_ctx ctx = fx_cpu();
    float table[4] = {1, 2, 3, 4}, out[4];
    int32_t ids[2] = {1, -3};
    fx_expect_refused(&ctx, rl_embedding_fwd(&ctx, out, ids, table, 2, 2), "rl_embedding_fwd: ids[1] -3 is negative");
    fx_expect_refused(&ctx, rl_embedding_bwd(&ctx, table, ids, out, 2, 2), "rl_embedding_bwd: ids[1] -3 is negative");
}
