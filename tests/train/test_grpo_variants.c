/* test_grpo_variants.c — the critic-free baselines on the GRPO trainer (grpo.h's variants):
 * RLOO and REINFORCE++ (with its KL-shaped rewards against a frozen copy) raise the reward on
 * the tiny Qwen3 fixture architecture as GRPO does, and their presets set the advantage kind and
 * the token-level loss normalisation unless the caller chose one. */
#include <string.h>

#include "backend/ctx.h"
#include "train/grpo.h"
#include "test_util.h"

#define MODEL_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define TOKENIZER "examples/demo/tokenizer.json"

static double reward_gain(rl_grpo_variant_kind variant, float kl_beta, double *kl_last)
{
    rl_err err;
    rl_ctx ctx;
    rl_tokenizer *tok;
    rl_reward *reward;
    rl_model m, ref;
    rl_model_config cfg;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&tok, TOKENIZER, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_config_load(&cfg, MODEL_CONFIG, &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(tok);
    cr_assert_eq(rl_model_init_random(&m, &ctx, &cfg, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_init_random(&ref, &ctx, &cfg, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_reward_create(&reward, "regex:^[0-9]", NULL, &err), 0, "%s", err.msg);
    int32_t ids[4][6];
    rl_grpo_prompt prompts[4];
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3 + i; k++) ids[i][k] = 40 + 7 * i + k;
        prompts[i] = (rl_grpo_prompt){ids[i], 3 + i, "prompt", "1", NULL};
    }
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = 4;
    c.group_size = 8;
    c.max_tokens = 64;
    c.gen.max_new_tokens = 2;
    c.kl_beta = kl_beta;
    c.optim.schedule.peak = 2e-2;
    rl_grpo_variant(&c, variant, 0);
    rl_grpo t;
    cr_assert_eq(rl_grpo_create(&t, &m, kl_beta > 0 ? &ref : NULL, tok, reward, prompts, 4, &c, &err), 0, "%s",
                 err.msg);
    double first = 0, last = 0;
    int steps = 25;
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        cr_assert(isfinite(st.loss), "step %d: loss %g", s, st.loss);
        if (s < 5) first += st.reward_mean / 5;
        if (s >= steps - 5) last += st.reward_mean / 5;
        *kl_last = st.kl;
    }
    rl_grpo_free(&t);
    rl_reward_free(reward);
    rl_model_free(&ref);
    rl_model_free(&m);
    rl_tok_free(tok);
    rl_ctx_free(&ctx);
    cr_log_info("%s: reward %.3f -> %.3f", rl_grpo_variant_names[variant], first, last);
    return last - first;
}

Test(grpo_variants, rloo_learns)
{
    double kl;
    double gain = reward_gain(RL_GRPO_VARIANT_RLOO, 0, &kl);
    cr_assert(gain > 0.3, "RLOO: reward gain %.3f", gain);
}

Test(grpo_variants, reinforce_pp_learns_with_kl_in_the_reward)
{
    double kl;
    double gain = reward_gain(RL_GRPO_VARIANT_REINFORCE_PP, 0.01f, &kl);
    cr_assert(gain > 0.3, "REINFORCE++: reward gain %.3f", gain);
    cr_assert(kl > 0, "the policy moved away from the reference: kl %g", kl);
}

Test(grpo_variants, presets)
{
    rl_grpo_config c = rl_grpo_defaults();
    rl_grpo_variant(&c, RL_GRPO_VARIANT_RLOO, 0);
    cr_assert(c.advantage == RL_ADV_RLOO && c.loss_norm == RL_NORM_TOKEN);
    c = rl_grpo_defaults();
    rl_grpo_variant(&c, RL_GRPO_VARIANT_REINFORCE_PP, RL_GRPO_KEEP_LOSS_NORM);
    cr_assert(c.advantage == RL_ADV_REINFORCE_PP && c.loss_norm == RL_NORM_SEQUENCE);
    cr_assert_str_eq(rl_grpo_variant_names[RL_GRPO_VARIANT_REINFORCE_PP], "reinforce_pp");
    c = rl_grpo_defaults();
    cr_assert(c.advantage == RL_ADV_GROUP);
}
