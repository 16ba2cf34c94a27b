/* test_generate.c — the generation engine's contract: greedy output equals transformers' greedy
 * generate on the tiny checkpoints; sampled tokens' log-probs equal what the training forward
 * computes for the finished sequences (paged KV cache vs. full recompute); seeded draws are
 * reproducible and do not depend on the other prompts of the batch; stop strings cut the text;
 * eos ids end completions unless ignored; bad requests (sampling filters included, which only the
 * engine checks) get their own error while the others finish; every result reaches the callback
 * once. (Batching, sharing and preemption:
 * test_engine_batching.c.) */
#include "engine_fixture.h"

Test(generate, greedy_matches_transformers)
{
    const char *models[] = {"qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        model_fixture f;
        gen_setup g;
        mf_load(&f, models[k]);
        open_gen(&g, models[k], NULL);
        rl_gen_prompt prompts[MF_MAX_PROMPTS];
        rl_gen_result results[MF_MAX_PROMPTS];
        for (int i = 0; i < f.n_prompts; i++) prompts[i] = (rl_gen_prompt){.ids = f.prompts[i], .n_ids = f.prompt_len[i]};
        rl_gen_params p = rl_gen_params_default();
        p.sample.temperature = 0.0f;
        p.max_new_tokens = f.max_new_tokens;
        generate(&g, prompts, f.n_prompts, &p, results);
        for (int i = 0; i < f.n_prompts; i++) {
            cr_assert_eq(results[i].n_ids, f.output_len[i], "%s prompt %d: %d tokens, transformers %d", models[k], i,
                         results[i].n_ids, f.output_len[i]);
            for (int t = 0; t < f.output_len[i]; t++)
                cr_assert_eq(results[i].ids[t], f.outputs[i][t], "%s prompt %d token %d: %d, transformers %d",
                             models[k], i, t, results[i].ids[t], f.outputs[i][t]);
            rl_finish_reason want = f.output_len[i] < f.max_new_tokens ? RL_FINISH_EOS : RL_FINISH_LENGTH;
            cr_assert_eq(results[i].finish, want, "%s prompt %d ended by %s", models[k], i,
                         rl_finish_name(results[i].finish));
            cr_assert_null(results[i].text, "no tokenizer, no text");
        }
        free_results(results, f.n_prompts);
        close_gen(&g);
        mf_free(&f);
    }
}

/* The sampled tokens' log-probs must be what the (training) forward gives the same sequences
 * at the same temperature: checks the KV cache path against the full recompute. */
Test(generate, sampled_logprobs_match_forward)
{
    model_fixture f;
    gen_setup g;
    mf_load(&f, "qwen3-tiny-untied");
    open_gen(&g, "qwen3-tiny-untied", NULL);
    rl_gen_prompt prompts[MF_MAX_PROMPTS];
    rl_gen_result results[MF_MAX_PROMPTS];
    for (int i = 0; i < f.n_prompts; i++) prompts[i] = (rl_gen_prompt){.ids = f.prompts[i], .n_ids = f.prompt_len[i]};
    rl_gen_params p = rl_gen_params_default();
    p.sample.temperature = 0.8f;
    p.sample.top_k = 40;
    p.max_new_tokens = 10;
    p.seed = 11;
    generate(&g, prompts, f.n_prompts, &p, results);

    int32_t tokens[256], cu[MF_MAX_PROMPTS + 1] = {0};
    for (int i = 0; i < f.n_prompts; i++) {
        memcpy(tokens + cu[i], f.prompts[i], f.prompt_len[i] * sizeof(int32_t));
        memcpy(tokens + cu[i] + f.prompt_len[i], results[i].ids, results[i].n_ids * sizeof(int32_t));
        cu[i + 1] = cu[i] + f.prompt_len[i] + results[i].n_ids;
    }
    rl_acts *acts;
    rl_err err = {{0}};
    cr_assert_eq(rl_acts_create(&acts, &g.m, cu[f.n_prompts], RL_ACTS_INFER, &err), 0, "%s", err.msg);
    float logp[256];
    cr_assert_eq(rl_model_forward(&g.m, acts, tokens, cu, f.n_prompts, 1.0f / 0.8f, logp, NULL, &err), 0, "%s", err.msg);
    double worst = 0;
    for (int i = 0; i < f.n_prompts; i++) {
        double e = tu_max_rel_err(results[i].logprobs, logp + cu[i] + f.prompt_len[i], results[i].n_ids, 1e-3, NULL);
        if (e > worst) worst = e;
    }
    cr_log_info("sampled log-probs vs forward: max relative error %.2e", worst);
    cr_assert(worst <= 1e-4, "sampled log-probs differ from the forward's: %.3e", worst);
    rl_acts_free(acts);
    free_results(results, f.n_prompts);
    close_gen(&g);
    mf_free(&f);
}

Test(generate, seeded_reproducible_and_independent_of_batch)
{
    model_fixture f;
    gen_setup g;
    mf_load(&f, "qwen3-tiny-tied");
    open_gen(&g, "qwen3-tiny-tied", NULL);
    rl_gen_prompt prompts[4] = {{.ids = f.prompts[0], .n_ids = f.prompt_len[0]},
                                {.ids = f.prompts[1], .n_ids = f.prompt_len[1]},
                                {.ids = f.prompts[0], .n_ids = f.prompt_len[0]},
                                {.ids = f.prompts[2], .n_ids = f.prompt_len[2]}};
    rl_gen_params p = rl_gen_params_default();
    p.sample.top_p = 0.9f;
    p.max_new_tokens = 12;
    p.seed = 3;
    rl_gen_result a[4], b[4], alone[1], other[4];
    generate(&g, prompts, 4, &p, a);
    generate(&g, prompts, 4, &p, b);
    generate(&g, prompts, 1, &p, alone);
    for (int i = 0; i < 4; i++) cr_assert(same_result(&a[i], &b[i]), "prompt %d: same seed, different completion", i);
    cr_assert(same_result(&a[0], &alone[0]), "row 0 must not depend on the other prompts");
    cr_assert(!same_result(&a[0], &a[2]), "two rows with the same prompt must draw differently");
    p.seed = 4;
    generate(&g, prompts, 4, &p, other);
    int differ = 0;
    for (int i = 0; i < 4; i++) differ += !same_result(&a[i], &other[i]);
    cr_assert_gt(differ, 0, "another seed must change some completion");
    /* a released pool (rl_engine_release_pool: a trainer's update) is made again by the next call,
     * which draws the same; its size is still reported in between */
    rl_engine_stats before, released;
    rl_engine_stats_get(g.engine, &before);
    rl_engine_release_pool(g.engine);
    rl_engine_release_pool(g.engine); /* twice is harmless */
    rl_engine_stats_get(g.engine, &released);
    cr_assert(before.n_blocks > 0 && released.n_blocks == before.n_blocks && released.pool_bytes == before.pool_bytes);
    free_results(b, 4);
    generate(&g, prompts, 4, &p, b);
    p.seed = 3;
    free_results(other, 4);
    generate(&g, prompts, 4, &p, other);
    for (int i = 0; i < 4; i++) cr_assert(same_result(&a[i], &other[i]), "prompt %d: differs after the pool was released", i);
    free_results(a, 4);
    free_results(b, 4);
    free_results(alone, 1);
    free_results(other, 4);
    close_gen(&g);
    mf_free(&f);
}

Test(generate, stop_strings_cut_the_text)
{
    model_fixture f;
    gen_setup g;
    mf_load(&f, "qwen3-tiny-tied");
    open_gen(&g, "qwen3-tiny-tied", "tests/fixtures/tokenizer/flags_tokenizer.json");
    rl_gen_prompt prompt = {.ids = f.prompts[1], .n_ids = f.prompt_len[1]};
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 24;
    p.seed = 8;
    rl_gen_result full, cut;
    generate(&g, &prompt, 1, &p, &full);
    cr_assert_not_null(full.text);
    cr_assert_eq(strlen(full.text), full.text_len);
    /* A stop string taken from the middle of the first completion: two ASCII characters. */
    char stop[3] = {0};
    for (size_t k = full.text_len / 3; k + 1 < full.text_len && !stop[0]; k++)
        if ((unsigned char)full.text[k] < 128 && (unsigned char)full.text[k + 1] < 128 && full.text[k] > ' ' &&
            full.text[k + 1] > ' ') {
            stop[0] = full.text[k];
            stop[1] = full.text[k + 1];
        }
    cr_assert(stop[0], "no ASCII pair in the completion '%s'", full.text);
    const char *stops[] = {"never-appears", stop};
    p.stop = stops;
    p.n_stop = 2;
    generate(&g, &prompt, 1, &p, &cut);
    size_t at = (size_t)(strstr(full.text, stop) - full.text);
    cr_assert_eq(cut.finish, RL_FINISH_STOP, "finished by %s", rl_finish_name(cut.finish));
    cr_assert_eq(cut.text_len, at, "text '%s' must end before '%s' (at %zu)", cut.text, stop, at);
    cr_assert(!strncmp(cut.text, full.text, at));
    cr_assert_leq(cut.n_ids, full.n_ids);
    cr_assert(!memcmp(cut.ids, full.ids, cut.n_ids * sizeof(int32_t)), "the ids are a prefix of the unstopped run");
    /* The last id is the one that completed the stop string: without it the text lacks it. */
    char *before = NULL;
    size_t before_len = 0;
    rl_err err = {{0}};
    cr_assert_eq(rl_tok_decode(g.tok, cut.ids, cut.n_ids - 1, &before, &before_len, &err), 0);
    cr_assert_null(strstr(before, stop), "stopped one token late: '%s' already in '%s'", stop, before);
    free(before);
    rl_gen_result_free(&full);
    rl_gen_result_free(&cut);
    close_gen(&g);
    mf_free(&f);
}

typedef struct done_log {
    int calls[8], order[8], n;
} done_log;

static void on_done(void *user, int index, const rl_gen_result *r)
{
    done_log *log = user;
    cr_assert(index >= 0 && index < 8);
    log->calls[index]++;
    log->order[log->n++] = index;
    cr_assert(r->error || r->n_ids > 0, "request %d handed over before it finished", index);
}

/* Bad requests get their own error; the others run as they would alone, and each result goes
 * to the callback once. */
Test(generate, bad_requests_are_refused_and_the_others_finish)
{
    gen_setup g;
    rl_engine_options opt = rl_engine_options_default();
    opt.max_model_len = 40;
    open_gen_with(&g, "qwen3-tiny-tied", NULL, &opt);
    rl_err err = {{0}};
    int32_t ids[50], bad_vocab[3] = {1, 600, 2};
    for (int i = 0; i < 50; i++) ids[i] = (int32_t)(7 * i % 500);
    rl_gen_params p = rl_gen_params_default(), bad_p = p, own = p;
    p.max_new_tokens = 6;
    p.seed = 4;
    bad_p.sample.top_p = 0;
    own.sample.temperature = 0.5f;
    own.max_new_tokens = 3;
    rl_gen_prompt prompts[7] = {
        {.ids = ids, .n_ids = 9},
        {.ids = ids, .n_ids = 0},
        {.ids = bad_vocab, .n_ids = 3},
        {.ids = ids, .n_ids = 40},
        {.ids = ids, .n_ids = 5, .params = &bad_p},
        {.ids = ids + 3, .n_ids = 12, .params = &own, .sample = 2},
        {.ids = ids + 1, .n_ids = 39},
    };
    rl_gen_result r[7], alone;
    done_log log = {0};
    cr_assert_eq(rl_engine_generate(g.engine, prompts, 7, &p, r, on_done, &log, &err), -1);
    cr_assert(strstr(err.msg, "4 of 7 requests refused; request 1: the prompt is empty"), "%s", err.msg);
    cr_assert(r[1].error && strstr(r[1].error, "the prompt is empty"));
    cr_assert(r[2].error && strstr(r[2].error, "request 2: token 600 at position 1 is outside the vocabulary [0, 512)"),
              "%s", r[2].error);
    cr_assert(r[3].error && strstr(r[3].error, "the prompt has 40 tokens, leaving no room for new ones within "
                                               "max_model_len = 40"), "%s", r[3].error);
    cr_assert(r[4].error && !strcmp(r[4].error, "request 4: top_p 0 is outside (0, 1]"), "%s", r[4].error);
    for (int i = 0; i < 7; i++) cr_assert_eq(log.calls[i], 1, "request %d reached the callback %d times", i, log.calls[i]);
    cr_assert(!r[0].error && !r[5].error && !r[6].error);
    cr_assert_eq(r[5].n_ids, 3, "request 5 has its own max_new_tokens");
    cr_assert_eq(r[6].n_ids, 1, "request 6 stops at max_model_len");
    cr_assert_eq(r[6].finish, RL_FINISH_LENGTH);
    /* the good ones are what they are alone: request 0 as row 0 of the call, request 5 with its
     * own parameters as sample 2 */
    generate(&g, &prompts[0], 1, &p, &alone);
    cr_assert(same_result(&alone, &r[0]), "request 0 changed beside bad requests");
    rl_gen_result_free(&alone);
    generate(&g, &prompts[5], 1, &p, &alone);
    cr_assert(same_result(&alone, &r[5]), "request 5 changed beside bad requests");
    rl_gen_result_free(&alone);
    free_results(r, 7);

    p.max_new_tokens = 0;
    cr_assert_eq(rl_engine_generate(g.engine, prompts, 1, &p, r, NULL, NULL, &err), -1);
    cr_assert(strstr(err.msg, "max_new_tokens = 0"), "%s", err.msg);
    free_results(r, 1);
    p.max_new_tokens = 4;
    const char *stops[] = {"x"};
    p.stop = stops;
    p.n_stop = 1;
    cr_assert_eq(rl_engine_generate(g.engine, prompts, 1, &p, r, NULL, NULL, &err), -1);
    cr_assert(strstr(err.msg, "stop strings need a tokenizer"), "%s", err.msg);
    free_results(r, 1);
    const int32_t *eos;
    int n_eos = rl_engine_eos_ids(g.engine, &eos);
    cr_assert(n_eos == 2 && eos[0] == 2 && eos[1] == 3, "eos ids come from the config");
    close_gen(&g);
}

/* rl_sample does not check its rows (they are backend memory): the engine checks each request's
 * filters on the host, so a bad one is refused with its own error (not a failed sampling step
 * that would end the whole call) and the good request still runs. */
Test(generate, sampling_filters_are_checked_per_request)
{
    gen_setup g;
    open_gen(&g, "qwen3-tiny-tied", NULL);
    int32_t ids[6] = {5, 9, 11, 40, 7, 3};
    rl_gen_params p = rl_gen_params_default(), bad[6];
    p.max_new_tokens = 3;
    for (int i = 0; i < 6; i++) bad[i] = p;
    bad[0].sample.temperature = -1.0f;
    bad[1].sample.temperature = 1e-39f;
    bad[2].sample.top_k = -3;
    bad[3].sample.top_p = 1.5f;
    bad[4].sample.min_p = -0.5f;
    bad[5].sample.temperature = NAN;
    const char *want[6] = {
        "request 1: temperature -1 is neither 0 nor finite with a finite inverse",
        "request 2: temperature 1e-39 is neither 0 nor finite with a finite inverse",
        "request 3: top_k -3 is negative",
        "request 4: top_p 1.5 is outside (0, 1]",
        "request 5: min_p -0.5 is outside [0, 1]",
        "request 6: temperature nan is neither 0 nor finite with a finite inverse",
    };
    rl_gen_prompt prompts[7] = {{.ids = ids, .n_ids = 6}};
    for (int i = 0; i < 6; i++) prompts[i + 1] = (rl_gen_prompt){.ids = ids, .n_ids = 6, .params = &bad[i]};
    rl_gen_result r[7];
    rl_err err = {{0}};
    cr_assert_eq(rl_engine_generate(g.engine, prompts, 7, &p, r, NULL, NULL, &err), -1);
    cr_assert(strstr(err.msg, "6 of 7 requests refused"), "%s", err.msg);
    for (int i = 0; i < 6; i++)
        cr_expect(r[i + 1].error && !strcmp(r[i + 1].error, want[i]), "request %d: %s", i + 1,
                  r[i + 1].error ? r[i + 1].error : "(no error)");
    cr_assert(!r[0].error && r[0].n_ids == 3, "the good request: %s", r[0].error ? r[0].error : "");
    free_results(r, 7);
    close_gen(&g);
}

/* A pool smaller than one request's prompt + completion refuses that request alone. */
Test(generate, a_request_longer_than_the_pool_is_refused)
{
    gen_setup g;
    rl_engine_options opt = rl_engine_options_default();
    opt.block_size = 4;
    opt.n_blocks = 5;
    open_gen_with(&g, "qwen3-tiny-tied", NULL, &opt);
    int32_t ids[30];
    for (int i = 0; i < 30; i++) ids[i] = i + 5;
    rl_gen_prompt prompts[2] = {{.ids = ids, .n_ids = 10}, {.ids = ids, .n_ids = 4}};
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 12;
    rl_gen_result r[2];
    rl_err err = {{0}};
    cr_assert_eq(rl_engine_generate(g.engine, prompts, 2, &p, r, NULL, NULL, &err), -1);
    cr_assert(r[0].error && strstr(r[0].error, "10 prompt + 12 new tokens need 6 KV blocks of 4, the pool has 5"), "%s",
              r[0].error ? r[0].error : err.msg);
    cr_assert(!r[1].error && r[1].n_ids == 12);
    free_results(r, 2);
    close_gen(&g);
}

/* The tokenizer's <|im_end|> and <|endoftext|> end a completion too (demo tokenizer: 458 ids,
 * specials last), with a random model of that vocabulary. */
Test(generate, eos_ids_include_the_tokenizers)
{
    rl_ctx ctx;
    rl_model m;
    rl_model_config cfg;
    rl_tokenizer *tok;
    rl_engine *engine;
    rl_err err = {{0}};
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_config_load(&cfg, "tests/fixtures/models/qwen3-tiny-tied/config.json", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&tok, "examples/demo/tokenizer.json", &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(tok);
    cr_assert_eq(rl_model_init_random(&m, &ctx, &cfg, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_engine_create(&engine, &m, tok, NULL, &err), 0, "%s", err.msg);
    const int32_t *eos;
    int n = rl_engine_eos_ids(engine, &eos);
    int32_t im_end = rl_tok_token_id(tok, "<|im_end|>"), eot = rl_tok_token_id(tok, "<|endoftext|>");
    cr_assert(im_end >= 0 && eot >= 0);
    int found = 0;
    for (int i = 0; i < n; i++) found += (eos[i] == im_end) + (eos[i] == eot) + (eos[i] == 2) + (eos[i] == 3);
    cr_assert_eq(found, 4, "eos ids must be the config's 2, 3 plus <|im_end|> %d and <|endoftext|> %d", im_end, eot);

    /* A completion of a chat prompt decodes to text without the eos token's text. */
    char *text;
    rl_chat_message msg = {.role = "user", .content = "What is 2 + 3?"};
    rl_chat_options chat = RL_CHAT_OPTIONS_DEFAULT;
    cr_assert_eq(rl_tok_chat_format(tok, &msg, 1, &chat, &text, &err), 0, "%s", err.msg);
    int32_t *ids;
    int n_ids;
    cr_assert_eq(rl_tok_encode(tok, text, strlen(text), &ids, &n_ids, &err), 0, "%s", err.msg);
    rl_gen_prompt prompt = {.ids = ids, .n_ids = n_ids};
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 20;
    rl_gen_result r[4];
    rl_gen_prompt prompts[4] = {prompt, prompt, prompt, prompt};
    cr_assert_eq(rl_engine_generate(engine, prompts, 4, &p, r, NULL, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        cr_assert_not_null(r[i].text);
        char *full;
        size_t full_len;
        int n_text = r[i].n_ids - (r[i].finish == RL_FINISH_EOS);
        cr_assert_eq(rl_tok_decode(tok, r[i].ids, n_text, &full, &full_len, &err), 0);
        cr_assert_str_eq(r[i].text, full);
        if (r[i].finish == RL_FINISH_EOS) cr_assert(r[i].ids[r[i].n_ids - 1] == im_end || r[i].ids[r[i].n_ids - 1] == eot ||
                                                    r[i].ids[r[i].n_ids - 1] == 2 || r[i].ids[r[i].n_ids - 1] == 3);
        free(full);
        rl_gen_result_free(&r[i]);
    }

    /* Force the first token to be <|im_end|> or <|endoftext|>: the final norm keeps only
     * hidden component 0, and only those two lm_head rows read it, with opposite signs. */
    rl_model forced;
    cfg.tie_word_embeddings = 0;
    cr_assert_eq(rl_model_init_random(&forced, &ctx, &cfg, 6, &err), 0, "%s", err.msg);
    const rl_param *norm = &forced.params[rl_model_find_param(&forced, "model.norm.weight")];
    const rl_param *head = &forced.params[rl_model_find_param(&forced, "lm_head.weight")];
    memset(forced.master + norm->offset, 0, norm->count * sizeof(float));
    memset(forced.master + head->offset, 0, head->count * sizeof(float));
    forced.master[norm->offset] = 1.0f;
    forced.master[head->offset + (size_t)im_end * cfg.hidden_size] = 50.0f;
    forced.master[head->offset + (size_t)eot * cfg.hidden_size] = -50.0f;
    rl_engine *forced_engine;
    cr_assert_eq(rl_engine_create(&forced_engine, &forced, tok, NULL, &err), 0, "%s", err.msg);
    p.sample.temperature = 0.0f;
    cr_assert_eq(rl_engine_generate(forced_engine, prompts, 2, &p, r, NULL, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(r[i].finish, RL_FINISH_EOS, "finished by %s", rl_finish_name(r[i].finish));
        cr_assert(r[i].n_ids == 1 && (r[i].ids[0] == im_end || r[i].ids[0] == eot), "%d ids, first %d", r[i].n_ids, r[i].ids[0]);
        cr_assert_eq(r[i].text_len, 0, "the eos token's text is not part of the completion: '%s'", r[i].text);
        rl_gen_result_free(&r[i]);
    }
    /* ignore_eos: the same first token, then on to max_new_tokens */
    p.ignore_eos = 1;
    cr_assert_eq(rl_engine_generate(forced_engine, prompts, 1, &p, r, NULL, NULL, &err), 0, "%s", err.msg);
    cr_assert(r[0].finish == RL_FINISH_LENGTH && r[0].n_ids == p.max_new_tokens, "ignore_eos: %d ids, finished by %s",
              r[0].n_ids, rl_finish_name(r[0].finish));
    cr_assert(r[0].ids[0] == im_end || r[0].ids[0] == eot);
    rl_gen_result_free(&r[0]);
    rl_engine_free(forced_engine);
    rl_model_free(&forced);
    free(ids);
    free(text);
    rl_engine_free(engine);
    rl_tok_free(tok);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
}

/* A model vocabulary larger than the tokenizer's (as Qwen3's padded 151936 rows): ids past the
 * tokenizer can be sampled; they have no text and do not fail the call. */
Test(generate, ids_past_the_tokenizer_have_no_text)
{
    model_fixture f;
    gen_setup g;
    mf_load(&f, "qwen3-tiny-tied");
    open_gen(&g, "qwen3-tiny-tied", "examples/demo/tokenizer.json");
    int tok_vocab = rl_tok_vocab_size(g.tok);
    cr_assert_lt(tok_vocab, g.m.config.vocab_size);
    rl_gen_prompt prompts[4];
    for (int i = 0; i < 4; i++) prompts[i] = (rl_gen_prompt){.ids = f.prompts[1], .n_ids = f.prompt_len[1]};
    rl_gen_params p = rl_gen_params_default();
    p.max_new_tokens = 24;
    p.seed = 2;
    rl_gen_result r[4];
    generate(&g, prompts, 4, &p, r);
    int past = 0;
    rl_err err = {{0}};
    for (int i = 0; i < 4; i++) {
        int32_t kept[24];
        int n = 0;
        for (int t = 0; t < r[i].n_ids - (r[i].finish == RL_FINISH_EOS); t++) {
            if (r[i].ids[t] >= tok_vocab) past++;
            else kept[n++] = r[i].ids[t];
        }
        char *text;
        size_t len;
        cr_assert_eq(rl_tok_decode(g.tok, kept, n, &text, &len, &err), 0, "%s", err.msg);
        cr_assert_str_eq(r[i].text, text);
        free(text);
    }
    cr_assert_gt(past, 0, "the seed should sample some id >= %d", tok_vocab);
    free_results(r, 4);
    close_gen(&g);
    mf_free(&f);
}
