/* engine_fixture.h — a loaded tiny model with an engine (and optional tokenizer) for the engine
 * tests, and helpers to run and compare generations. Shared by tests/engine. */
#ifndef RL_TEST_ENGINE_FIXTURE_H
#define RL_TEST_ENGINE_FIXTURE_H

#include "engine/generate.h"
#include "model/model_fixture.h"

typedef struct gen_setup {
    rl_ctx ctx;
    rl_model m;
    rl_engine *engine;
    rl_tokenizer *tok;
} gen_setup;

/* opt NULL: the engine's defaults. */
static inline void open_gen_with(gen_setup *g, const char *model, const char *tokenizer, const rl_engine_options *opt)
{
    rl_err err = {{0}};
    char dir[256];
    memset(g, 0, sizeof *g);
    snprintf(dir, sizeof dir, "tests/fixtures/models/%s", model);
    cr_assert_eq(rl_ctx_create(&g->ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_model_load(&g->m, &g->ctx, dir, &err), 0, "%s", err.msg);
    if (tokenizer) cr_assert_eq(rl_tok_load(&g->tok, tokenizer, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_engine_create(&g->engine, &g->m, g->tok, opt, &err), 0, "%s", err.msg);
}

static inline void open_gen(gen_setup *g, const char *model, const char *tokenizer)
{
    open_gen_with(g, model, tokenizer, NULL);
}

/* A new engine with other options over the same model. */
static inline void reopen_engine(gen_setup *g, const rl_engine_options *opt)
{
    rl_err err = {{0}};
    rl_engine_free(g->engine);
    cr_assert_eq(rl_engine_create(&g->engine, &g->m, g->tok, opt, &err), 0, "%s", err.msg);
}

static inline void close_gen(gen_setup *g)
{
    rl_engine_free(g->engine);
    if (g->tok) rl_tok_free(g->tok);
    rl_model_free(&g->m);
    rl_ctx_free(&g->ctx);
}

static inline void generate(gen_setup *g, const rl_gen_prompt *prompts, int n, const rl_gen_params *p,
                            rl_gen_result *results)
{
    rl_err err = {{0}};
    cr_assert_eq(rl_engine_generate(g->engine, prompts, n, p, results, NULL, NULL, &err), 0, "%s", err.msg);
}

static inline void free_results(rl_gen_result *r, int n)
{
    for (int i = 0; i < n; i++) rl_gen_result_free(&r[i]);
}

/* Same ids and bit-identical log-probs. */
static inline int same_result(const rl_gen_result *a, const rl_gen_result *b)
{
    return a->n_ids == b->n_ids && !memcmp(a->ids, b->ids, a->n_ids * sizeof(int32_t)) &&
           !memcmp(a->logprobs, b->logprobs, a->n_ids * sizeof(float)) && a->finish == b->finish;
}

/* n random prompts of lengths in [min_len, max_len] from seed (ids[i] malloc'd). */
static inline void random_prompts(rl_gen_prompt *prompts, int32_t **ids, int n, int min_len, int max_len, int vocab,
                                  uint64_t seed)
{
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (int i = 0; i < n; i++) {
        int len = min_len + (int)rl_rng_below(&rng, (uint32_t)(max_len - min_len + 1));
        ids[i] = malloc((size_t)len * sizeof(int32_t));
        for (int t = 0; t < len; t++) ids[i][t] = (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
        prompts[i] = (rl_gen_prompt){.ids = ids[i], .n_ids = len};
    }
}

#endif
