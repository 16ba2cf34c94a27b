/* bench_grpo_step.c — whole GRPO steps (rollout through the engine, reward, update) on a
 * randomly initialised model: issue 10's "rlc grpo, 8 prompts x 8 samples, ~130-token prompts,
 * 256 new tokens" step, with its generation time and memory.
 *
 * usage: bench_grpo_step CONFIG_JSON TOKENIZER_JSON [STEPS] [--device cuda|cpu]
 *        [--max-new-tokens N] [--deterministic] [--no-share-prompts] [--tis-cap C]
 *        [--gpu-memory-utilization X]
 * 8 prompts of 120-140 random ids in [0, 10000] (seed 0), 8 samples each at temperature 1, up
 * to 256 new tokens (a random model rarely ends earlier), reward regex:^[a-m] (about half the
 * completions, so the advantages are not all 0), GRPO defaults otherwise (one update per
 * rollout, micro-batches of 8192 tokens, each group's prompt run once per micro-batch unless
 * --no-share-prompts, lr 1e-6). One warm-up step (the engine's pool and graphs are made
 * there), then STEPS (default 5) timed ones; per step and the median:
 *   "rlc grpo_step step=<k> seconds=<s> gen_seconds=<g> completion_len=<l> used_gib=<u>
 *    logp_diff_mean=<m> logp_diff_max=<x>"
 *   "rlc grpo_step median seconds=<s> gen_seconds=<g> peak_used_gib=<u> pool_gib=<p>"
 * used_gib: backend memory in use after the step (total - free, rl_mem_info; on CUDA this is
 * the whole device's, so run alone); its largest over the steps is reported as the peak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "backend/ctx.h"
#include "core/rng.h"
#include "io/config.h"
#include "io/tokenizer.h"
#include "reward/reward.h"
#include "train/grpo.h"

enum { PROMPTS = 8, GROUP = 8, MAX_STEPS = 100 };

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "bench_grpo_step: %s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_grpo_step CONFIG_JSON TOKENIZER_JSON [STEPS] [--device cuda|cpu] "
                        "[--max-new-tokens N] [--deterministic] [--no-share-prompts] [--tis-cap C] "
                        "[--gpu-memory-utilization X]\n");
        return 2;
    }
    int steps = 5, cuda = 1, deterministic = 0;
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = PROMPTS;
    c.group_size = GROUP;
    c.gen.max_new_tokens = 256;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--deterministic")) deterministic = 1;
        else if (!strcmp(a, "--no-share-prompts")) c.share_prompts = 0;
        else if (a[0] == '-' && !v) return fail(a, "needs a value");
        else if (!strcmp(a, "--device") && ++i) cuda = strcmp(v, "cpu") != 0;
        else if (!strcmp(a, "--max-new-tokens") && ++i) c.gen.max_new_tokens = atoi(v);
        else if (!strcmp(a, "--tis-cap") && ++i) c.tis_cap = (float)atof(v);
        else if (!strcmp(a, "--gpu-memory-utilization") && ++i) c.engine.gpu_memory_utilization = atof(v);
        else if (a[0] == '-') return fail(a, "unknown option");
        else steps = atoi(a);
    }
    if (steps < 1 || steps > MAX_STEPS) return fail("STEPS", "must be in [1, 100]");
    rl_err err = {{0}};
    rl_model_config cfg;
    rl_ctx ctx;
    rl_model m;
    rl_tokenizer *tok;
    rl_reward *reward;
    if (rl_config_load(&cfg, argv[1], &err)) return fail("config", err.msg);
    if (rl_tok_load(&tok, argv[2], &err)) return fail("tokenizer", err.msg);
    if (rl_ctx_create(&ctx, cuda ? RL_BACKEND_CUDA : RL_BACKEND_CPU, 0, &err)) return fail("context", err.msg);
    ctx.deterministic = deterministic;
    if (rl_model_init_random(&m, &ctx, &cfg, 1, &err)) return fail("model", err.msg);
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
    c.shuffle = 0;
    rl_grpo t;
    if (rl_grpo_create(&t, &m, NULL, tok, reward, prompts, PROMPTS, &c, &err)) return fail("grpo", err.msg);
    double secs[MAX_STEPS], gens[MAX_STEPS], peak = 0;
    for (int s = -1; s < steps; s++) {
        rl_step_stats st;
        if (rl_grpo_step(&t, &st, &err)) return fail("step", err.msg);
        size_t free_b = 0, total_b = 0;
        if (rl_mem_info(&ctx, &free_b, &total_b)) return fail("memory", ctx.err.msg);
        double used = (double)(total_b - free_b) / (1 << 30);
        if (s < 0) continue;
        secs[s] = st.seconds;
        gens[s] = st.gen_seconds;
        if (used > peak) peak = used;
        printf("rlc grpo_step step=%d seconds=%.3f gen_seconds=%.3f completion_len=%.1f used_gib=%.2f "
               "logp_diff_mean=%.3g logp_diff_max=%.3g\n",
               s + 1, st.seconds, st.gen_seconds, st.completion_len, used, st.logp_diff_mean, st.logp_diff_max);
    }
    rl_engine_stats es;
    rl_engine_stats_get(t.engine, &es);
    printf("rlc grpo_step median seconds=%.3f gen_seconds=%.3f peak_used_gib=%.2f pool_gib=%.2f (%s%s%s, %d x %d, "
           "%d new tokens)\n",
           bench_median(secs, steps), bench_median(gens, steps), peak, (double)es.pool_bytes / (1 << 30), rl_backend_name(&ctx),
           deterministic ? " deterministic" : "", c.share_prompts ? "" : " whole prompts", PROMPTS, GROUP,
           c.gen.max_new_tokens);
    rl_grpo_free(&t);
    rl_reward_free(reward);
    rl_tok_free(tok);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return 0;
}
