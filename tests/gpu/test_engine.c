/* test_engine.c — the paged engine on the CUDA backend (bf16, paged kernels, decode steps
 * captured as graphs) against the CPU reference engine on the tiny fixture models: greedy
 * tokens identical to the CPU's (and so to transformers', tests/engine) at every batch size
 * from 1 to 8, with the default schedule and with a small one (few sequences at once, a tiny
 * step budget: chunked prefill beside decoding), and with a pool too small for the batch, so
 * that sequences are preempted and recomputed. The pools are sized by block count (never by
 * free memory: tests run side by side on one GPU).
 *
 * Ties: the random tiny models have nearly flat next-token distributions, so the two most
 * likely tokens are sometimes closer than bf16 arithmetic can separate (the CUDA forward's
 * log-probs are within about 6e-3 nats of the fp32 CPU's, test_model.c). A row whose first
 * different token is such a near tie under the CPU model (log-probs of the CPU's and the GPU's
 * token within TIE_NATS) is reported and not counted as a failure; any other difference is.
 * The fp32 mode (backend/ctx.h: fp32 activations, the CUDA-core paged kernels at every head dim)
 * runs the same cases with a tie only within TIE_NATS_FP32.
 * Deterministic mode (ctx->deterministic: batch-invariant products, the training attention over
 * the pool): greedy tokens equal the CPU's under the same tie rule (tiny pool, preemption,
 * chunked prefill), and sampled tokens and their log-probs do not depend on the batch or the
 * schedule: each request alone, in a batch of 6, with chunked prefill, bit for bit. */
#include "../engine/engine_fixture.h"
#include "gpu_util.h"

static const char *MODELS[] = {"qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

typedef struct both {
    rl_ctx ctx;
    rl_model m;
    rl_engine *engine;
} both;

static int det_mode; /* 1: CUDA contexts in deterministic mode */

static void open_on(both *b, rl_backend_kind kind, rl_precision precision, const char *model,
                    const rl_engine_options *opt)
{
    rl_err err = {{0}};
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fixtures/models/%s", model);
    cr_assert_eq(rl_ctx_create(&b->ctx, kind, 0, &err), 0, "%s", err.msg);
    b->ctx.deterministic = kind == RL_BACKEND_CUDA && det_mode;
    cr_assert_eq(rl_ctx_set_precision(&b->ctx, precision, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&b->m, &b->ctx, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_engine_create(&b->engine, &b->m, NULL, opt, &err), 0, "%s", err.msg);
}

static void close_on(both *b)
{
    rl_engine_free(b->engine);
    rl_model_free(&b->m);
    rl_ctx_free(&b->ctx);
}

#define TIE_NATS 2e-2
#define TIE_NATS_FP32 1e-4

/* log p(tok | prompt, gen[0 .. t)) under the CPU model. */
static double cpu_logp(both *cpu, const rl_gen_prompt *prompt, const int32_t *gen, int t, int32_t tok)
{
    rl_err err = {{0}};
    int n = prompt->n_ids + t + 1;
    int32_t *seq = malloc((size_t)n * sizeof *seq), cu[2] = {0, n};
    float *logp = malloc((size_t)n * sizeof *logp);
    memcpy(seq, prompt->ids, (size_t)prompt->n_ids * sizeof *seq);
    memcpy(seq + prompt->n_ids, gen, (size_t)t * sizeof *seq);
    seq[n - 1] = tok;
    rl_acts *acts;
    cr_assert_eq(rl_acts_create(&acts, &cpu->m, n, RL_ACTS_INFER, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_forward(&cpu->m, acts, seq, cu, 1, 1.0f, logp, NULL, &err), 0, "%s", err.msg);
    double out = logp[n - 1];
    rl_acts_free(acts);
    free(seq), free(logp);
    return out;
}

static void run(both *b, const rl_gen_prompt *prompts, int n, const rl_gen_params *p, rl_gen_result *out)
{
    rl_err err = {{0}};
    cr_assert_eq(rl_engine_generate(b->engine, prompts, n, p, out, NULL, NULL, &err), 0, "%s", err.msg);
}

/* Greedy on both backends over `batch` requests; the first differing token is reported. */
static void compare(const char *model, const rl_engine_options *opt, const rl_gen_prompt *prompts, int batch,
                    int max_new, const char *what, int must_preempt, rl_precision precision)
{
    if (!rl_cuda_available()) cr_skip_test("no CUDA device visible");
    both cpu, gpu;
    double tie_nats = precision == RL_PRECISION_FP32 ? TIE_NATS_FP32 : TIE_NATS;
    open_on(&cpu, RL_BACKEND_CPU, RL_PRECISION_FP32, model, opt);
    open_on(&gpu, RL_BACKEND_CUDA, precision, model, opt);
    rl_gen_params p = rl_gen_params_default();
    p.sample.temperature = 0.0f;
    p.max_new_tokens = max_new;
    p.ignore_eos = 1;
    rl_gen_result ref[16], got[16];
    run(&cpu, prompts, batch, &p, ref);
    run(&gpu, prompts, batch, &p, got);
    rl_engine_stats st;
    rl_engine_stats_get(gpu.engine, &st);
    int differ = 0, ties = 0;
    for (int i = 0; i < batch; i++) {
        int first = -1;
        for (int t = 0; t < ref[i].n_ids && first < 0; t++)
            if (t >= got[i].n_ids || got[i].ids[t] != ref[i].ids[t]) first = t;
        if (first < 0 && got[i].n_ids == ref[i].n_ids) continue;
        double gap = INFINITY;
        if (first >= 0 && first < got[i].n_ids)
            gap = cpu_logp(&cpu, &prompts[i], ref[i].ids, first, ref[i].ids[first]) -
                  cpu_logp(&cpu, &prompts[i], ref[i].ids, first, got[i].ids[first]);
        int tie = fabs(gap) <= tie_nats;
        fprintf(stderr, "%s %s batch %d row %d: first divergence at token %d of %d, CPU log-prob gap %.3g nats (%s)\n",
                model, what, batch, i, first, ref[i].n_ids, gap, tie ? "near tie" : "NOT a tie");
        ties += tie;
        differ += !tie;
    }
    fprintf(stderr, "[err] engine %s %s %s batch %d: %d of %d rows differ from the CPU, %d more at near ties (%ld steps, "
                    "%ld graph replays, %ld preemptions)\n",
            model, rl_precision_names[precision], what, batch, differ, batch, ties, st.steps, st.graph_replays,
            st.preemptions);
    cr_assert_eq(differ, 0, "%s %s batch %d: %d rows differ from the CPU engine's greedy tokens", model, what, batch,
                 differ);
    cr_assert(!must_preempt || st.preemptions > 0, "%s %s: the pool must be too small for the batch", model, what);
    free_results(ref, batch);
    free_results(got, batch);
    close_on(&gpu);
    close_on(&cpu);
}

static void every_batch_size(rl_precision precision)
{
    for (size_t k = 0; k < N_MODELS; k++) {
        model_fixture f;
        mf_load(&f, MODELS[k]);
        rl_gen_prompt prompts[8];
        for (int batch = 1; batch <= 8; batch++) {
            for (int i = 0; i < batch; i++)
                prompts[i] = (rl_gen_prompt){.ids = f.prompts[i % f.n_prompts], .n_ids = f.prompt_len[i % f.n_prompts]};
            rl_engine_options opt = rl_engine_options_default();
            opt.n_blocks = 256;
            compare(MODELS[k], &opt, prompts, batch, f.max_new_tokens, "default", 0, precision);
            opt.max_num_seqs = 1 + batch % 3;
            opt.max_num_batched_tokens = 4;
            opt.block_size = 3;
            compare(MODELS[k], &opt, prompts, batch, f.max_new_tokens, "small schedule", 0, precision);
        }
        mf_free(&f);
    }
}

Test(gpu_engine, greedy_equals_cpu_at_every_batch_size) { every_batch_size(RL_PRECISION_BF16); }
Test(gpu_engine, fp32_greedy_equals_cpu_at_every_batch_size) { every_batch_size(RL_PRECISION_FP32); }

static void with_preemption(rl_precision precision)
{
    enum { N = 8 };
    for (size_t k = 0; k < N_MODELS; k++) {
        rl_gen_prompt prompts[N];
        int32_t *ids[N];
        random_prompts(prompts, ids, N, 5, 40, 256, 21 + k);
        rl_engine_options opt = rl_engine_options_default();
        /* 18 blocks of 4 tokens hold the longest request (40 + 30) alone, not the batch */
        opt.block_size = 4;
        opt.n_blocks = 18;
        compare(MODELS[k], &opt, prompts, N, 30, "tiny pool", 1, precision);
        opt.max_num_batched_tokens = 8;
        opt.max_num_seqs = 4;
        compare(MODELS[k], &opt, prompts, N, 30, "tiny pool, small schedule", 1, precision);
        for (int i = 0; i < N; i++) free(ids[i]);
    }
}

Test(gpu_engine, greedy_equals_cpu_with_preemption) { with_preemption(RL_PRECISION_BF16); }
Test(gpu_engine, fp32_greedy_equals_cpu_with_preemption) { with_preemption(RL_PRECISION_FP32); }

Test(gpu_engine, deterministic_greedy_equals_cpu_with_preemption)
{
    det_mode = 1;
    with_preemption(RL_PRECISION_BF16);
}

/* Deterministic mode: a request's samples and log-probs are the same bits alone, in a batch, and
 * under a schedule that chunks its prefill (each request its own Philox row). */
Test(gpu_engine, deterministic_samples_do_not_depend_on_the_batch)
{
    if (!rl_cuda_available()) cr_skip_test("no CUDA device visible");
    enum { N = 6 };
    det_mode = 1;
    rl_gen_prompt prompts[N];
    int32_t *ids[N];
    random_prompts(prompts, ids, N, 4, 30, 256, 51);
    rl_gen_params p = rl_gen_params_default();
    p.sample.temperature = 0.9f;
    p.seed = 8;
    p.max_new_tokens = 14;
    p.ignore_eos = 1;
    for (int i = 0; i < N; i++) prompts[i].params = &p, prompts[i].sample = i;
    rl_engine_options big = rl_engine_options_default(), small = big;
    big.n_blocks = 256;
    small.n_blocks = 256;
    small.max_num_seqs = 3;
    small.max_num_batched_tokens = 5;
    small.block_size = 3;
    both a, b;
    open_on(&a, RL_BACKEND_CUDA, RL_PRECISION_BF16, "qwen3-tiny-untied", &big);
    open_on(&b, RL_BACKEND_CUDA, RL_PRECISION_BF16, "qwen3-tiny-untied", &small);
    rl_gen_result batch[N], chunked[N], alone[N];
    run(&a, prompts, N, &p, batch);
    run(&b, prompts, N, &p, chunked);
    for (int i = 0; i < N; i++) run(&a, prompts + i, 1, &p, alone + i);
    int differ = 0;
    for (int i = 0; i < N; i++) {
        const rl_gen_result *r = &batch[i];
        for (int v = 0; v < 2; v++) {
            const rl_gen_result *o = v ? &alone[i] : &chunked[i];
            int same = same_result(o, r);
            if (!same) fprintf(stderr, "request %d: %s differs from the batch of %d\n", i, v ? "alone" : "chunked", N);
            differ += !same;
        }
    }
    fprintf(stderr, "[err] deterministic engine: %d of %d runs differ from the batch's tokens and log-probs\n", differ,
            2 * N);
    cr_expect_eq(differ, 0, "%d runs of a request differ from the batch's bits", differ);
    cr_expect(batch[0].n_ids == 14, "%d tokens", batch[0].n_ids);
    free_results(batch, N);
    free_results(chunked, N);
    free_results(alone, N);
    close_on(&b);
    close_on(&a);
    for (int i = 0; i < N; i++) free(ids[i]);
}
