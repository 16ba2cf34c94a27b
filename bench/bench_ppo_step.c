/* bench_ppo_step.c — whole PPO steps (rollout, reward, reference and value forwards, the PPO
 * update of policy and value model) on a randomly initialised model, beside the GRPO step with a
 * KL reference on the same machine: issue 11's "Qwen3-0.6B policy + value + reference, 8 prompts
 * x 8 samples, 256 new tokens" with step time, update time and peak memory.
 *
 * usage: bench_ppo_step CONFIG_JSON TOKENIZER_JSON [STEPS] [--grpo] [--device cuda|cpu]
 *        [--max-new-tokens N] [--ppo-epochs N] [--gpu-memory-utilization X] [--max-tokens N]
 *        [--entropy-coef X] [--critic separate|shared] [--old-values-pass]
 * Prompts, sampling and reward as bench_grpo_step (8 prompts of 120-140 random ids, 8 samples at
 * temperature 1, reward regex:^[a-m]). PPO: rlc ppo's defaults with kl_coef 0.05 (a frozen
 * reference, no fp32 masters), the value model the policy's architecture with a new head
 * (random, seed 2), ppo_epochs (default 1: one update per model, to set beside GRPO's one
 * update), one mini-batch. --grpo: rlc grpo's defaults with kl_beta 0.04 (the same frozen
 * reference). One warm-up step, then STEPS (default 3) timed ones:
 *   "rlc ppo_step step=<k> seconds=<s> gen_seconds=<g> update_seconds=<u> used_gib=<m>"
 *   "rlc ppo_step median seconds=<s> gen_seconds=<g> update_seconds=<u> peak_used_gib=<m> ..."
 * (grpo_step for --grpo; its update_seconds = seconds - gen_seconds, which includes the
 * reference forward, as PPO's includes the reference and value forwards). used_gib: device
 * memory in use after the step (rl_mem_info, the whole device's: run alone); the step's own
 * peak sample (metrics' peak_mem_gib, taken after generation while the KV pool is held) is
 * included. The memory plan (train/mem_plan.h, what `rlc ppo` / `rlc grpo` check before loading)
 * is printed beside it: "rlc <label> plan_gib=<p> ...". --max-tokens: the micro-batch budget (each
 * trainer's default otherwise); --entropy-coef: PPO's entropy bonus (its gradient runs); --critic
 * shared: no value model, a value head on the policy (ppo.h "The shared critic"); --old-values-pass:
 * the old values from a value forward of their own, as before the first value pass gave them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "backend/ctx.h"
#include "core/rng.h"
#include "io/config.h"
#include "io/tokenizer.h"
#include "reward/reward.h"
#include "engine/kv_pool.h"
#include "train/grpo.h"
#include "train/mem_plan.h"
#include "train/ppo.h"

enum { PROMPTS = 8, GROUP = 8, MAX_STEPS = 100 };

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "bench_ppo_step: %s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_ppo_step CONFIG_JSON TOKENIZER_JSON [STEPS] [--grpo] [--device cuda|cpu] "
                        "[--max-new-tokens N] [--ppo-epochs N] [--gpu-memory-utilization X] [--max-tokens N] "
                        "[--entropy-coef X] [--critic separate|shared] [--old-values-pass]\n");
        return 2;
    }
    int steps = 3, cuda = 1, grpo = 0;
    rl_ppo_config c = rl_ppo_defaults();
    rl_grpo_config gc = rl_grpo_defaults();
    c.prompts_per_step = gc.prompts_per_step = PROMPTS;
    c.samples_per_prompt = gc.group_size = GROUP;
    c.gen.max_new_tokens = gc.gen.max_new_tokens = 256;
    c.ppo_epochs = 1;
    c.kl_coef = 0.05;
    gc.kl_beta = 0.04f;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--grpo")) grpo = 1;
        else if (!strcmp(a, "--old-values-pass")) c.old_values_pass = 1;
        else if (a[0] == '-' && !v) return fail(a, "needs a value");
        else if (!strcmp(a, "--device") && ++i) cuda = strcmp(v, "cpu") != 0;
        else if (!strcmp(a, "--max-new-tokens") && ++i) c.gen.max_new_tokens = gc.gen.max_new_tokens = atoi(v);
        else if (!strcmp(a, "--ppo-epochs") && ++i) c.ppo_epochs = atoi(v);
        else if (!strcmp(a, "--max-tokens") && ++i) c.max_tokens = gc.max_tokens = atoi(v);
        else if (!strcmp(a, "--entropy-coef") && ++i) c.entropy_coef = (float)atof(v);
        else if (!strcmp(a, "--critic") && ++i) {
            if (strcmp(v, "shared") && strcmp(v, "separate")) return fail(a, "separate or shared");
            c.critic = strcmp(v, "shared") ? RL_CRITIC_SEPARATE : RL_CRITIC_SHARED;
        }
        else if (!strcmp(a, "--gpu-memory-utilization") && ++i)
            c.engine.gpu_memory_utilization = gc.engine.gpu_memory_utilization = atof(v);
        else if (a[0] == '-') return fail(a, "unknown option");
        else steps = atoi(a);
    }
    if (steps < 1 || steps > MAX_STEPS) return fail("STEPS", "must be in [1, 100]");
    rl_err err = {{0}};
    rl_model_config cfg, vcfg;
    rl_ctx ctx;
    rl_model m, ref, value;
    rl_tokenizer *tok;
    rl_reward *reward;
    if (rl_config_load(&cfg, argv[1], &err)) return fail("config", err.msg);
    if (rl_tok_load(&tok, argv[2], &err)) return fail("tokenizer", err.msg);
    if (rl_ctx_create(&ctx, cuda ? RL_BACKEND_CUDA : RL_BACKEND_CPU, 0, &err)) return fail("context", err.msg);
    if (rl_model_init_random(&m, &ctx, &cfg, 1, &err)) return fail("model", err.msg);
    if (rl_model_init_random(&ref, &ctx, &cfg, 1, &err)) return fail("reference", err.msg);
    rl_model_freeze(&ref);
    vcfg = cfg;
    rl_config_as_value(&vcfg, RL_HEAD_TOKEN_CLS);
    int separate = !grpo && c.critic == RL_CRITIC_SEPARATE;
    if (separate && rl_model_init_random(&value, &ctx, &vcfg, 2, &err)) return fail("value model", err.msg);
    if (rl_reward_create(&reward, "regex:^[a-m]", NULL, &err)) return fail("reward", err.msg);

    rl_grpo_prompt prompts[PROMPTS];
    int32_t ids[PROMPTS][140];
    rl_rng rng;
    rl_rng_init(&rng, 0);
    int id_max = cfg.vocab_size - 1 < 10000 ? cfg.vocab_size - 1 : 10000;
    for (int p = 0; p < PROMPTS; p++) {
        int len = 120 + (int)rl_rng_below(&rng, 21);
        for (int t = 0; t < len; t++) ids[p][t] = (int32_t)rl_rng_below(&rng, (uint32_t)id_max + 1);
        prompts[p] = (rl_grpo_prompt){.ids = ids[p], .n_ids = len, .text = "prompt"};
    }
    c.shuffle = gc.shuffle = 0;
    rl_mem_plan plan;
    rl_mem_plan_make(&plan, &cfg, ctx.kind, ctx.act_dtype, 1, 0, grpo ? gc.max_tokens : c.max_tokens, RL_ACTS_TRAIN, 1);
    if (separate) rl_mem_plan_add_value(&plan, &vcfg);
    int longest = 0;
    for (int p = 0; p < PROMPTS; p++) longest = prompts[p].n_ids > longest ? prompts[p].n_ids : longest;
    rl_engine_options eng = rl_engine_options_for_training(grpo ? &gc.engine : &c.engine, PROMPTS * GROUP,
                                                           longest + c.gen.max_new_tokens);
    size_t kv = (size_t)rl_engine_pool_blocks(&eng) * rl_kv_pool_block_bytes(&cfg, eng.block_size, ctx.act_dtype);
    rl_mem_plan_add_engine(&plan, &eng, kv, !grpo);
    char plan_text[800];
    rl_mem_plan_describe(&plan, plan_text, sizeof plan_text);
    printf("rlc %s plan_gib=%.2f max_tokens=%d: %s\n", grpo ? "grpo_step" : "ppo_step", plan.total / (double)(1 << 30),
           grpo ? gc.max_tokens : c.max_tokens, plan_text);
    rl_ppo t;
    rl_grpo g;
    if (grpo ? rl_grpo_create(&g, &m, &ref, tok, reward, prompts, PROMPTS, &gc, &err)
             : rl_ppo_create(&t, &m, separate ? &value : NULL, &ref, tok, reward, prompts, PROMPTS, &c, &err))
        return fail("create", err.msg);
    const char *label = grpo ? "grpo_step" : "ppo_step";
    double secs[MAX_STEPS], gens[MAX_STEPS], upds[MAX_STEPS], peak = 0;
    for (int s = -1; s < steps; s++) {
        rl_step_stats st;
        if (grpo ? rl_grpo_step(&g, &st, &err) : rl_ppo_step(&t, &st, &err)) return fail("step", err.msg);
        size_t free_b = 0, total_b = 0;
        if (rl_mem_info(&ctx, &free_b, &total_b)) return fail("memory", ctx.err.msg);
        double used = (double)(total_b - free_b) / (1 << 30);
        if (st.peak_mem_gib > used) used = st.peak_mem_gib;
        if (s < 0) continue;
        secs[s] = st.seconds;
        gens[s] = st.gen_seconds;
        upds[s] = st.seconds - st.gen_seconds;
        if (used > peak) peak = used;
        printf("rlc %s step=%d seconds=%.3f gen_seconds=%.3f update_seconds=%.3f epochs_seconds=%.3f "
               "completion_len=%.1f used_gib=%.2f value_loss=%.4g explained_variance=%.3g entropy=%.4g\n",
               label, s + 1, st.seconds, st.gen_seconds, upds[s], grpo ? 0.0 : st.update_seconds, st.completion_len,
               used, st.value_loss, st.explained_var, st.entropy);
    }
    rl_engine_stats es;
    rl_engine_stats_get(grpo ? g.engine : t.engine, &es);
    printf("rlc %s median seconds=%.3f gen_seconds=%.3f update_seconds=%.3f peak_used_gib=%.2f pool_gib=%.2f "
           "(%s, %d x %d, %d new tokens%s)\n",
           label, bench_median(secs, steps), bench_median(gens, steps), bench_median(upds, steps), peak,
           (double)es.pool_bytes / (1 << 30), rl_backend_name(&ctx), PROMPTS, GROUP, c.gen.max_new_tokens,
           grpo ? ", kl_beta 0.04" : separate ? ", kl_coef 0.05, value model" : ", kl_coef 0.05, shared critic");
    if (grpo) rl_grpo_free(&g);
    else rl_ppo_free(&t);
    if (separate) rl_model_free(&value);
    rl_reward_free(reward);
    rl_tok_free(tok);
    rl_model_free(&ref);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return 0;
}
