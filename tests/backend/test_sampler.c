/* test_sampler.c — rl_sample: greedy is the argmax with ties to the lowest id; the same
 * (seed, step, row) gives the same token and the draw follows the documented Philox recipe;
 * each row draws with its own parameters, as it would alone;
 * 20000 draws match softmax(logits / T) (tolerance 0.015 absolute per token, > 4 standard
 * deviations of a frequency estimated from 20000 draws); top-k (ties kept), top-p
 * (renormalised after top-k), min-p never select an excluded token and sample the survivors in
 * proportion; logp is the log-probability before truncation; bad parameters. */
#include "op_fixture.h"

enum { DRAWS = 20000 };

/* n rows with the filters of p, key seed, counter (step, row r). */
static rl_sample_row *rows_of(rl_sample_row p, uint64_t seed, uint32_t step, int n)
{
    rl_sample_row *rows = malloc((size_t)n * sizeof *rows);
    for (int r = 0; r < n; r++) {
        rows[r] = p;
        rows[r].seed = seed;
        rows[r].step = step;
        rows[r].row = (uint32_t)r;
    }
    return rows;
}

static int sample(rl_ctx *ctx, int32_t *tok, float *logp, float *logits, int n, int vocab, rl_sample_row p,
                  uint64_t seed, uint32_t step)
{
    rl_sample_row *rows = rows_of(p, seed, step, n);
    int rc = rl_sample(ctx, tok, logp, logits, n, vocab, rows);
    free(rows);
    return rc;
}

/* log softmax(logits / t)[i] in double. */
static double log_softmax_at(const float *logits, int vocab, double t, int i)
{
    double m = -INFINITY, s = 0;
    for (int j = 0; j < vocab; j++) m = fmax(m, logits[j] / t);
    for (int j = 0; j < vocab; j++) s += exp(logits[j] / t - m);
    return logits[i] / t - m - log(s);
}

/* Draws DRAWS rows of the same logits; checks logp of every draw; returns the frequencies. */
static void draw_many(const float *row, int vocab, const rl_sample_row *p, uint64_t seed, double *freq)
{
    rl_ctx ctx = fx_cpu();
    float *logits = malloc((size_t)DRAWS * vocab * sizeof *logits), *logp = fx_alloc_poisoned(DRAWS);
    int32_t *tok = malloc(DRAWS * sizeof *tok);
    for (int r = 0; r < DRAWS; r++) memcpy(logits + (size_t)r * vocab, row, vocab * sizeof *row);
    cr_assert_eq(sample(&ctx, tok, logp, logits, DRAWS, vocab, *p, seed, 5), 0, "%s", ctx.err.msg);
    for (int i = 0; i < vocab; i++) freq[i] = 0;
    double worst = 0;
    for (int r = 0; r < DRAWS; r++) {
        cr_assert(tok[r] >= 0 && tok[r] < vocab, "row %d: token %d", r, tok[r]);
        freq[tok[r]] += 1.0 / DRAWS;
        worst = fmax(worst, fabs(logp[r] - log_softmax_at(row, vocab, p->temperature, tok[r])));
    }
    cr_expect(worst < 1e-5, "logp differs from log softmax(logits / T) by %.3g", worst);
    free(logits), free(logp), free(tok);
}

/* probs: the expected distribution after filtering (0 = excluded). */
static void expect_distribution(const char *what, const double *freq, const double *probs, int vocab)
{
    for (int i = 0; i < vocab; i++) {
        if (probs[i] == 0) cr_expect(freq[i] == 0, "%s: excluded token %d drawn (%.4f)", what, i, freq[i]);
        cr_expect(fabs(freq[i] - probs[i]) < 0.015, "%s: token %d frequency %.4f, expected %.4f", what, i, freq[i],
                  probs[i]);
    }
}

Test(sampler, greedy_is_argmax_lowest_id)
{
    rl_ctx ctx = fx_cpu();
    float logits[3 * 5] = {1, 3, 3, 2, -1, /* tie: 1 */ 0, 0, 0, 0, 0, /* all tied: 0 */ -5, -4, -3, -2, 7};
    float copy[15];
    memcpy(copy, logits, sizeof copy);
    int32_t tok[3] = {-1, -1, -1};
    float logp[3];
    rl_sample_row p = {.temperature = 0, .top_k = 2, .top_p = 0.5f, .min_p = 0.3f};
    cr_assert_eq(sample(&ctx, tok, logp, logits, 3, 5, p, 1, 2), 0, "%s", ctx.err.msg);
    int want[3] = {1, 0, 4};
    for (int r = 0; r < 3; r++) {
        cr_expect_eq(tok[r], want[r], "row %d: token %d, want %d", r, tok[r], want[r]);
        double lp = log_softmax_at(copy + 5 * r, 5, 1.0, want[r]);
        cr_expect(fabs(logp[r] - lp) < 1e-6, "row %d: logp %g, want %g (temperature 1)", r, logp[r], lp);
    }
}

Test(sampler, deterministic_and_follows_the_philox_recipe)
{
    enum { ROWS = 64, V = 7 };
    rl_ctx ctx = fx_cpu();
    float row[V], logits[ROWS * V], logp[ROWS];
    int32_t a[ROWS], b[ROWS], c[ROWS];
    tu_fill_uniform(row, V, -2, 2, 17);
    rl_sample_row p = {.temperature = 0.9f, .top_k = 0, .top_p = 1.0f, .min_p = 0};
    for (int pass = 0; pass < 3; pass++) {
        for (int r = 0; r < ROWS; r++) memcpy(logits + r * V, row, sizeof row);
        int32_t *out = pass == 0 ? a : pass == 1 ? b : c;
        cr_assert_eq(sample(&ctx, out, logp, logits, ROWS, V, p, 0x123456789abcull, pass == 2 ? 8 : 7), 0, "%s",
                     ctx.err.msg);
    }
    int differ = 0;
    for (int r = 0; r < ROWS; r++) {
        cr_expect_eq(a[r], b[r], "row %d: same (seed, step, row) gave %d and %d", r, a[r], b[r]);
        differ += a[r] != c[r];
        /* the recipe: u from word 0 of Philox(key = seed, counter = (step, row)), inverse CDF in id order */
        uint64_t seed = 0x123456789abcull, step = 7;
        uint32_t ctr[4] = {(uint32_t)step, (uint32_t)(step >> 32), (uint32_t)r, 0};
        uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
        rl_philox4x32(ctr, key, w);
        double u = (double)(w[0] >> 8) / 16777216.0, cum = 0;
        int want = V - 1;
        for (int i = 0; i < V; i++) {
            cum += exp(log_softmax_at(row, V, 0.9, i));
            if (cum > u) {
                want = i;
                break;
            }
        }
        cr_expect_eq(a[r], want, "row %d: token %d, recipe gives %d (u = %.6f)", r, a[r], want, u);
    }
    cr_expect(differ > 0, "a different step should change some draws");
}

Test(sampler, distribution_matches_softmax)
{
    float row[6] = {0.5f, -1.0f, 1.2f, 0.0f, -0.3f, 0.9f};
    double probs[6], freq[6];
    for (int i = 0; i < 6; i++) probs[i] = exp(log_softmax_at(row, 6, 0.8, i));
    rl_sample_row p = {.temperature = 0.8f, .top_k = 0, .top_p = 1.0f, .min_p = 0};
    draw_many(row, 6, &p, 99, freq);
    expect_distribution("softmax / 0.8", freq, probs, 6);
}

Test(sampler, top_k_keeps_the_k_largest_and_ties)
{
    float row[8] = {0.1f, 2.0f, -1.0f, 1.5f, 0.3f, 1.5f, -0.2f, 0.0f};
    double freq[8], probs[8] = {0};
    rl_sample_row p = {.temperature = 1.0f, .top_k = 2, .top_p = 1.0f, .min_p = 0};
    /* the 2nd largest value (1.5) is tied: ids 1, 3 and 5 survive */
    double z = exp(2.0) + 2 * exp(1.5);
    probs[1] = exp(2.0) / z, probs[3] = probs[5] = exp(1.5) / z;
    draw_many(row, 8, &p, 3, freq);
    expect_distribution("top_k 2", freq, probs, 8);
}

Test(sampler, top_p_keeps_the_smallest_prefix_reaching_p)
{
    /* probabilities 0.1, 0.5, 0.1, 0.3 (ids 0..3): by decreasing p, 0.5 then 0.3 reach 0.6 */
    float row[4] = {logf(0.1f), logf(0.5f), logf(0.1f), logf(0.3f)};
    double freq[4], probs[4] = {0, 0.625, 0, 0.375};
    rl_sample_row p = {.temperature = 1.0f, .top_k = 0, .top_p = 0.6f, .min_p = 0};
    draw_many(row, 4, &p, 4, freq);
    expect_distribution("top_p 0.6", freq, probs, 4);
}

Test(sampler, top_p_keeps_the_token_that_crosses_p)
{
    /* p = 0.2 0.45 0.35: top_p 0.44 is reached by id 1 alone; 0.47 needs id 2 as well */
    float row[3] = {logf(0.2f), logf(0.45f), logf(0.35f)};
    double freq[3], only[3] = {0, 1, 0}, two[3] = {0, 0.45 / 0.8, 0.35 / 0.8};
    rl_sample_row p = {.temperature = 1.0f, .top_k = 0, .top_p = 0.44f, .min_p = 0};
    draw_many(row, 3, &p, 8, freq);
    expect_distribution("top_p 0.44", freq, only, 3);
    p.top_p = 0.47f;
    draw_many(row, 3, &p, 9, freq);
    expect_distribution("top_p 0.47", freq, two, 3);
}

Test(sampler, min_p_drops_tokens_below_fraction_of_max)
{
    /* p = 0.4 0.3 0.05 0.15 0.1; min_p 0.3: threshold 0.12 keeps ids 0, 1, 3 */
    float row[5] = {logf(0.4f), logf(0.3f), logf(0.05f), logf(0.15f), logf(0.1f)};
    double freq[5], probs[5] = {0.4 / 0.85, 0.3 / 0.85, 0, 0.15 / 0.85, 0};
    rl_sample_row p = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.3f};
    draw_many(row, 5, &p, 5, freq);
    expect_distribution("min_p 0.3", freq, probs, 5);
}

Test(sampler, top_p_renormalises_after_top_k)
{
    /* p = 0.35 0.25 0.2 0.12 0.08. top_k 4 renormalises over 0.92: 0.380 0.272 0.217 0.130;
     * top_p 0.62: 0.380 + 0.272 = 0.652 >= 0.62 keeps ids 0, 1 (without renormalisation,
     * 0.35 + 0.25 = 0.60 < 0.62 would also keep id 2). */
    float row[5] = {logf(0.35f), logf(0.25f), logf(0.2f), logf(0.12f), logf(0.08f)};
    double freq[5], probs[5] = {0.35 / 0.6, 0.25 / 0.6, 0, 0, 0};
    rl_sample_row p = {.temperature = 1.0f, .top_k = 4, .top_p = 0.62f, .min_p = 0};
    draw_many(row, 5, &p, 6, freq);
    expect_distribution("top_k 4 then top_p 0.62", freq, probs, 5);
}

/* The rows are backend memory, which ops.c does not read: rl_sample_row_check says what is
 * wrong with one (the engine calls it per request), and the CPU reference refuses a bad row
 * with it, writing nothing. */
Test(sampler, rows_are_checked)
{
    rl_err err;
    rl_sample_row p = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0};
    cr_expect_eq(rl_sample_row_check(&p, &err), 0, "%s", err.msg);
    p.temperature = 0;
    cr_expect_eq(rl_sample_row_check(&p, &err), 0, "%s", err.msg);
    struct {
        rl_sample_row row;
        const char *want;
    } bad[] = {
        {{.temperature = -1.0f, .top_p = 1.0f}, "temperature -1 is neither 0 nor finite with a finite inverse"},
        {{.temperature = 1e-39f, .top_p = 1.0f}, "temperature 1e-39 is neither 0 nor finite with a finite inverse"},
        {{.temperature = INFINITY, .top_p = 1.0f}, "temperature inf is neither 0 nor finite with a finite inverse"},
        {{.temperature = NAN, .top_p = 1.0f}, "temperature nan is neither 0 nor finite with a finite inverse"},
        {{.temperature = 1.0f, .top_k = -2, .top_p = 1.0f}, "top_k -2 is negative"},
        {{.temperature = 1.0f, .top_p = 0.0f}, "top_p 0 is outside (0, 1]"},
        {{.temperature = 1.0f, .top_p = 1.5f}, "top_p 1.5 is outside (0, 1]"},
        {{.temperature = 1.0f, .top_p = 1.0f, .min_p = 1.5f}, "min_p 1.5 is outside [0, 1]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(rl_sample_row_check(&bad[i].row, &err), -1, "case %zu passed", i);
        cr_expect_str_eq(err.msg, bad[i].want);
    }

    rl_ctx ctx = fx_cpu();
    float logits[6] = {1, 2, 3, 1, 2, 3}, logp[2];
    int32_t tok[2] = {-7, -7};
    rl_sample_row rows[2] = {{.temperature = 1.0f, .top_p = 1.0f}, {.temperature = 1.0f, .top_p = 0.0f}};
    fx_expect_refused(&ctx, rl_sample(&ctx, tok, logp, logits, 2, 3, rows),
                      "rl_sample: rows[1]: top_p 0 is outside (0, 1]");
    cr_expect(tok[0] == -7 && tok[1] == -7, "a refused sample wrote tokens");
}

/* Rows of one call with different parameters, seeds, rows and steps draw what each draws alone. */
Test(sampler, each_row_draws_with_its_own_parameters)
{
    enum { N = 6, V = 50 };
    rl_ctx ctx = fx_cpu();
    float row[V], logits[N * V], one[V], logp[N], logp1;
    int32_t tok[N], tok1;
    tu_fill_uniform(row, V, -2, 2, 31);
    rl_sample_row rows[N] = {
        {.temperature = 0.0f, .top_p = 1.0f, .seed = 1, .row = 0, .step = 0},
        {.temperature = 0.7f, .top_k = 5, .top_p = 1.0f, .seed = 2, .row = 9, .step = 3},
        {.temperature = 1.3f, .top_p = 0.6f, .seed = 3, .row = 1, .step = 100},
        {.temperature = 1.0f, .top_p = 1.0f, .min_p = 0.2f, .seed = 4, .row = 2, .step = 7},
        {.temperature = 0.9f, .top_k = 20, .top_p = 0.9f, .min_p = 0.01f, .seed = 5, .row = 77, .step = 1},
        {.temperature = 1.0f, .top_p = 1.0f, .seed = 4, .row = 2, .step = 7},
    };
    for (int r = 0; r < N; r++) memcpy(logits + r * V, row, sizeof row);
    cr_assert_eq(rl_sample(&ctx, tok, logp, logits, N, V, rows), 0, "%s", ctx.err.msg);
    for (int r = 0; r < N; r++) {
        memcpy(one, row, sizeof row);
        cr_assert_eq(rl_sample(&ctx, &tok1, &logp1, one, 1, V, &rows[r]), 0, "%s", ctx.err.msg);
        cr_expect(tok[r] == tok1 && logp[r] == logp1, "row %d: %d (%g) in the batch, %d (%g) alone", r, tok[r], logp[r],
                  tok1, logp1);
    }
    rows[4].top_p = 1.5f;
    cr_expect_eq(rl_sample(&ctx, tok, logp, logits, N, V, rows), -1);
    cr_expect_str_eq(ctx.err.msg, "rl_sample: rows[4]: top_p 1.5 is outside (0, 1]");
}
