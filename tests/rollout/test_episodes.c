/* test_episodes.c — multi-turn episodes on the tiny fixture architecture (random weights, the
 * demo tokenizer) with the shell environment tests/rollout/fake_env.sh: turns alternate model
 * tokens (mask 1, sampling log-probs) and observation tokens (mask 0, the tool message as the
 * chat format renders it), the environment's reward arrives, later turns find the earlier ones
 * in the engine's prefix cache, and an environment that crashes, hangs, prints garbage or never
 * ends fails only its own episodes with the failure reward. */
#include <string.h>

#include "backend/ctx.h"
#include "rollout/episodes.h"
#include "test_util.h"

#define MODEL_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define TOKENIZER "examples/demo/tokenizer.json"
#define N 4
#define STRIDE 160
#define FAIL (-7.0f)

typedef struct fixture {
    rl_ctx ctx;
    rl_model model;
    rl_tokenizer *tok;
    rl_engine *engine;
    int32_t *prompt_ids;
    int n_prompt;
} fixture;

static void setup(fixture *f)
{
    rl_err err;
    cr_assert_eq(rl_ctx_create(&f->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&f->tok, TOKENIZER, &err), 0, "%s", err.msg);
    rl_model_config cfg;
    cr_assert_eq(rl_config_load(&cfg, MODEL_CONFIG, &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(f->tok);
    cr_assert_eq(rl_model_init_random(&f->model, &f->ctx, &cfg, 11, &err), 0, "%s", err.msg);
    rl_engine_options eo = rl_engine_options_default();
    eo.n_blocks = 256; /* a fixed pool: on the CPU a growing one is made anew, without the cache */
    cr_assert_eq(rl_engine_create(&f->engine, &f->model, f->tok, &eo, &err), 0, "%s", err.msg);
    rl_chat_message m = {.role = "user", .content = "What is 12+30? Use the tool."};
    rl_chat_options opt = RL_CHAT_OPTIONS_DEFAULT;
    char *text;
    cr_assert_eq(rl_tok_chat_format(f->tok, &m, 1, &opt, &text, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_encode(f->tok, text, strlen(text), &f->prompt_ids, &f->n_prompt, &err), 0, "%s", err.msg);
    free(text);
}

static void teardown(fixture *f)
{
    free(f->prompt_ids);
    rl_engine_free(f->engine);
    rl_model_free(&f->model);
    rl_tok_free(f->tok);
    rl_ctx_free(&f->ctx);
}

typedef struct outcome {
    rl_gen_result res[N];
    unsigned char own[N * STRIDE];
    float rewards[N];
    long cached;
} outcome;

static void run(fixture *f, const char *mode, int max_turns, double timeout, outcome *o)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "sh tests/rollout/fake_env.sh %s", mode);
    rl_env_options eo = {.timeout_s = timeout};
    rl_env *env;
    rl_episodes ep;
    rl_err err;
    cr_assert_eq(rl_env_create(&env, cmd, &eo, &err), 0, "%s", err.msg);
    rl_episodes_config ec = {.max_turns = max_turns, .max_tokens = STRIDE, .fail_reward = FAIL};
    cr_assert_eq(rl_episodes_init(&ep, env, f->tok, &ec, &err), 0, "%s", err.msg);
    rl_gen_prompt gp[N];
    const cJSON *fields[N] = {0};
    for (int i = 0; i < N; i++) gp[i] = (rl_gen_prompt){.ids = f->prompt_ids, .n_ids = f->n_prompt};
    rl_gen_params gen = rl_gen_params_default();
    gen.max_new_tokens = 6;
    gen.seed = 5;
    memset(o->own, 0xAA, sizeof o->own);
    rl_engine_reset_prefix_cache(f->engine);
    cr_assert_eq(rl_episodes_run(&ep, f->engine, 1, gp, fields, N, &gen, o->res, o->own, STRIDE, o->rewards, &err), 0,
                 "%s", err.msg);
    o->cached = ep.cached_tokens;
    rl_episodes_free(&ep);
    rl_env_free(env);
}

static void free_outcome(outcome *o)
{
    for (int i = 0; i < N; i++) rl_gen_result_free(&o->res[i]);
}

/* Runs of equal mask values in the episode's tokens: returns how many runs of 1. */
static int model_turns(const outcome *o, int i)
{
    int runs = 0;
    for (int k = 0; k < o->res[i].n_ids; k++)
        if (o->own[i * STRIDE + k] == 1 && (k == 0 || o->own[i * STRIDE + k - 1] == 0)) runs++;
    return runs;
}

Test(episodes, turns_alternate_and_observations_are_masked)
{
    fixture f;
    setup(&f);
    outcome o;
    run(&f, "echo", 3, 10, &o);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(o.rewards[i], 3.0f, 0, "episode %d: reward %g", i, o.rewards[i]);
        cr_assert_eq(model_turns(&o, i), 3, "episode %d: %d model turns", i, model_turns(&o, i));
        int n_obs = 0;
        for (int k = 0; k < o.res[i].n_ids; k++) {
            unsigned char m = o.own[i * STRIDE + k];
            cr_assert(m == 0 || m == 1, "mask byte %d unwritten", k);
            if (m == 0) {
                cr_assert_eq(o.res[i].logprobs[k], 0.0f);
                n_obs++;
            } else {
                cr_assert(o.res[i].logprobs[k] <= 0.0f);
            }
        }
        cr_assert(n_obs > 0);
        /* the observation tokens decode to the tool message with "obs 0" */
        int32_t obs[STRIDE];
        int n = 0;
        for (int k = 0; k < o.res[i].n_ids; k++)
            if (o.own[i * STRIDE + k] == 0) obs[n++] = o.res[i].ids[k];
        char *text;
        size_t len;
        rl_err err;
        cr_assert_eq(rl_tok_decode(f.tok, obs, n, &text, &len, &err), 0, "%s", err.msg);
        cr_assert(strstr(text, "obs 0") && strstr(text, "obs 1") && strstr(text, "tool"), "%s", text);
        free(text);
    }
    cr_assert(o.cached > 0, "later turns found nothing in the prefix cache");
    free_outcome(&o);
    teardown(&f);
}

Test(episodes, broken_environments_fail_their_own_episode)
{
    fixture f;
    setup(&f);
    const char *modes[] = {"crash", "hang", "garbage"};
    for (int m = 0; m < 3; m++) {
        outcome o;
        run(&f, modes[m], 2, 1.0, &o);
        cr_assert_float_eq(o.rewards[1], FAIL, 0, "%s: episode 1 got %g", modes[m], o.rewards[1]);
        for (int i = 0; i < N; i++)
            if (i != 1) cr_assert_float_eq(o.rewards[i], 2.0f, 0, "%s: episode %d got %g", modes[m], i, o.rewards[i]);
        free_outcome(&o);
    }
    outcome o;
    run(&f, "nodone", 2, 5, &o);
    for (int i = 0; i < N; i++) cr_assert_float_eq(o.rewards[i], FAIL, 0);
    free_outcome(&o);
    run(&f, "done", 3, 5, &o);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(o.rewards[i], 0.5f, 0);
        cr_assert_eq(model_turns(&o, i), 1);
    }
    free_outcome(&o);
    teardown(&f);
}
