/* test_grpo_episodes.c — GRPO with an episode hook (grpo.h: hooks.episode): tokens the hook
 * marks as not the model's own (observations) carry no loss. The hook appends three tokens with
 * an absurd sampling log-prob (-50) after each completion: masked, the first update is exactly
 * on-policy (ratio 1, nothing clipped); the same tokens unmasked are clipped (the control shows
 * the test can fail). Also: the hook's rewards drive the advantages, and the prepare hook sees
 * every step's prompts. */
#include <string.h>

#include "backend/ctx.h"
#include "train/grpo.h"
#include "test_util.h"

#define MODEL_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define TOKENIZER "examples/demo/tokenizer.json"

typedef struct hook_state {
    int mask_value;  /* what the hook writes on its appended tokens */
    int prepared;    /* prepare calls */
    int64_t last_step;
} hook_state;

static int episode(void *user, rl_engine *e, int64_t step, const rl_gen_prompt *prompts, const int *prompt_of, int n,
                   const rl_gen_params *gen, rl_gen_result *results, unsigned char *own, int stride, float *rewards,
                   rl_err *err)
{
    hook_state *h = user;
    h->last_step = step;
    rl_gen_params g = *gen;
    g.max_new_tokens = 4;
    if (rl_engine_generate(e, prompts, n, &g, results, NULL, NULL, err)) return -1;
    for (int i = 0; i < n; i++) {
        rl_gen_result *r = &results[i];
        cr_assert(r->n_ids + 3 <= stride);
        r->ids = realloc(r->ids, (size_t)(r->n_ids + 3) * sizeof *r->ids);
        r->logprobs = realloc(r->logprobs, (size_t)(r->n_ids + 3) * sizeof *r->logprobs);
        memset(own + (size_t)i * stride, 1, (size_t)r->n_ids);
        for (int k = 0; k < 3; k++) {
            r->ids[r->n_ids + k] = 40 + k;
            r->logprobs[r->n_ids + k] = -50.0f;
            own[(size_t)i * stride + r->n_ids + k] = (unsigned char)h->mask_value;
        }
        r->n_ids += 3;
        rewards[i] = (float)(i % 2);
    }
    return 0;
}

static int prepare(void *user, int64_t step, const int *prompt_of, int n, rl_err *err)
{
    hook_state *h = user;
    h->prepared++;
    cr_assert_eq(step, h->prepared);
    return 0;
}

static void run(int mask_value, rl_step_stats *st)
{
    rl_err err;
    rl_ctx ctx;
    rl_tokenizer *tok;
    rl_model model;
    rl_model_config cfg;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&tok, TOKENIZER, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_config_load(&cfg, MODEL_CONFIG, &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(tok);
    cr_assert_eq(rl_model_init_random(&model, &ctx, &cfg, 5, &err), 0, "%s", err.msg);
    int32_t ids[2][4] = {{40, 41, 42, 43}, {50, 51, 52, 53}};
    rl_grpo_prompt prompts[2] = {{ids[0], 4, "a", NULL, NULL}, {ids[1], 4, "b", NULL, NULL}};
    hook_state h = {mask_value, 0, 0};
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = 2;
    c.group_size = 4;
    c.gen.max_new_tokens = 4;
    c.max_completion_tokens = 8;
    c.max_tokens = 64;
    c.optim.schedule.peak = 1e-3;
    c.hooks = (rl_grpo_hooks){&h, prepare, episode};
    rl_grpo t;
    cr_assert_eq(rl_grpo_create(&t, &model, NULL, tok, NULL, prompts, 2, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_grpo_step(&t, st, &err), 0, "%s", err.msg);
    cr_assert_eq(h.prepared, 1);
    cr_assert_eq(h.last_step, 1);
    cr_assert_float_eq(st->reward_mean, 0.5, 1e-6);
    rl_grpo_free(&t);
    rl_model_free(&model);
    rl_tok_free(tok);
    rl_ctx_free(&ctx);
}

Test(grpo_episodes, observation_tokens_carry_no_loss)
{
    rl_step_stats masked, unmasked;
    run(0, &masked);
    cr_assert_float_eq(masked.clip_frac, 0.0, 1e-9, "masked tokens were clipped: %g", masked.clip_frac);
    cr_assert_float_eq(masked.ratio_mean, 1.0, 1e-3, "ratio %g", masked.ratio_mean);
    cr_assert(masked.logp_diff_max < 1e-3, "mismatch %g", masked.logp_diff_max);
    run(1, &unmasked);
    cr_assert(unmasked.clip_frac > 0.1, "the control clipped nothing: %g", unmasked.clip_frac);
}
