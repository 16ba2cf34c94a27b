/* test_train.c — the trainers on the CUDA backend against the CPU backend.
 *
 * SFT: the same model, examples and configuration on both backends; the per-step losses and
 * gradient norms of several steps must agree (bf16 activations on the GPU: relative 3e-2; the
 * fp32 mode of backend/ctx.h: 1e-4), and so must the trained weights. GRPO: on the GPU the sampler's log-probs line up with the
 * training forward's (mean ratio 1 on-policy, within bf16 noise) and a step with updates and a
 * KL penalty gives finite, sensible statistics (KL 0 to an identical copy at first, then growing). Both catch a trainer that moves its fp32
 * buffers (log-probs, their gradients, advantages) as if they were bf16 activations. */
#include <string.h>

#include "gpu_util.h"
#include "train/grpo.h"
#include "train/sft.h"

#define SFT_MODEL "tests/fixtures/models/qwen3-tiny-untied"
#define GRPO_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define TOKENIZER "examples/demo/tokenizer.json"
#define SFT_STEPS 6

/* SFT_STEPS steps on ctx; the losses and gradient norms into loss/gnorm, the trained fp32
 * masters into *master (malloc'd). */
static void sft_run(rl_ctx *ctx, float *loss, float *gnorm, float **master, size_t *n_elems)
{
    rl_err err = {{0}};
    rl_model m;
    cr_assert_eq(rl_model_load(&m, ctx, SFT_MODEL, &err), 0, "%s", err.msg);
    static int32_t ids[6][14];
    rl_sft_example ex[6];
    rl_rng rng;
    rl_rng_init(&rng, 11);
    for (int i = 0; i < 6; i++) {
        int n = 9 + i;
        for (int k = 0; k < n; k++) ids[i][k] = (int32_t)rl_rng_below(&rng, (uint32_t)m.config.vocab_size);
        ex[i] = (rl_sft_example){ids[i], n, 3 + (i % 3)};
    }
    rl_sft_config c = rl_sft_defaults();
    c.max_tokens = 32; /* two or three examples per micro-batch */
    c.grad_accum = 2;
    c.shuffle = 0;
    c.optim.schedule.peak = 3e-3;
    rl_sft t;
    cr_assert_eq(rl_sft_create(&t, &m, ex, 6, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < SFT_STEPS; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_sft_step(&t, &st, &err), 0, "%s", err.msg);
        loss[s] = (float)st.loss;
        gnorm[s] = (float)st.grad_norm;
    }
    cr_assert_eq(rl_sync(ctx), 0, "%s", ctx->err.msg);
    *n_elems = m.n_elems;
    *master = malloc(m.n_elems * sizeof(float));
    cr_assert_eq(rl_memcpy(ctx, *master, m.master, m.n_elems * sizeof(float), RL_D2H), 0, "%s", ctx->err.msg);
    rl_sft_free(&t);
    rl_model_free(&m);
}

/* tol_loss, tol_gnorm: relative, per step; bf16 3e-2 and 1e-1, fp32 (backend/ctx.h's fp32 mode)
 * 1e-4 and 1e-3. */
static void sft_matches_cpu(int fp32, double tol_loss, double tol_gnorm)
{
    gu g;
    if (fp32) gu_begin_fp32(&g);
    else gu_begin(&g);
    float loss_c[SFT_STEPS], loss_g[SFT_STEPS], gn_c[SFT_STEPS], gn_g[SFT_STEPS];
    float *w_c, *w_g;
    size_t n_c, n_g;
    sft_run(&g.cpu, loss_c, gn_c, &w_c, &n_c);
    sft_run(&g.gpu, loss_g, gn_g, &w_g, &n_g);
    cr_assert_eq(n_c, n_g);
    double worst_loss = 0, worst_gn = 0;
    for (int s = 0; s < SFT_STEPS; s++) {
        double el = fabs(loss_g[s] - loss_c[s]) / fabs(loss_c[s]);
        double eg = fabs(gn_g[s] - gn_c[s]) / fabs(gn_c[s]);
        fprintf(stderr, "[err] sft step %d: loss cpu %.5f cuda %.5f, grad norm cpu %.5f cuda %.5f\n", s + 1,
                loss_c[s], loss_g[s], gn_c[s], gn_g[s]);
        worst_loss = fmax(worst_loss, el);
        worst_gn = fmax(worst_gn, eg);
    }
    cr_expect(loss_c[SFT_STEPS - 1] < loss_c[0], "the CPU run did not learn: %g -> %g", loss_c[0], loss_c[SFT_STEPS - 1]);
    fprintf(stderr, "[err] sft %s: loss curves %.3g apart (tol %.0e), gradient norms %.3g (tol %.0e)\n",
            fp32 ? "fp32" : "bf16", worst_loss, tol_loss, worst_gn, tol_gnorm);
    cr_expect(worst_loss <= tol_loss, "loss curves differ by %.3e (relative)", worst_loss);
    cr_expect(worst_gn <= tol_gnorm, "gradient norms differ by %.3e (relative)", worst_gn);
    /* Trained weights: max |diff| over the largest update of any weight. */
    double max_diff = 0, max_w = 0;
    for (size_t i = 0; i < n_c; i++) {
        max_diff = fmax(max_diff, fabs(w_g[i] - w_c[i]));
        max_w = fmax(max_w, fabs(w_c[i]));
    }
    fprintf(stderr, "[err] sft weights after %d steps: max |cuda - cpu| %.3g (max |w| %.3g, lr 3e-3)\n", SFT_STEPS,
            max_diff, max_w);
    cr_expect(max_diff <= SFT_STEPS * 3e-3, "weights differ by %.3g, more than the steps could move them", max_diff);
    free(w_c);
    free(w_g);
    gu_end(&g);
}

Test(gpu_train, sft_matches_cpu) { sft_matches_cpu(0, 3e-2, 1e-1); }
Test(gpu_train, sft_fp32_matches_cpu) { sft_matches_cpu(1, 1e-4, 1e-3); }

typedef struct {
    rl_model model, ref;
    rl_tokenizer *tok;
    rl_reward *reward;
    int32_t ids[4][6];
    rl_grpo_prompt prompts[4];
} grpo_fixture;

/* wide_heads: the fixture's config with Qwen3-0.6B's head_dim 128 and a GQA group of 2 (the
 * tensor-core attention), hidden 128, intermediate 256. */
static void grpo_setup_cfg(grpo_fixture *f, rl_ctx *ctx, const char *reward, int wide_heads)
{
    rl_err err = {{0}};
    cr_assert_eq(rl_tok_load(&f->tok, TOKENIZER, &err), 0, "%s", err.msg);
    rl_model_config cfg;
    cr_assert_eq(rl_config_load(&cfg, GRPO_CONFIG, &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(f->tok);
    if (wide_heads) gu_wide_heads(&cfg);
    cr_assert_eq(rl_model_init_random(&f->model, ctx, &cfg, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_init_random(&f->ref, ctx, &cfg, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_reward_create(&f->reward, reward, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3 + i; k++) f->ids[i][k] = 40 + 7 * i + k;
        f->prompts[i] = (rl_grpo_prompt){f->ids[i], 3 + i, "prompt", "1", NULL};
    }
}

static void grpo_setup(grpo_fixture *f, rl_ctx *ctx, const char *reward) { grpo_setup_cfg(f, ctx, reward, 0); }

static void grpo_teardown(grpo_fixture *f)
{
    rl_reward_free(f->reward);
    rl_tok_free(f->tok);
    rl_model_free(&f->ref);
    rl_model_free(&f->model);
}

static rl_grpo_config grpo_config(void)
{
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = 2;
    c.group_size = 4;
    c.gen.max_new_tokens = 6;
    c.max_tokens = 24; /* several micro-batches per update */
    return c;
}

Test(gpu_train, grpo_sampler_logprobs_line_up_with_training)
{
    gu g;
    gu_begin(&g);
    grpo_fixture f;
    grpo_setup(&f, &g.gpu, "regex:^[a-z]");
    rl_grpo_config c = grpo_config();
    c.optim.schedule.peak = 0;
    rl_grpo t;
    rl_err err = {{0}};
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < 3; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        fprintf(stderr, "[err] grpo step %d on cuda: mean ratio %.6f, clip fraction %.3f, loss %.4g\n", s + 1,
                st.ratio_mean, st.clip_frac, st.loss);
        cr_expect(fabs(st.ratio_mean - 1) < 1e-2, "step %d: mean ratio %.6f: old log-probs misaligned", s,
                  st.ratio_mean);
        cr_expect(st.clip_frac < 0.05, "step %d: clip fraction %.3f on-policy", s, st.clip_frac);
        cr_expect(isfinite(st.loss) && fabs(st.loss) < 10, "step %d: loss %g", s, st.loss);
        cr_expect(st.completion_len >= 1 && st.completion_len <= 6, "%g", st.completion_len);
    }
    rl_grpo_free(&t);
    grpo_teardown(&f);
    gu_end(&g);
}

Test(gpu_train, grpo_updates_with_kl_stay_finite)
{
    gu g;
    gu_begin(&g);
    grpo_fixture f;
    grpo_setup(&f, &g.gpu, "regex:^[a-m]");
    rl_grpo_config c = grpo_config();
    c.optim.schedule.peak = 5e-3;
    c.kl_beta = 0.1; /* mu = 1: the first step's statistics come before any update */
    rl_grpo t;
    rl_err err = {{0}};
    cr_assert_eq(rl_grpo_create(&t, &f.model, &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    double kl_first = -1, kl_last = -1;
    for (int s = 0; s < 6; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        fprintf(stderr, "[err] grpo+kl step %d on cuda: reward %.3f loss %.4g kl %.3g grad norm %.3g ratio %.4f\n",
                s + 1, st.reward_mean, st.loss, st.kl, st.grad_norm, st.ratio_mean);
        cr_expect(isfinite(st.loss) && fabs(st.loss) < 10, "step %d: loss %g", s, st.loss);
        cr_expect(isfinite(st.kl) && st.kl >= -1e-3 && st.kl < 10, "step %d: kl %g", s, st.kl);
        cr_expect(isfinite(st.grad_norm) && st.grad_norm < 1e3, "step %d: grad norm %g", s, st.grad_norm);
        cr_expect(st.ratio_mean > 0.5 && st.ratio_mean < 2, "step %d: mean ratio %g", s, st.ratio_mean);
        if (s == 0) kl_first = st.kl;
        kl_last = st.kl;
    }
    cr_expect(fabs(kl_first) < 1e-2, "the first step's KL to an identical copy is %g", kl_first);
    cr_expect(kl_last > kl_first, "the KL did not grow under training: %g -> %g", kl_first, kl_last);
    rl_grpo_free(&t);
    grpo_teardown(&f);
    gu_end(&g);
}

/* Deterministic mode on CUDA (bf16, batch-invariant products, the training attention over the
 * pool): every rollout log-prob is the trainer's, bit for bit, step after step (the weights
 * change between steps), on the tiny fixture (head_dim 16: the CUDA-core attention) and with
 * head_dim 128 / GQA (the tensor-core attention). */
static void grpo_deterministic(int wide_heads)
{
    gu g;
    gu_begin(&g);
    rl_err err = {{0}};
    cr_assert_eq(rl_ctx_set_precision(&g.gpu, RL_PRECISION_BF16, &err), 0, "%s", err.msg);
    g.gpu.deterministic = 1;
    grpo_fixture f;
    grpo_setup_cfg(&f, &g.gpu, "regex:^[a-m]", wide_heads);
    cr_assert_eq(g.gpu.act_dtype, RL_BF16);
    rl_grpo_config c = grpo_config();
    c.gen.max_new_tokens = 12;
    rl_grpo t;
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < 3; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        fprintf(stderr, "[err] deterministic grpo step %d (head_dim %d): rollout logp diff mean %g max %g, %g tokens\n",
                s + 1, wide_heads ? 128 : 16, st.logp_diff_mean, st.logp_diff_max, st.completion_len);
        cr_expect(st.completion_len >= 1, "step %d: no completion tokens", s);
        cr_expect(st.logp_diff_max == 0 && st.logp_diff_mean == 0, "step %d: rollout log-probs differ from the "
                  "trainer's by up to %g (mean %g)", s, st.logp_diff_max, st.logp_diff_mean);
        cr_expect(isfinite(st.loss), "step %d: loss %g", s, st.loss);
    }
    rl_grpo_free(&t);
    grpo_teardown(&f);
    gu_end(&g);
}

Test(gpu_train, grpo_deterministic_mismatch_is_zero) { grpo_deterministic(0); }
Test(gpu_train, grpo_deterministic_mismatch_is_zero_head_dim_128) { grpo_deterministic(1); }

/* Run-to-run reproducibility (docs/cuda-backend.md): the backward's weight-gradient sums
 * (embedding rows of repeated ids, RMSNorm weights, biases) add per-block partials in a fixed
 * order, not with float atomics, so two GRPO runs from the same seed give the same statistics
 * and the same trained weights, bit for bit, in the fast mode too. 4 steps of updates with
 * several micro-batches, head_dim 128 (the tensor-core kernels). */
static float *grpo_weights_after(gu *g, int steps, double *stats, size_t *n_elems, float **initial)
{
    grpo_fixture f;
    grpo_setup_cfg(&f, &g->gpu, "regex:^[a-m]", 1);
    if (initial) {
        *initial = malloc(f.model.n_elems * sizeof(float));
        cr_assert_eq(rl_memcpy(&g->gpu, *initial, f.model.master, f.model.n_elems * sizeof(float), RL_D2H), 0, "%s",
                     g->gpu.err.msg);
    }
    rl_grpo_config c = grpo_config();
    c.optim.schedule.peak = 5e-3;
    rl_grpo t;
    rl_err err = {{0}};
    cr_assert_eq(rl_grpo_create(&t, &f.model, NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_grpo_step(&t, &st, &err), 0, "%s", err.msg);
        double x[4] = {st.loss, st.grad_norm, st.reward_mean, st.completion_len};
        memcpy(stats + 4 * s, x, sizeof x);
    }
    cr_assert_eq(rl_sync(&g->gpu), 0, "%s", g->gpu.err.msg);
    *n_elems = f.model.n_elems;
    float *w = malloc(f.model.n_elems * sizeof(float));
    cr_assert_eq(rl_memcpy(&g->gpu, w, f.model.master, f.model.n_elems * sizeof(float), RL_D2H), 0, "%s",
                 g->gpu.err.msg);
    rl_grpo_free(&t);
    grpo_teardown(&f);
    return w;
}

Test(gpu_train, grpo_runs_are_bit_identical)
{
    gu g;
    gu_begin(&g);
    double a[16], b[16];
    size_t n, n2;
    float *w0, *wa = grpo_weights_after(&g, 4, a, &n, &w0), *wb = grpo_weights_after(&g, 4, b, &n2, NULL);
    cr_assert_eq(n, n2);
    for (int i = 0; i < 16; i++) {
        if (i % 4 == 0)
            fprintf(stderr, "[err] grpo step %d, two runs: loss %.9g / %.9g, grad norm %.9g / %.9g, reward %g / %g\n",
                    i / 4 + 1, a[i], b[i], a[i + 1], b[i + 1], a[i + 2], b[i + 2]);
        cr_expect(!memcmp(&a[i], &b[i], sizeof(double)), "step %d statistic %d: %.9g vs %.9g", i / 4 + 1, i % 4, a[i],
                  b[i]);
    }
    size_t diff = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        diff += memcmp(&wa[i], &wb[i], sizeof(float)) != 0;
        moved += wa[i] != w0[i];
    }
    fprintf(stderr, "[err] two GRPO runs from one seed: %zu of %zu trained weights differ (%zu moved in training)\n",
            diff, n, moved);
    cr_expect(diff == 0, "%zu of %zu weights differ between two runs from the same seed", diff, n);
    cr_expect(moved > n / 2, "only %zu of %zu weights moved: the comparison would see little", moved, n);
    free(w0);
    free(wa);
    free(wb);
    gu_end(&g);
}
