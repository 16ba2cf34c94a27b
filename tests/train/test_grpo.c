/* test_grpo.c — the GRPO trainer on the tiny Qwen3 fixture model with the demo tokenizer:
 * the sampler's log-probs line up with the training forward's (ratio 1 on-policy), a constant
 * reward gives a zero gradient, the reward rises under training, the KL to a frozen copy starts
 * at 0 and grows, and a resumed run is bit-identical to an uninterrupted one; the
 * train-vs-rollout log-prob mismatch is small, and exactly 0 in deterministic mode; truncated
 * importance sampling weighs the loss by min(exp(trainer - sampler), cap); a group's prompt run
 * once per micro-batch (share_prompts) gives the update of the whole sequences. */
#include <string.h>
#include <unistd.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "train/grpo.h"
#include "test_util.h"

#define MODEL_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define TOKENIZER "examples/demo/tokenizer.json"

typedef struct {
    rl_ctx ctx;
    rl_model model, ref;
    rl_tokenizer *tok;
    rl_reward *reward;
    int32_t ids[4][6];
    rl_grpo_prompt prompts[4];
} fixture;

static void setup(fixture *f, const char *model_dir, const char *reward, int with_ref)
{
    rl_err err;
    cr_assert_eq(rl_ctx_create(&f->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&f->tok, TOKENIZER, &err), 0, "%s", err.msg);
    if (model_dir) {
        cr_assert_eq(rl_model_load(&f->model, &f->ctx, model_dir, &err), 0, "%s", err.msg);
    } else { /* the fixture's architecture with the tokenizer's vocabulary, random weights */
        rl_model_config cfg;
        cr_assert_eq(rl_config_load(&cfg, MODEL_CONFIG, &err), 0, "%s", err.msg);
        cfg.vocab_size = rl_tok_vocab_size(f->tok);
        cr_assert_eq(rl_model_init_random(&f->model, &f->ctx, &cfg, 5, &err), 0, "%s", err.msg);
    }
    if (with_ref) { /* a frozen copy */
        cr_assert_eq(rl_model_init_random(&f->ref, &f->ctx, &f->model.config, 5, &err), 0, "%s", err.msg);
        memcpy(f->ref.master, f->model.master, f->model.n_elems * sizeof(float));
    }
    cr_assert_eq(rl_reward_create(&f->reward, reward, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3 + i; k++) f->ids[i][k] = 40 + 7 * i + k;
        f->prompts[i] = (rl_grpo_prompt){f->ids[i], 3 + i, "prompt", "1", NULL};
    }
}

static void teardown(fixture *f, int with_ref)
{
    rl_reward_free(f->reward);
    rl_tok_free(f->tok);
    if (with_ref) rl_model_free(&f->ref);
    rl_model_free(&f->model);
    rl_ctx_free(&f->ctx);
}

static rl_grpo_config config(void)
{
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = 2;
    c.group_size = 4;
    c.gen.max_new_tokens = 4;
    c.max_tokens = 24; /* several micro-batches per update */
    c.optim.schedule.peak = 5e-3;
    return c;
}

Test(grpo, sampler_logprobs_line_up_with_training)
{
    fixture f;
    setup(&f, NULL, "regex:^[a-z]", 0);
    rl_grpo_config c = config();
    c.optim.schedule.peak = 0;
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < 3; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        cr_assert(fabs(st.ratio_mean - 1) < 1e-4, "step %d: mean ratio %.8f: old log-probs misaligned", s, st.ratio_mean);
        cr_assert_eq(st.clip_frac, 0.0);
        cr_assert(st.completion_len >= 1 && st.completion_len <= 4, "%g", st.completion_len);
    }
    rl_grpo_free(&t);
    teardown(&f, 0);
}

/* The engine's KV pool holds one step (prompts x group sequences of the longest prompt + max
 * new tokens, whole blocks, + 1 block each), not a fraction of the free memory. */
Test(grpo, the_kv_pool_is_sized_by_the_step)
{
    fixture f;
    setup(&f, NULL, "regex:^[a-z]", 0);
    rl_grpo_config c = config();
    c.gen.max_new_tokens = 12;
    c.engine.block_size = 4;
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    rl_step_stats st;
    cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
    rl_engine_stats es;
    rl_engine_stats_get(t.engine, &es);
    /* longest prompt 6 + 12 new = 18 tokens: 5 blocks of 4, + 1 */
    cr_assert_eq(es.n_blocks, 2 * 4 * (5 + 1), "pool of %d blocks", es.n_blocks);
    cr_assert_eq(es.block_size, 4);
    rl_grpo_free(&t);
    teardown(&f, 0);
}

Test(grpo, constant_reward_gives_zero_gradient)
{
    fixture f;
    setup(&f, NULL, "regex:.?", 0); /* matches every completion: reward 1 everywhere */
    rl_grpo_config c = config();
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    rl_step_stats st;
    cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
    cr_assert(st.reward_mean == 1 && st.reward_std == 0);
    cr_assert(st.loss == 0 && st.grad_norm == 0, "loss %g grad norm %g", st.loss, st.grad_norm);
    rl_grpo_free(&t);
    teardown(&f, 0);
}

Test(grpo, reward_rises_and_kl_grows)
{
    fixture f;
    setup(&f, NULL, "regex:^[0-9]", 1); /* completions that start with a digit */
    rl_grpo_config c = config();
    c.prompts_per_step = 4;
    c.group_size = 8;
    c.max_tokens = 64;
    c.gen.max_new_tokens = 2;
    c.kl_beta = 0.01f;
    c.loss_norm = RL_NORM_TOKEN;
    c.optim.schedule.peak = 2e-2;
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    double first = 0, last = 0, kl0 = -1, kl_last = 0;
    int steps = 25;
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        if (s < 5) first += st.reward_mean / 5;
        if (s >= steps - 5) last += st.reward_mean / 5;
        if (s == 0) kl0 = st.kl;
        kl_last = st.kl;
    }
    cr_assert(fabs(kl0) < 1e-6, "KL to an identical reference is %g", kl0);
    cr_assert(kl_last > 1e-4, "KL stayed at %g", kl_last);
    cr_assert(last > first + 0.3, "reward %.3f -> %.3f", first, last);
    rl_grpo_free(&t);
    teardown(&f, 1);
}

static void run(const char *model_dir, const char *resume, int steps, const char *save, float **w, size_t *n)
{
    fixture f;
    setup(&f, model_dir, "regex:^[a-m]", 0);
    rl_grpo_config c = config();
    c.mu = 2;
    c.loss_norm = RL_NORM_DR_GRPO;
    c.scale_std = 0;
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    if (resume) cr_assert_eq(rl_grpo_resume(&t, resume, &err), 0, "%s", err.msg);
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
    }
    if (save) cr_assert_eq(rl_grpo_save(&t, save, NULL, NULL, &err), 0, "%s", err.msg);
    *n = f.model.n_elems;
    *w = malloc(*n * sizeof(float));
    memcpy(*w, f.model.master, *n * sizeof(float));
    rl_grpo_free(&t);
    teardown(&f, 0);
}

Test(grpo, resume_is_bit_exact)
{
    char dir[] = "/tmp/rlc-grpo-XXXXXX";
    cr_assert(mkdtemp(dir));
    char ck[256];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    float *full, *half, *res;
    size_t n;
    run(NULL, NULL, 3, NULL, &full, &n);
    run(NULL, NULL, 1, ck, &half, &n);
    run(ck, ck, 2, NULL, &res, &n);
    size_t diff = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        diff += memcmp(&full[i], &res[i], sizeof(float)) != 0;
        moved += full[i] != half[i];
    }
    cr_assert(moved > 0, "training did not change the weights");
    cr_assert_eq(diff, 0, "%zu of %zu weights differ after resume", diff, n);
    free(full), free(half), free(res);
    rl_err err;
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
}

Test(grpo, bad_configs)
{
    fixture f;
    setup(&f, NULL, "math", 0);
    rl_grpo t;
    rl_err err;
    rl_grpo_config c = config();
    c.kl_beta = 0.1f;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "reference model"), "%s", err.msg);
    c = config();
    c.max_tokens = 8;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "longest prompt (6 tokens)") && strstr(err.msg, "max_tokens = 8"), "%s", err.msg);
    c = config();
    c.group_size = 1;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "group_size >= 2"), "%s", err.msg);
    c = config();
    c.gen.sample.temperature = 0;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "temperature must be > 0"), "%s", err.msg);
    teardown(&f, 0);
}

/* --variant's presets: DAPO and Dr. GRPO change their settings unless the caller kept them. */
Test(grpo, variant_presets)
{
    rl_grpo_config c = rl_grpo_defaults(), d = c;
    rl_grpo_variant(&c, RL_GRPO_VARIANT_GRPO, 0);
    cr_expect(c.clip_high == d.clip_high && c.loss_norm == d.loss_norm && c.scale_std == d.scale_std);
    rl_grpo_variant(&c, RL_GRPO_VARIANT_DAPO, 0);
    cr_expect(c.clip_high == 0.28f && c.loss_norm == RL_NORM_TOKEN && c.scale_std == 1);
    c = d;
    rl_grpo_variant(&c, RL_GRPO_VARIANT_DR_GRPO, 0);
    cr_expect(c.loss_norm == RL_NORM_DR_GRPO && c.scale_std == 0 && c.clip_high == d.clip_high);
    c = d;
    c.clip_high = 0.5f;
    rl_grpo_variant(&c, RL_GRPO_VARIANT_DAPO, RL_GRPO_KEEP_CLIP_HIGH);
    cr_expect(c.clip_high == 0.5f && c.loss_norm == RL_NORM_TOKEN);
    c = d;
    rl_grpo_variant(&c, RL_GRPO_VARIANT_DR_GRPO, RL_GRPO_KEEP_LOSS_NORM | RL_GRPO_KEEP_SCALE_STD);
    cr_expect(c.loss_norm == d.loss_norm && c.scale_std == 1);
    cr_expect_str_eq(rl_grpo_variant_names[RL_GRPO_VARIANT_DR_GRPO], "dr_grpo");
}

/* Steps of a fresh trainer (the fixture's random model) with tis_cap; the stats of each.
 * *shared_rows: rows the last micro-batch's view ran in prefix sequences (0 when not NULL). */
static void run_steps_sharing(int share, int deterministic, float tis_cap, int n_steps, rl_step_stats *st,
                              float **params, size_t *n, int *shared_rows)
{
    fixture f;
    setup(&f, NULL, "regex:^[a-z]", 0);
    f.ctx.deterministic = deterministic;
    rl_grpo_config c = config();
    c.tis_cap = tis_cap;
    c.mu = 2;
    c.share_prompts = share;
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < n_steps; s++) cr_assert_eq(rl_grpo_step(&t, &st[s], &err), 0, "%s", err.msg);
    if (shared_rows) {
        *shared_rows = 0;
        for (int g = 0; g < t.view.n_segs; g++)
            if (t.view.prefix_of[g] >= 0) *shared_rows += t.view.cu[t.view.prefix_of[g] + 1] - t.view.cu[t.view.prefix_of[g]];
    }
    *n = f.model.n_elems;
    *params = malloc(*n * sizeof(float));
    memcpy(*params, f.model.master, *n * sizeof(float));
    rl_grpo_free(&t);
    teardown(&f, 0);
}

static void run_steps(int deterministic, float tis_cap, int n_steps, rl_step_stats *st, float **params, size_t *n)
{
    run_steps_sharing(1, deterministic, tis_cap, n_steps, st, params, n, NULL);
}

/* share_prompts (grpo.h) changes only the order of float sums: the same stats and nearly the
 * same weights as every sample run whole; in deterministic mode the sampler's log-probs are
 * still the trainer's bit for bit. */
Test(grpo, shared_prompts_give_the_whole_sequences_update)
{
    for (int det = 0; det < 2; det++) {
        rl_step_stats whole[2], shared[2];
        float *p_whole, *p_shared;
        size_t n;
        int rows_whole, rows_shared;
        run_steps_sharing(0, det, 0, 2, whole, &p_whole, &n, &rows_whole);
        run_steps_sharing(1, det, 0, 2, shared, &p_shared, &n, &rows_shared);
        cr_assert(rows_whole == 0 && rows_shared > 0, "prefix rows: %d without sharing, %d with", rows_whole,
                  rows_shared);
        for (int s = 0; s < 2; s++) {
            cr_expect(fabs(shared[s].loss - whole[s].loss) <= 1e-6 * fmax(1, fabs(whole[s].loss)),
                      "step %d loss %.9g shared, %.9g whole", s, shared[s].loss, whole[s].loss);
            cr_expect(shared[s].reward_mean == whole[s].reward_mean && shared[s].tokens == whole[s].tokens,
                      "step %d: the same rollout", s);
            if (det)
                cr_expect(shared[s].logp_diff_max == 0, "deterministic step %d: gap %g with shared prompts", s,
                          shared[s].logp_diff_max);
        }
        double worst = 0, scale = 0;
        for (size_t i = 0; i < n; i++) {
            worst = fmax(worst, fabs((double)p_shared[i] - p_whole[i]));
            scale = fmax(scale, fabs((double)p_whole[i]));
        }
        /* four AdamW updates of lr 5e-3 each move a weight by up to 2e-2; the sums' order moves
         * that by a few 1e-6 (Adam divides small gradients by their own size) */
        cr_expect(worst <= 2e-5 * scale, "deterministic %d: weights differ by %.3g (scale %.3g)", det, worst, scale);
        free(p_whole), free(p_shared);
    }
}

Test(grpo, rollout_mismatch_is_measured_and_zero_when_deterministic)
{
    rl_step_stats fast[2], exact[2];
    float *p_fast, *p_exact;
    size_t n;
    run_steps(0, 0, 2, fast, &p_fast, &n);
    run_steps(1, 0, 2, exact, &p_exact, &n);
    for (int s = 0; s < 2; s++) {
        cr_log_info("step %d: |trainer - sampler| log-prob mean %.3g max %.3g (deterministic: %g %g)", s,
                    fast[s].logp_diff_mean, fast[s].logp_diff_max, exact[s].logp_diff_mean, exact[s].logp_diff_max);
        cr_assert(fast[s].logp_diff_max <= 1e-4 && fast[s].logp_diff_mean <= fast[s].logp_diff_max);
        cr_assert(exact[s].logp_diff_max == 0 && exact[s].logp_diff_mean == 0,
                  "deterministic mode: the sampler's log-probs must be the trainer's bit for bit");
        cr_assert(!fast[s].has_tis && !exact[s].has_tis);
    }
    free(p_fast), free(p_exact);
}

Test(grpo, truncated_importance_sampling)
{
    /* Deterministic mode: trainer and sampler agree exactly, so every weight is min(1, cap):
     * a cap of 2 changes nothing at all; a cap of 0.5 halves every token's loss. */
    rl_step_stats off[2], cap2[2], half[2];
    float *p_off, *p_cap2, *p_half;
    size_t n;
    run_steps(1, 0, 2, off, &p_off, &n);
    run_steps(1, 2.0f, 2, cap2, &p_cap2, &n);
    run_steps(1, 0.5f, 1, half, &p_half, &n);
    cr_assert(cap2[0].has_tis && cap2[0].tis_mean == 1 && cap2[1].tis_mean == 1);
    cr_assert(!memcmp(p_off, p_cap2, n * sizeof(float)), "weights of 1 must not change the update");
    cr_assert(half[0].tis_mean == 0.5);
    cr_assert(half[0].loss == 0.5 * off[0].loss && off[0].loss != 0, "loss %.9g with a cap of 0.5, %.9g without",
              half[0].loss, off[0].loss);
    /* Without deterministic mode the weights are exp(trainer - sampler) near 1. */
    rl_step_stats fast[1];
    float *p_fast;
    run_steps(0, 2.0f, 1, fast, &p_fast, &n);
    cr_assert(fabs(fast[0].tis_mean - 1) < 1e-4, "mean weight %.9g", fast[0].tis_mean);
    free(p_off), free(p_cap2), free(p_half), free(p_fast);
}

/* Prompts of several KV blocks, the same every step: the engine's prefix cache must not serve
 * keys computed with the weights before the last update (the mismatch would show it). */
Test(grpo, no_stale_prefix_cache_across_updates)
{
    fixture f;
    setup(&f, NULL, "regex:^[a-m]", 0);
    f.ctx.deterministic = 1;
    int32_t ids[2][70];
    rl_grpo_prompt prompts[2];
    for (int p = 0; p < 2; p++) {
        for (int k = 0; k < 70; k++) ids[p][k] = 40 + (13 * k + 7 * p) % 300;
        prompts[p] = (rl_grpo_prompt){ids[p], 70, "prompt", "1", NULL};
    }
    rl_grpo_config c = config();
    c.max_tokens = 2 * 74;
    c.shuffle = 0;
    rl_grpo t;
    rl_err err;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, prompts, 2, &c, &err), 0, "%s", err.msg);
    int updated = 0;
    for (int s = 0; s < 4; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        cr_assert(st.logp_diff_max == 0, "step %d: the rollout's log-probs differ from the trainer's by up to %g", s,
                  st.logp_diff_max);
        if (s < 3) updated += st.grad_norm > 0;
    }
    cr_assert_gt(updated, 0, "the weights must change before a later step for the test to mean anything");
    rl_grpo_free(&t);
    teardown(&f, 0);
}
