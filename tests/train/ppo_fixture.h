/* ppo_fixture.h — what test_ppo.c (a separate value model) and test_ppo_shared.c (the value head
 * on the policy's trunk, --critic shared) share: the tiny Qwen3 fixture architecture with the
 * demo tokenizer and 4 short prompts, the trainer's test configuration, a run of steps that
 * returns the weights (for the resume and warmup tests), and the critic test's reward: an
 * external program scoring prompts "p1" and "p3" 1 and every other prompt 0, whatever the
 * completion, so only the prompt decides the return. */
#ifndef RLC_TESTS_PPO_FIXTURE_H
#define RLC_TESTS_PPO_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "train/ppo.h"
#include "test_util.h"

#define PPO_MODEL_CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"
#define PPO_TOKENIZER "examples/demo/tokenizer.json"

typedef struct {
    rl_ctx ctx;
    rl_model model, value, ref; /* value: only with the separate critic */
    int separate;
    rl_tokenizer *tok;
    rl_reward *reward;
    int32_t ids[4][6];
    rl_grpo_prompt prompts[4];
} fixture;

/* dir NULL: random policy (seed 5), and with the separate critic a value model that is its trunk
 * with a zero head (saved and loaded through a temporary directory); else the checkpoint dir
 * (and dir/value). The reference is the initial policy, also when resuming. */
static inline void ppo_setup(fixture *f, rl_critic_kind critic, const char *dir, const char *reward)
{
    rl_err err;
    memset(f, 0, sizeof *f);
    f->separate = critic == RL_CRITIC_SEPARATE;
    cr_assert_eq(rl_ctx_create(&f->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_tok_load(&f->tok, PPO_TOKENIZER, &err), 0, "%s", err.msg);
    rl_model_config cfg;
    cr_assert_eq(rl_config_load(&cfg, PPO_MODEL_CONFIG, &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(f->tok);
    char vdir[300];
    if (dir) {
        cr_assert_eq(rl_model_load(&f->model, &f->ctx, dir, &err), 0, "%s", err.msg);
        snprintf(vdir, sizeof vdir, "%s/value", dir);
        if (f->separate) cr_assert_eq(rl_model_load_value(&f->value, &f->ctx, vdir, &err), 0, "%s", err.msg);
    } else {
        cr_assert_eq(rl_model_init_random(&f->model, &f->ctx, &cfg, 5, &err), 0, "%s", err.msg);
        if (f->separate) {
            char tmp[] = "/tmp/rlc-ppo-init-XXXXXX";
            cr_assert(mkdtemp(tmp));
            cr_assert_eq(rl_model_save(&f->model, tmp, RL_F32, &err), 0, "%s", err.msg);
            cr_assert_eq(rl_model_load_value(&f->value, &f->ctx, tmp, &err), 0, "%s", err.msg);
            rl_remove_tree(tmp, &err);
        }
    }
    cr_assert_eq(rl_model_init_random(&f->ref, &f->ctx, &f->model.config, 5, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_reward_create(&f->reward, reward, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3 + i; k++) f->ids[i][k] = 40 + 7 * i + k;
        f->prompts[i] = (rl_grpo_prompt){f->ids[i], 3 + i, "prompt", "1", NULL};
    }
}

static inline void ppo_teardown(fixture *f)
{
    rl_reward_free(f->reward);
    rl_tok_free(f->tok);
    rl_model_free(&f->ref);
    if (f->separate) rl_model_free(&f->value);
    rl_model_free(&f->model);
    rl_ctx_free(&f->ctx);
}

/* The fixture's value model for rl_ppo_create: NULL with the shared critic. */
static inline rl_model *ppo_value(fixture *f) { return f->separate ? &f->value : NULL; }

static inline rl_ppo_config ppo_test_config(rl_critic_kind critic)
{
    rl_ppo_config c = rl_ppo_defaults();
    c.critic = critic;
    c.prompts_per_step = 4;
    c.samples_per_prompt = 4;
    c.gen.max_new_tokens = 3;
    c.max_tokens = 24; /* several micro-batches per mini-batch */
    c.ppo_epochs = 2;
    c.num_mini_batches = 2;
    c.kl_coef = 0.02;
    c.target_kl = 0.5;
    c.reward_norm = 1;
    c.reward_clip = 3;
    if (critic == RL_CRITIC_SEPARATE) c.missing_eos_penalty = 0.1f;
    c.optim.schedule.peak = 5e-3;
    c.value_optim.schedule.peak = 5e-3;
    return c;
}

static inline size_t n_diff(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

/* Runs steps of the regex:^[a-m] task from dir (NULL: fresh), saves to save when given; returns
 * the policy's weights, the critic's (the value model's, or the shared head's) and the reward
 * statistics (masters; the caller frees the weights). */
static inline void ppo_run(rl_critic_kind critic, const char *dir, int steps, const char *save, int warmup, float **w,
                           size_t *n, float **v, size_t *nv, rl_running_stats *rs)
{
    fixture f;
    ppo_setup(&f, critic, dir, "regex:^[a-m]");
    rl_ppo_config c = ppo_test_config(critic);
    c.critic_warmup = warmup;
    rl_ppo t;
    rl_err err;
    cr_assert_eq(rl_ppo_create(&t, &f.model, ppo_value(&f), &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s",
                 err.msg);
    if (dir) cr_assert_eq(rl_ppo_resume(&t, dir, &err), 0, "%s", err.msg);
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_ppo_step(&t, &st, &err), 0, "%s", err.msg);
    }
    if (save) cr_assert_eq(rl_ppo_save(&t, save, NULL, NULL, &err), 0, "%s", err.msg);
    const float *critic_w = f.separate ? f.value.master : t.critic.master;
    *n = f.model.n_elems, *nv = f.separate ? f.value.n_elems : t.critic.n_elems;
    *w = malloc(*n * sizeof(float)), *v = malloc(*nv * sizeof(float));
    memcpy(*w, f.model.master, *n * sizeof(float));
    memcpy(*v, critic_w, *nv * sizeof(float));
    *rs = t.reward_stats;
    rl_ppo_free(&t);
    ppo_teardown(&f);
}

/* The critic learns a reward only the prompt decides: with the policy (or, shared, the trunk)
 * frozen by a critic warmup over the whole run, the explained variance of the returns, averaged
 * over the first and the last 5 of 40 steps at value learning rate vf_lr. */
static inline void ppo_prompt_decided(rl_critic_kind critic, float vf_lr, double *ev_first, double *ev_last)
{
    char script[] = "/tmp/rlc-prompt-reward-XXXXXX", spec[128];
    int fd = mkstemp(script);
    cr_assert(fd >= 0);
    const char *text = "while read line; do case \"$line\" in *'\"p1\"'* | *'\"p3\"'*) echo '{\"reward\": 1}';; "
                       "*) echo '{\"reward\": 0}';; esac; done\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(spec, sizeof spec, "cmd:sh %s", script);
    fixture f;
    ppo_setup(&f, critic, NULL, spec);
    const char *names[4] = {"p0", "p1", "p2", "p3"};
    for (int i = 0; i < 4; i++) f.prompts[i].text = names[i];
    rl_ppo_config c = ppo_test_config(critic);
    c.critic_warmup = 1000;
    c.reward_norm = 0;
    c.reward_clip = 0;
    c.missing_eos_penalty = 0;
    c.kl_coef = 0;
    c.target_kl = 0;
    c.ppo_epochs = 1;
    c.num_mini_batches = 1;
    c.samples_per_prompt = 8;
    c.max_tokens = 64;
    c.value_optim.schedule.peak = vf_lr;
    rl_ppo t;
    rl_err err;
    cr_assert_eq(rl_ppo_create(&t, &f.model, ppo_value(&f), NULL, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s",
                 err.msg);
    *ev_first = *ev_last = 0;
    int steps = 40;
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_ppo_step(&t, &st, &err), 0, "%s", err.msg);
        cr_assert(st.reward_mean == 0.5, "step %d: reward %g, the program scores half the prompts", s, st.reward_mean);
        if (s < 5) *ev_first += st.explained_var / 5;
        if (s >= steps - 5) *ev_last += st.explained_var / 5;
    }
    rl_ppo_free(&t);
    ppo_teardown(&f);
    unlink(script);
}

#endif
