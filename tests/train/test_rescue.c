/* test_rescue.c — a non-finite loss in the middle of a real run (train/loop.h's rescue): the
 * step fails without touching the weights, the loop saves the last completed step, and a run
 * resumed from that checkpoint ends bit-identical to one that never failed.
 *   GRPO: step 3 of 5 sees a reference model turned NaN (its KL term makes the loss NaN; the
 *         policy itself is clean), so "the loss is nan" stops the step before any update;
 *   SFT:  step 3 of 5 starts with a NaN in the gradient buffer, so the optimizer refuses the
 *         non-finite gradient norm. */
#include <math.h>
#include <string.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "train/grpo.h"
#include "train/loop.h"
#include "train/sft.h"
#include "test_util.h"

#define MODEL_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define TOKENIZER "examples/demo/tokenizer.json"
#define TOTAL 5
#define FAIL_AT 3

typedef struct run {
    rl_ctx ctx;
    rl_model model, ref;
    rl_tokenizer *tok;
    rl_reward *reward;
    int32_t ids[4][12];
    rl_grpo_prompt prompts[4];
    rl_sft_example ex[4];
    rl_grpo grpo;
    rl_sft sft;
    int is_sft;
    int64_t poison_at; /* the step that starts poisoned (0: none) */
} run;

/* The model from dir, or random (seed 5) with the fixture's architecture and the tokenizer's
 * vocabulary; the reference a clean copy of that start. */
static void setup(run *r, const char *dir, int is_sft)
{
    rl_err err;
    memset(r, 0, sizeof *r);
    r->is_sft = is_sft;
    cr_assert_eq(rl_ctx_create(&r->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&r->tok, TOKENIZER, &err), 0, "%s", err.msg);
    rl_model_config cfg;
    cr_assert_eq(rl_config_load(&cfg, MODEL_CONFIG, &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(r->tok);
    cr_assert_eq(rl_model_init_random(&r->ref, &r->ctx, &cfg, 5, &err), 0, "%s", err.msg);
    if (dir) cr_assert_eq(rl_model_load(&r->model, &r->ctx, dir, &err), 0, "%s", err.msg);
    else cr_assert_eq(rl_model_init_random(&r->model, &r->ctx, &cfg, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_reward_create(&r->reward, "regex:^[a-m]", NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 12; k++) r->ids[i][k] = 40 + 7 * i + k;
        r->prompts[i] = (rl_grpo_prompt){r->ids[i], 3 + i, "prompt", "1", NULL};
        r->ex[i] = (rl_sft_example){r->ids[i], 8 + i, 3};
    }
    if (is_sft) {
        rl_sft_config c = rl_sft_defaults();
        c.max_tokens = 24;
        c.optim.schedule.peak = 1e-2;
        cr_assert_eq(rl_sft_create(&r->sft, &r->model, r->ex, 4, &c, &err), 0, "%s", err.msg);
    } else {
        rl_grpo_config c = rl_grpo_defaults();
        c.prompts_per_step = 2;
        c.group_size = 4;
        c.gen.max_new_tokens = 4;
        c.max_tokens = 24;
        c.kl_beta = 0.1f;
        c.optim.schedule.peak = 5e-3;
        cr_assert_eq(rl_grpo_create(&r->grpo, &r->model, &r->ref, r->tok, r->reward, r->prompts, 4, &c, &err), 0, "%s",
                     err.msg);
    }
}

static void teardown(run *r)
{
    if (r->is_sft) rl_sft_free(&r->sft);
    else rl_grpo_free(&r->grpo);
    rl_reward_free(r->reward);
    rl_tok_free(r->tok);
    rl_model_free(&r->ref);
    rl_model_free(&r->model);
    rl_ctx_free(&r->ctx);
}

static int64_t done(void *u)
{
    run *r = u;
    return r->is_sft ? r->sft.state.step : r->grpo.state.step;
}

static int step(void *u, rl_step_stats *s, rl_err *err)
{
    run *r = u;
    if (done(r) + 1 == r->poison_at) {
        if (r->is_sft) r->model.grads[1] = NAN;
        else
            for (size_t i = 0; i < r->ref.n_elems; i++) r->ref.master[i] = NAN;
    }
    return r->is_sft ? rl_sft_step(&r->sft, s, err) : rl_grpo_step(&r->grpo, s, err);
}

static int save(void *u, const char *dir, rl_err *err)
{
    run *r = u;
    return r->is_sft ? rl_sft_save(&r->sft, dir, NULL, NULL, err) : rl_grpo_save(&r->grpo, dir, NULL, NULL, err);
}

static int rescue(void *u)
{
    run *r = u;
    return r->is_sft ? rl_sft_rescue(&r->sft) : rl_grpo_rescue(&r->grpo);
}

static int loop(run *r, const char *ckpt, rl_err *err)
{
    rl_train_hooks h = {r, step, save, done, rescue};
    rl_loop_config c = {"test", TOTAL, 0, ckpt, NULL, NULL, NULL};
    return rl_train_loop(&h, &c, err);
}

static void check(int is_sft, const char *message)
{
    char dir[] = "/tmp/rlc-rescue-XXXXXX";
    cr_assert(mkdtemp(dir));
    char ckpt[256], whole_dir[256];
    snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
    snprintf(whole_dir, sizeof whole_dir, "%s/whole", dir);
    rl_err err;
    run whole, broken, resumed;
    setup(&whole, NULL, is_sft);
    cr_assert_eq(loop(&whole, whole_dir, &err), 0, "%s", err.msg);

    setup(&broken, NULL, is_sft);
    broken.poison_at = FAIL_AT;
    cr_assert_eq(loop(&broken, ckpt, &err), -1, "the poisoned step did not fail");
    cr_assert(strstr(err.msg, message), "%s", err.msg);
    rl_train_state st;
    cr_assert_eq(rl_checkpoint_load_state(ckpt, &st, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(st.step, FAIL_AT - 1, "the checkpoint holds step %lld", (long long)st.step);
    for (size_t i = 0; i < broken.model.n_elems; i++)
        cr_assert(isfinite(broken.model.master[i]), "weight %zu is %g after the failed step", i, broken.model.master[i]);
    teardown(&broken);

    setup(&resumed, ckpt, is_sft);
    cr_assert_eq(is_sft ? rl_sft_resume(&resumed.sft, ckpt, &err) : rl_grpo_resume(&resumed.grpo, ckpt, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(loop(&resumed, NULL, &err), 0, "%s", err.msg);
    size_t diff = 0, moved = 0;
    for (size_t i = 0; i < whole.model.n_elems; i++) {
        diff += memcmp(&whole.model.master[i], &resumed.model.master[i], sizeof(float)) != 0;
        moved += whole.model.master[i] != whole.ref.master[i];
    }
    cr_assert(moved > 0, "training did not change the weights");
    cr_assert_eq(diff, 0, "%zu of %zu weights differ from the run that never failed", diff, whole.model.n_elems);
    teardown(&whole);
    teardown(&resumed);
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
}

Test(rescue, grpo_non_finite_loss_saves_the_last_step_and_resumes_exactly)
{
    check(0, "grpo step 3: the loss is nan (non-finite) in update 1 of 1; weights left unchanged");
}

Test(rescue, sft_non_finite_gradient_saves_the_last_step_and_resumes_exactly)
{
    check(1, "gradient norm is nan; weights left unchanged");
}
