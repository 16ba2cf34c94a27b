/* test_engine_batching.c — what batching, sharing and preemption may not change: greedy tokens
 * equal transformers' at every batch size and scheduling limit (decode steps padded to graph
 * buckets or not); a pool too small for the batch preempts and recomputes, and every token and
 * log-prob stays bit for bit the same; a prompt's completion is the same alone or in a full
 * batch; chunked prefill changes nothing; a group of samples of one prompt computes the prompt
 * once (forks, one copy-on-write per extra member, fewer blocks) and a later prompt reuses a
 * cached prefix, with the same results as without sharing; in deterministic mode the sampled
 * log-probs are exactly the training forward's. */
#include "engine_fixture.h"

static void check_greedy(const char *model, const rl_engine_options *opt, int batch)
{
    model_fixture f;
    gen_setup g;
    mf_load(&f, model);
    open_gen_with(&g, model, NULL, opt);
    rl_gen_prompt prompts[8];
    rl_gen_result results[8];
    for (int i = 0; i < batch; i++)
        prompts[i] = (rl_gen_prompt){.ids = f.prompts[i % f.n_prompts], .n_ids = f.prompt_len[i % f.n_prompts]};
    rl_gen_params p = rl_gen_params_default();
    p.sample.temperature = 0.0f;
    p.max_new_tokens = f.max_new_tokens;
    generate(&g, prompts, batch, &p, results);
    for (int i = 0; i < batch; i++) {
        int k = i % f.n_prompts;
        cr_assert_eq(results[i].n_ids, f.output_len[k], "%s batch %d (max_num_seqs %d) row %d: %d tokens, transformers %d",
                     model, batch, opt->max_num_seqs, i, results[i].n_ids, f.output_len[k]);
        cr_assert(!memcmp(results[i].ids, f.outputs[k], f.output_len[k] * sizeof(int32_t)),
                  "%s batch %d (max_num_seqs %d, pad %d) row %d differs from transformers' greedy tokens", model, batch,
                  opt->max_num_seqs, opt->pad_decode, i);
    }
    free_results(results, batch);
    close_gen(&g);
    mf_free(&f);
}

Test(engine_batching, greedy_matches_transformers_at_every_batch_size)
{
    const char *models[] = {"qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
        for (int batch = 1; batch <= 8; batch++) {
            rl_engine_options opt = rl_engine_options_default();
            check_greedy(models[k], &opt, batch);
            /* few slots, a tiny step budget and small blocks: continuous batching, chunked
             * prefill, padded decode buckets */
            opt.max_num_seqs = 1 + batch % 3;
            opt.max_num_batched_tokens = 4;
            opt.block_size = 3;
            opt.pad_decode = 1;
            check_greedy(models[k], &opt, batch);
        }
}

/* Runs the same requests through an engine with opt and checks every result is bit for bit
 * the reference's; returns the engine's stats. */
static rl_engine_stats same_as(gen_setup *g, const rl_engine_options *opt, const rl_gen_prompt *prompts, int n,
                               const rl_gen_params *p, const rl_gen_result *ref, const char *what)
{
    rl_gen_result *r = calloc((size_t)n, sizeof *r);
    reopen_engine(g, opt);
    generate(g, prompts, n, p, r);
    for (int i = 0; i < n; i++)
        cr_assert(same_result(&r[i], &ref[i]), "%s: request %d changed (%d vs %d tokens)", what, i, r[i].n_ids,
                  ref[i].n_ids);
    rl_engine_stats st;
    rl_engine_stats_get(g->engine, &st);
    free_results(r, n);
    free(r);
    return st;
}

Test(engine_batching, preemption_with_a_tiny_pool_keeps_every_token)
{
    enum { N = 8 };
    gen_setup g;
    open_gen(&g, "qwen3-tiny-untied", NULL);
    rl_gen_prompt prompts[N];
    int32_t *ids[N];
    random_prompts(prompts, ids, N, 5, 40, g.m.config.vocab_size, 21);
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 30;
    p.seed = 5;
    p.sample.top_k = 50;
    p.ignore_eos = 1;
    for (int pass = 0; pass < 2; pass++) {
        p.sample.temperature = pass ? 0.8f : 0.0f;
        rl_gen_result ref[N];
        rl_engine_options opt = rl_engine_options_default();
        reopen_engine(&g, &opt);
        generate(&g, prompts, N, &p, ref);
        /* 18 blocks of 4 tokens hold the longest request (40 + 30) alone, not the batch */
        opt.block_size = 4;
        opt.n_blocks = 18;
        rl_engine_stats st = same_as(&g, &opt, prompts, N, &p, ref, "tiny pool");
        cr_log_info("tiny pool: %ld preemptions in %ld steps", st.preemptions, st.steps);
        cr_assert_gt(st.preemptions, 0, "the pool must be too small for the batch");
        cr_assert_leq(st.peak_blocks, 18);
        opt.max_num_batched_tokens = 8;
        opt.max_num_seqs = 4;
        opt.pad_decode = 1;
        st = same_as(&g, &opt, prompts, N, &p, ref, "tiny pool, chunked prefill, padded decode");
        cr_assert_gt(st.preemptions, 0);
        free_results(ref, N);
    }
    for (int i = 0; i < N; i++) free(ids[i]);
    close_gen(&g);
}

/* Request 5 of a full, mixed batch (prefill chunks beside decoding, sequences finishing and
 * being admitted) and the same request run alone as sample 5 draw the same completion. */
Test(engine_batching, a_completion_is_the_same_alone_or_in_a_full_batch)
{
    enum { N = 16 };
    gen_setup g;
    rl_engine_options opt = rl_engine_options_default();
    opt.max_num_seqs = 6;
    opt.max_num_batched_tokens = 24;
    open_gen_with(&g, "qwen3-tiny-tied", NULL, &opt);
    rl_gen_prompt prompts[N];
    int32_t *ids[N];
    random_prompts(prompts, ids, N, 3, 60, g.m.config.vocab_size, 33);
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 20;
    p.seed = 77;
    p.sample.temperature = 1.2f;
    p.sample.top_p = 0.95f;
    rl_gen_result batch[N], alone;
    generate(&g, prompts, N, &p, batch);
    for (int i = 0; i < N; i += 5) {
        rl_gen_prompt one = prompts[i];
        one.params = &p;
        one.sample = i;
        generate(&g, &one, 1, &p, &alone);
        cr_assert(same_result(&alone, &batch[i]), "request %d: alone %d tokens, in the batch %d", i, alone.n_ids,
                  batch[i].n_ids);
        rl_gen_result_free(&alone);
    }
    /* the batch's completions differ among themselves (different rows draw differently) */
    cr_assert(!same_result(&batch[0], &batch[1]));
    free_results(batch, N);
    for (int i = 0; i < N; i++) free(ids[i]);
    close_gen(&g);
}

Test(engine_batching, chunked_prefill_changes_nothing)
{
    enum { N = 4 };
    gen_setup g;
    open_gen(&g, "qwen3-tiny-untied", NULL);
    rl_gen_prompt prompts[N];
    int32_t *ids[N];
    random_prompts(prompts, ids, N, 100, 300, g.m.config.vocab_size, 9);
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 8;
    p.seed = 2;
    rl_gen_result ref[N];
    generate(&g, prompts, N, &p, ref);
    rl_engine_options opt = rl_engine_options_default();
    opt.max_num_seqs = 3;
    opt.max_num_batched_tokens = 37;
    rl_engine_stats st = same_as(&g, &opt, prompts, N, &p, ref, "prefill in chunks of 37 tokens");
    cr_assert_gt(st.mixed_steps, 20, "prompts of 100-300 tokens take several chunks each");
    free_results(ref, N);
    for (int i = 0; i < N; i++) free(ids[i]);
    close_gen(&g);
}

Test(engine_batching, a_group_prefills_its_prompt_once)
{
    enum { G = 8, N = G + 2, LEN = 37 };
    gen_setup g;
    rl_engine_options cascade = rl_engine_options_default();
    cascade.cascade = 1;
    open_gen_with(&g, "qwen3-tiny-tied", NULL, &cascade);
    int32_t prompt[LEN], other[2][20];
    for (int t = 0; t < LEN; t++) prompt[t] = (int32_t)(11 * t + 3) % 500;
    for (int t = 0; t < 20; t++) other[0][t] = (int32_t)t + 100, other[1][t] = (int32_t)t + 200;
    rl_gen_prompt prompts[N];
    for (int i = 0; i < G; i++) prompts[i] = (rl_gen_prompt){.ids = prompt, .n_ids = LEN};
    prompts[G] = (rl_gen_prompt){.ids = other[0], .n_ids = 20};
    prompts[G + 1] = (rl_gen_prompt){.ids = other[1], .n_ids = 20};
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 10;
    p.seed = 6;
    p.ignore_eos = 1;
    rl_gen_result shared[N];
    generate(&g, prompts, N, &p, shared);
    rl_engine_stats with;
    rl_engine_stats_get(g.engine, &with);
    cr_log_info("sharing: %ld prompt tokens computed, %ld forks, %ld copies, peak %d blocks", with.prompt_tokens,
                with.forks, with.cow_copies, with.peak_blocks);
    cr_assert_eq(with.prompt_tokens, LEN + 2 * 20, "the group's prompt is computed once");
    cr_assert_eq(with.forks, G - 1);
    cr_assert_eq(with.cow_copies, G - 1, "37 = 2 x 16 + 5: each extra member copies the shared partial block once");
    /* Each decode step (the first token comes from the prefill) reads the group's 2 full prompt
     * blocks through the lead's table for the other members of its runs (cascade attention's
     * runs of 16 / (query heads per kv head) sequences): the completions equal the unshared
     * ones below. */
    int per_run = 16 / (g.m.config.n_heads / g.m.config.n_kv_heads);
    cr_assert(per_run >= 2 && G % per_run == 0);
    cr_assert_eq(with.shared_keys, (long)(p.max_new_tokens - 1) * 32 * (G - G / per_run), "shared keys %ld",
                 with.shared_keys);
    rl_engine_options opt = rl_engine_options_default();
    rl_engine_stats plain = same_as(&g, &opt, prompts, N, &p, shared, "without cascade (the default)");
    cr_assert_eq(plain.shared_keys, 0);
    opt.prefix_sharing = 0;
    rl_engine_stats without = same_as(&g, &opt, prompts, N, &p, shared, "without prefix sharing");
    cr_assert_eq(without.prompt_tokens, G * LEN + 2 * 20);
    cr_assert_eq(without.forks + without.cow_copies + without.shared_keys, 0);
    cr_assert_lt(with.peak_blocks + (G - 1) * 2, without.peak_blocks + 1,
                 "sharing saves the members' 2 full prompt blocks each: peak %d vs %d", with.peak_blocks,
                 without.peak_blocks);

    /* A later call whose prompt starts with the same 32 tokens reuses two cached blocks (a
     * fixed pool: on the CPU a pool that has to grow starts empty). */
    free_results(shared, N);
    opt.prefix_sharing = 1;
    opt.n_blocks = 64;
    reopen_engine(&g, &opt);
    generate(&g, prompts, 1, &p, shared);
    rl_gen_result_free(&shared[0]);
    int32_t longer[45];
    memcpy(longer, prompt, 32 * sizeof(int32_t));
    for (int t = 32; t < 45; t++) longer[t] = t;
    rl_gen_prompt later = {.ids = longer, .n_ids = 45};
    rl_gen_result cached, fresh;
    generate(&g, &later, 1, &p, &cached);
    rl_engine_stats st;
    rl_engine_stats_get(g.engine, &st);
    cr_assert_eq(st.cached_tokens, 32);
    cr_assert_eq(st.prompt_tokens, 45 - 32);
    opt.prefix_sharing = 0;
    reopen_engine(&g, &opt);
    generate(&g, &later, 1, &p, &fresh);
    cr_assert(same_result(&cached, &fresh), "a cached prefix changed the completion");
    rl_gen_result_free(&cached);
    rl_gen_result_free(&fresh);
    close_gen(&g);
}

/* Deterministic mode: the sampled tokens' log-probs are exactly what the training forward
 * (training-mode activations, the sequences packed together) gives them. */
Test(engine_batching, deterministic_logprobs_equal_the_training_forward)
{
    enum { N = 6 };
    gen_setup g;
    rl_engine_options opt = rl_engine_options_default();
    opt.max_num_seqs = 4;
    opt.max_num_batched_tokens = 16;
    open_gen_with(&g, "qwen3-tiny-untied", NULL, &opt);
    g.ctx.deterministic = 1;
    rl_gen_prompt prompts[N];
    int32_t *ids[N];
    random_prompts(prompts, ids, N, 4, 30, g.m.config.vocab_size, 41);
    prompts[4] = prompts[1]; /* a group: forks and copy-on-write too */
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 14;
    p.seed = 8;
    p.sample.temperature = 0.9f;
    rl_gen_result r[N];
    generate(&g, prompts, N, &p, r);

    int32_t tokens[N * 64], cu[N + 1] = {0};
    for (int i = 0; i < N; i++) {
        memcpy(tokens + cu[i], prompts[i].ids, prompts[i].n_ids * sizeof(int32_t));
        memcpy(tokens + cu[i] + prompts[i].n_ids, r[i].ids, r[i].n_ids * sizeof(int32_t));
        cu[i + 1] = cu[i] + prompts[i].n_ids + r[i].n_ids;
    }
    rl_acts *acts;
    rl_err err = {{0}};
    float logp[N * 64];
    cr_assert_eq(rl_acts_create(&acts, &g.m, cu[N], RL_ACTS_TRAIN, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_forward(&g.m, acts, tokens, cu, N, 1.0f / 0.9f, logp, NULL, &err), 0, "%s", err.msg);
    long differ = 0, total = 0;
    for (int i = 0; i < N; i++)
        for (int t = 0; t < r[i].n_ids; t++, total++) differ += r[i].logprobs[t] != logp[cu[i] + prompts[i].n_ids + t];
    cr_assert_eq(differ, 0, "%ld of %ld log-probs differ from the training forward's", differ, total);
    free_results(r, N);

    /* one temperature per call */
    rl_gen_params hot = p;
    hot.sample.temperature = 1.5f;
    prompts[2].params = &hot;
    cr_assert_eq(rl_engine_generate(g.engine, prompts, N, &p, r, NULL, NULL, &err), -1);
    cr_assert(r[2].error && strstr(r[2].error, "deterministic mode samples a call at one temperature"), "%s", err.msg);
    free_results(r, N);
    rl_acts_free(acts);
    for (int i = 0; i < N; i++) free(ids[i]);
    close_gen(&g);
}

/* On the CPU the pool holds what a call needs, is kept for later calls and grows for a larger
 * one. */
Test(engine_batching, the_pool_is_kept_across_calls)
{
    gen_setup g;
    open_gen(&g, "qwen3-tiny-tied", NULL);
    rl_gen_prompt prompts[4];
    int32_t *ids[4];
    random_prompts(prompts, ids, 4, 30, 30, g.m.config.vocab_size, 3);
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 34;
    rl_gen_result r[4];
    rl_engine_stats a, b, c;
    generate(&g, prompts, 4, &p, r);
    rl_engine_stats_get(g.engine, &a);
    free_results(r, 4);
    cr_assert_eq(a.n_blocks, 4 * 4, "4 requests of 64 tokens in blocks of 16");
    generate(&g, prompts, 2, &p, r);
    rl_engine_stats_get(g.engine, &b);
    free_results(r, 2);
    cr_assert_eq(b.n_blocks, a.n_blocks);
    p.max_new_tokens = 100;
    generate(&g, prompts, 4, &p, r);
    rl_engine_stats_get(g.engine, &c);
    free_results(r, 4);
    cr_assert_eq(c.n_blocks, 4 * 9);
    for (int i = 0; i < 4; i++) free(ids[i]);
    close_gen(&g);
}

/* A trainer's engine (rl_engine_options_for_training) holds what its step can use, n_seqs x
 * (seq_len in whole blocks + 1), whatever a call asks for: not the call's need (the CPU's rule)
 * nor the memory fraction (CUDA's); a call that needs more than the pool queues and preempts in
 * it; the fraction still caps it. */
Test(engine_batching, a_trainers_pool_is_sized_by_its_step)
{
    rl_engine_options opt = rl_engine_options_for_training(NULL, 6, 40);
    cr_assert_eq(opt.max_num_seqs, rl_engine_options_default().max_num_seqs, "the other options stay the defaults");
    cr_assert_eq(rl_engine_pool_blocks(&opt), 6 * (3 + 1), "6 sequences of 40 tokens in blocks of 16, + 1 each");
    rl_engine_options base = rl_engine_options_default();
    cr_assert_eq(rl_engine_pool_blocks(&base), 0, "the fraction's pool has no size by need");
    base.block_size = 4;
    rl_engine_options small = rl_engine_options_for_training(&base, 3, 10);
    cr_assert_eq(small.block_size, 4);
    cr_assert_eq(rl_engine_pool_blocks(&small), 3 * (3 + 1), "10 tokens are 3 blocks of 4");

    gen_setup g;
    open_gen_with(&g, "qwen3-tiny-tied", NULL, &opt);
    rl_gen_prompt prompts[8];
    int32_t *ids[8];
    random_prompts(prompts, ids, 8, 30, 30, g.m.config.vocab_size, 5);
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 10;
    p.ignore_eos = 1;
    rl_gen_result r[8];
    rl_engine_stats a, b;
    generate(&g, prompts, 2, &p, r); /* needs 2 x 3 blocks */
    rl_engine_stats_get(g.engine, &a);
    free_results(r, 2);
    cr_assert_eq(a.n_blocks, 24, "the pool holds the step's 24 blocks, not the call's 6");
    p.max_new_tokens = 34;
    generate(&g, prompts, 8, &p, r); /* 8 x 4 blocks: more than the pool */
    rl_engine_stats_get(g.engine, &b);
    for (int i = 0; i < 8; i++) cr_assert_eq(r[i].n_ids, 34, "request %d: %d tokens", i, r[i].n_ids);
    free_results(r, 8);
    cr_assert_eq(b.n_blocks, 24, "kept, not remade for a larger call");
    cr_assert_leq(b.peak_blocks, 24);

    rl_engine_options capped = opt;
    capped.gpu_memory_utilization = 1e-12;
    reopen_engine(&g, &capped);
    rl_err err = {{0}};
    cr_assert_eq(rl_engine_generate(g.engine, prompts, 1, &p, r, NULL, NULL, &err), -1);
    free_results(r, 1);
    cr_assert(strstr(err.msg, "no memory for the KV pool"), "%s", err.msg);

    rl_engine_options bad = opt;
    bad.pool_seq_len = 0;
    rl_engine_free(g.engine);
    g.engine = NULL;
    cr_assert_eq(rl_engine_create(&g.engine, &g.m, NULL, &bad, &err), -1);
    cr_assert(strstr(err.msg, "pool_seqs = 6 and pool_seq_len = 0"), "%s", err.msg);
    for (int i = 0; i < 8; i++) free(ids[i]);
    close_gen(&g);
}

/* After the weights change, rl_engine_reset_prefix_cache makes the engine recompute what it had
 * cached: the results are a fresh engine's. */
Test(engine_batching, reset_prefix_cache_after_new_weights)
{
    gen_setup g;
    rl_engine_options opt = rl_engine_options_default();
    opt.n_blocks = 64;
    open_gen_with(&g, "qwen3-tiny-tied", NULL, &opt);
    rl_gen_prompt prompt;
    int32_t *ids;
    random_prompts(&prompt, &ids, 1, 50, 50, g.m.config.vocab_size, 4);
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 6;
    rl_gen_result before, after, fresh;
    generate(&g, &prompt, 1, &p, &before);
    for (size_t i = 0; i < g.m.n_elems; i++) g.m.master[i] *= 1.25f; /* new weights (the CPU reads the masters) */
    rl_engine_reset_prefix_cache(g.engine);
    generate(&g, &prompt, 1, &p, &after);
    rl_engine_stats st;
    rl_engine_stats_get(g.engine, &st);
    cr_assert_eq(st.cached_tokens, 0, "nothing may come from the cache after a reset");
    reopen_engine(&g, &opt);
    generate(&g, &prompt, 1, &p, &fresh);
    cr_assert(same_result(&after, &fresh), "the engine used keys of the old weights");
    cr_assert(!same_result(&before, &after), "new weights must change the completion");
    rl_gen_result_free(&before), rl_gen_result_free(&after), rl_gen_result_free(&fresh);
    free(ids);
    close_gen(&g);
}
