/* test_sft.c — the SFT trainer on the tiny Qwen3 fixture model: the gradient it applies is the
 * gradient of the loss it reports (checked by a finite difference along that gradient), it
 * learns, prompt tokens carry no loss, and bad examples are refused with a clear message. */
#include <string.h>

#include "backend/ctx.h"
#include "train/sft.h"
#include "test_util.h"

#define MODEL_DIR "tests/fixtures/models/qwen3-tiny-tied"

typedef struct {
    rl_ctx ctx;
    rl_model model;
    int32_t ids[4][12];
    rl_sft_example ex[4];
} fixture;

static void setup(fixture *f)
{
    rl_err err;
    cr_assert_eq(rl_ctx_create(&f->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&f->model, &f->ctx, MODEL_DIR, &err), 0, "%s", err.msg);
    rl_rng rng;
    rl_rng_init(&rng, 7);
    for (int i = 0; i < 4; i++) {
        int n = 8 + i;
        for (int k = 0; k < n; k++) f->ids[i][k] = (int32_t)rl_rng_below(&rng, (uint32_t)f->model.config.vocab_size);
        f->ex[i] = (rl_sft_example){f->ids[i], n, 3 + (i % 2)};
    }
}

static void teardown(fixture *f)
{
    rl_model_free(&f->model);
    rl_ctx_free(&f->ctx);
}

static rl_sft_config config(void)
{
    rl_sft_config c = rl_sft_defaults();
    c.max_tokens = 24; /* two examples per micro-batch */
    c.grad_accum = 2;
    c.optim.schedule.peak = 1e-2;
    c.optim.weight_decay = 0;
    return c;
}

Test(sft, gradient_is_the_reported_loss_gradient)
{
    fixture f;
    setup(&f);
    rl_sft_config c = config();
    c.shuffle = 0;
    c.optim.schedule.peak = 0; /* no update: m after one step is (1 - beta1) * gradient */
    c.optim.max_grad_norm = 0;
    rl_sft t;
    rl_err err;
    cr_assert_eq(rl_sft_create(&t, &f.model, f.ex, 4, &c, &err), 0, "%s", err.msg);
    double before;
    cr_assert_eq(rl_sft_eval_loss(&t, f.ex, 4, &before, &err), 0, "%s", err.msg);
    rl_step_stats st;
    cr_assert_eq(rl_sft_step(&t, &st, &err), 0, "%s", err.msg);
    cr_assert(fabs(st.loss - before) < 1e-6 * before, "step loss %.9g, eval loss %.9g", st.loss, before);
    size_t n = f.model.n_elems;
    float *g = malloc(n * sizeof *g), *w0 = malloc(n * sizeof *w0);
    memcpy(w0, f.model.master, n * sizeof *w0);
    double norm = 0;
    for (size_t i = 0; i < n; i++) {
        g[i] = t.optim.m[i] / (float)(1 - c.optim.beta1);
        norm += (double)g[i] * g[i];
    }
    norm = sqrt(norm);
    cr_assert(fabs(norm - st.grad_norm) < 1e-4 * norm, "norm %g vs reported %g", norm, st.grad_norm);
    /* d loss / d eps along u = g / |g| is |g| */
    double eps = 1e-2, lp, lm;
    for (size_t i = 0; i < n; i++) f.model.master[i] = w0[i] + (float)(eps * g[i] / norm);
    cr_assert_eq(rl_sft_eval_loss(&t, f.ex, 4, &lp, &err), 0);
    for (size_t i = 0; i < n; i++) f.model.master[i] = w0[i] - (float)(eps * g[i] / norm);
    cr_assert_eq(rl_sft_eval_loss(&t, f.ex, 4, &lm, &err), 0);
    double fd = (lp - lm) / (2 * eps);
    cr_assert(fabs(fd - norm) < 2e-2 * norm, "finite difference %g vs gradient norm %g", fd, norm);
    free(g);
    free(w0);
    rl_sft_free(&t);
    teardown(&f);
}

Test(sft, learns_and_ignores_prompt_tokens)
{
    fixture f;
    setup(&f);
    rl_sft_config c = config();
    rl_sft t;
    rl_err err;
    cr_assert_eq(rl_sft_create(&t, &f.model, f.ex, 4, &c, &err), 0, "%s", err.msg);
    double first = 0, last = 0;
    for (int s = 0; s < 40; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_sft_step(&t, &st, &err), 0, "%s", err.msg);
        cr_assert_eq(st.step, s + 1);
        cr_assert_eq(st.tokens, 8 + 9 + 10 + 11, "a step packs all four examples: %g tokens", st.tokens);
        if (s == 0) first = st.loss;
        last = st.loss;
    }
    cr_assert(last < 0.3 * first, "loss %g -> %g", first, last);
    /* changing a prompt token other than the one predicting the completion leaves the loss on
     * the completion different (context) but never adds loss terms: loss over an example whose
     * completion is a single token equals -logp of that token only */
    int32_t ids[4] = {5, 6, 7, 8};
    rl_sft_example one = {ids, 4, 3};
    double l1;
    cr_assert_eq(rl_sft_eval_loss(&t, &one, 1, &l1, &err), 0);
    rl_sft_example all = {ids, 4, 0};
    double l3;
    cr_assert_eq(rl_sft_eval_loss(&t, &all, 1, &l3, &err), 0);
    cr_assert(l1 != l3, "prompt masking had no effect");
    rl_sft_free(&t);
    teardown(&f);
}

Test(sft, bad_examples)
{
    fixture f;
    setup(&f);
    rl_sft_config c = config();
    rl_sft t;
    rl_err err;
    c.max_tokens = 9;
    cr_assert_eq(rl_sft_create(&t, &f.model, f.ex, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "example 1 has 9 tokens") == NULL && strstr(err.msg, "example 2 has 10 tokens"), "%s", err.msg);
    c = config();
    rl_sft_example ex[2] = {f.ex[0], {f.ids[1], 4, 4}};
    cr_assert_eq(rl_sft_create(&t, &f.model, ex, 2, &c, &err), -1);
    cr_assert(strstr(err.msg, "example 1 has no completion tokens"), "%s", err.msg);
    int32_t bad[3] = {1, 2, 100000};
    rl_sft_example ex2[1] = {{bad, 3, 1}};
    cr_assert_eq(rl_sft_create(&t, &f.model, ex2, 1, &c, &err), -1);
    cr_assert(strstr(err.msg, "id 100000") && strstr(err.msg, "vocabulary (512)"), "%s", err.msg);
    teardown(&f);
}
