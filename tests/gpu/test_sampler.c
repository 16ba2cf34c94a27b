/* test_sampler.c — the CUDA sampler draws the same token as the CPU sampler for the same
 * (seed, step, row), for greedy, plain temperature, top-k, top-p, min-p and all together, at a
 * small, an odd (a chunk of the CUDA sampler plus a few ids) and the real Qwen3 vocabulary
 * (bf16-valued logits, so ties occur); rows of one call with different parameters each; one
 * row alone; a full decode batch. Tokens must match exactly; logp (fp32) to 1e-5. */
#include "gpu_util.h"

/* Row r draws with configs[r % n_configs]. */
static void run_rows(int n_rows, int vocab, const rl_sample_row *configs, int n_configs, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    size_t n = (size_t)n_rows * vocab;
    float *logits = gu_rand(&g, n, -6, 6, seed);
    float *d_logits = gu_up_f32(&g, logits, n);
    int32_t *d_tok = gu_dev(&g, n_rows * sizeof(int32_t));
    float *d_logp = gu_nan_f32(&g, n_rows);
    rl_sample_row *rows = gu_host(&g, n_rows * sizeof *rows);
    for (int r = 0; r < n_rows; r++) {
        rows[r] = configs[r % n_configs];
        rows[r].seed = seed * 7919;
        rows[r].step = (uint32_t)(0x12345678u + seed);
        rows[r].row = (uint32_t)r;
    }
    rl_sample_row *d_rows = gu_dev(&g, n_rows * sizeof *rows);
    cr_assert_eq(rl_memcpy(&g.gpu, d_rows, rows, n_rows * sizeof *rows, RL_H2D), 0);
    GU_OK(&g, rl_sample(&g.gpu, d_tok, d_logp, d_logits, n_rows, vocab, d_rows));
    int32_t *tok = gu_host(&g, n_rows * sizeof(int32_t)), *tok_gpu = gu_host(&g, n_rows * sizeof(int32_t));
    float *logp = gu_host(&g, n_rows * 4);
    GU_CPU_OK(&g, rl_cpu_sample(&g.cpu, tok, logp, logits, n_rows, vocab, rows));
    cr_assert_eq(rl_memcpy(&g.gpu, tok_gpu, d_tok, n_rows * sizeof(int32_t), RL_D2H), 0);
    int mismatches = 0, distinct = 0;
    for (int r = 0; r < n_rows; r++) {
        mismatches += tok[r] != tok_gpu[r];
        distinct += r > 0 && tok[r] != tok[r - 1];
    }
    char what[128];
    const rl_sample_row p = configs[0];
    if (n_configs == 1)
        snprintf(what, sizeof what, "sample R%d V%d T%g k%d p%g minp%g logp", n_rows, vocab, p.temperature, p.top_k,
                 p.top_p, p.min_p);
    else
        snprintf(what, sizeof what, "sample R%d V%d %d configs mixed logp", n_rows, vocab, n_configs);
    fprintf(stderr, "[err] %s: %d/%d tokens differ\n", what, mismatches, n_rows);
    cr_assert_eq(mismatches, 0, "%s: %d of %d tokens differ from the CPU sampler", what, mismatches, n_rows);
    gu_check(what, gu_get_f32(&g, d_logp, n_rows), logp, n_rows, 1e-5);
    gu_end(&g);
}

static void run(int n_rows, int vocab, rl_sample_row p, uint64_t seed) { run_rows(n_rows, vocab, &p, 1, seed); }

static const rl_sample_row greedy = {.temperature = 0.0f, .top_p = 1.0f},
                           plain = {.temperature = 0.8f, .top_p = 1.0f},
                           top_k = {.temperature = 1.0f, .top_k = 50, .top_p = 1.0f},
                           top_p = {.temperature = 0.9f, .top_p = 0.9f},
                           min_p = {.temperature = 1.2f, .top_p = 1.0f, .min_p = 0.05f},
                           all = {.temperature = 0.7f, .top_k = 40, .top_p = 0.8f, .min_p = 0.02f},
                           tight = {.temperature = 1.0f, .top_p = 0.05f};

Test(gpu_sampler, small_vocab)
{
    run(64, 1000, greedy, 1);
    run(64, 1000, plain, 2);
    run(64, 1000, top_k, 3);
    run(64, 1000, top_p, 4);
    run(64, 1000, min_p, 5);
    run(64, 1000, all, 6);
    run(64, 1000, tight, 7);
}

Test(gpu_sampler, qwen_vocab)
{
    run(8, 151936, greedy, 11);
    run(8, 151936, plain, 12);
    run(8, 151936, top_k, 13);
    run(8, 151936, top_p, 14);
    run(8, 151936, all, 16);
}

Test(gpu_sampler, odd_vocab_and_one_row)
{
    run(16, 8197, plain, 21);
    run(16, 8197, top_p, 22);
    run(16, 8197, all, 23);
    run(1, 151936, plain, 24);
    run(1, 151936, greedy, 25);
    run(1, 151936, top_k, 26);
    run(1, 151936, tight, 27);
}

Test(gpu_sampler, rows_with_their_own_parameters)
{
    const rl_sample_row configs[] = {greedy, plain, top_k, top_p, min_p, all, tight};
    run_rows(70, 3001, configs, 7, 31);
    run_rows(14, 151936, configs, 7, 32);
}

Test(gpu_sampler, full_decode_batch)
{
    run(256, 151936, plain, 41);
    run(256, 151936, greedy, 42);
}

Test(gpu_sampler, bad_shape)
{
    gu g;
    gu_begin(&g);
    cr_assert_eq(rl_sample(&g.gpu, NULL, NULL, NULL, 1, 10, NULL), -1);
    cr_assert_str_eq(g.gpu.err.msg, "rl_sample: tokens is NULL");
    gu_end(&g);
}
