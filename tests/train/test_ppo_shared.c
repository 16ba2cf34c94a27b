/* test_ppo_shared.c — PPO with a shared-trunk critic (ppo.h "The shared critic", --critic
 * shared) on the tiny Qwen3 fixture architecture with the demo tokenizer: it learns (reward up,
 * explained variance up), a resumed run is bit-identical to an uninterrupted one, the saved
 * DIR/value is a value model (Qwen3ForTokenClassification) whose values are the shared head's,
 * the critic warmup trains the head alone, and configurations it cannot run are refused. */
#include "ppo_fixture.h"

#define SHARED RL_CRITIC_SHARED

/* The policy learns with the shared critic beside it, and the values follow the returns as they
 * move (0.1 -> 0.8 here: the mean values of the last 10 steps within 0.15 of the mean return;
 * a head that never learned would stay at 0). */
Test(ppo_shared, reward_rises_and_values_follow_the_returns)
{
    fixture f;
    ppo_setup(&f, SHARED, NULL, "regex:^[0-9]");
    rl_ppo_config c = ppo_test_config(SHARED);
    c.reward_norm = 0;
    c.gen.max_new_tokens = 2;
    c.max_tokens = 64;
    c.samples_per_prompt = 8;
    c.optim.schedule.peak = 2e-2;
    c.value_optim.schedule.peak = 1e-2;
    rl_ppo t;
    rl_err err;
    cr_assert_eq(rl_ppo_create(&t, &f.model, NULL, &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    cr_assert(t.acts == NULL && t.value == NULL && t.critic.n_elems > 0);
    double first = 0, last = 0, value = 0, ret = 0;
    int steps = 25;
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_ppo_step(&t, &st, &err), 0, "%s", err.msg);
        cr_assert(st.has_ppo && isfinite(st.value_loss) && isfinite(st.loss));
        if (s < 5) first += st.reward_mean / 5;
        if (s >= steps - 5) last += st.reward_mean / 5;
        if (s >= steps - 10) value += st.value_mean / 10, ret += st.return_mean / 10;
    }
    cr_log_info("ppo shared critic: reward %.3f -> %.3f, last 10 steps: mean value %.3f, mean return %.3f", first, last,
                value, ret);
    cr_assert(last > first + 0.3, "reward %.3f -> %.3f", first, last);
    cr_assert(ret > 0.5 && fabs(value - ret) < 0.15, "mean value %.3f, mean return %.3f", value, ret);
    rl_ppo_free(&t);
    ppo_teardown(&f);
}

/* As test_ppo.c's value_model_learns_which_prompts_score, for the head alone (the critic warmup
 * freezes the trunk): a reward only the prompt decides ("p1" and "p3" score 1) must become most
 * of the explained variance of the returns within 40 steps (measured 0.10 -> 0.73 at vf_lr 1e-3). */
Test(ppo_shared, head_learns_which_prompts_score)
{
    double ev_first, ev_last;
    ppo_prompt_decided(SHARED, 1e-3f, &ev_first, &ev_last);
    cr_log_info("ppo shared critic, trunk frozen, prompt-decided reward: explained variance %.3f -> %.3f", ev_first,
                ev_last);
    cr_assert(ev_last > 0.5 && ev_last > ev_first + 0.4, "explained variance %.3f -> %.3f", ev_first, ev_last);
}

Test(ppo_shared, resume_is_bit_exact_and_the_value_model_is_saved)
{
    char dir[] = "/tmp/rlc-ppo-shared-XXXXXX";
    cr_assert(mkdtemp(dir));
    char ck[256], vdir[300];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(vdir, sizeof vdir, "%s/value", ck);
    float *full, *half, *res, *hfull, *hhalf, *hres;
    size_t n, nh;
    rl_running_stats rs;
    ppo_run(SHARED, NULL, 3, NULL, 0, &full, &n, &hfull, &nh, &rs);
    ppo_run(SHARED, NULL, 1, ck, 0, &half, &n, &hhalf, &nh, &rs);
    ppo_run(SHARED, ck, 2, NULL, 0, &res, &n, &hres, &nh, &rs);
    cr_assert(n_diff(full, half, n) > 0 && n_diff(hfull, hhalf, nh) > 0, "training did not change the weights");
    cr_assert_eq(n_diff(full, res, n), 0, "%zu of %zu policy weights differ after resume", n_diff(full, res, n), n);
    cr_assert_eq(n_diff(hfull, hres, nh), 0, "%zu of %zu head weights differ after resume", n_diff(hfull, hres, nh), nh);

    /* DIR/value: a value model whose trunk is the policy at that step and whose head is the
     * shared one: its values are the shared critic's, bit for bit on the CPU */
    rl_err err;
    fixture f;
    ppo_setup(&f, SHARED, ck, "regex:^[a-m]");
    rl_model v;
    cr_assert_eq(rl_model_load_value(&v, &f.ctx, vdir, &err), 0, "%s", err.msg);
    cr_assert_str_eq(v.config.architecture, "Qwen3ForTokenClassification");
    int D = v.config.hidden_size;
    cr_assert(!memcmp(v.master + v.score, hhalf, (size_t)D * sizeof(float)), "score.weight is not the head");
    cr_assert(v.master[v.score_bias] == hhalf[(D + 63) / 64 * 64], "score.bias is not the head's");
    int32_t tokens[9] = {40, 41, 42, 43, 44, 47, 48, 49, 50}, cu[3] = {0, 5, 9};
    rl_acts *a = NULL, *av = NULL;
    float vals[9], want[9], lp[9];
    float bias = hhalf[(D + 63) / 64 * 64];
    rl_value_head vh = {hhalf, &bias, NULL, NULL};
    cr_assert_eq(rl_acts_create(&a, &f.model, 9, RL_ACTS_INFER, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_create(&av, &v, 9, RL_ACTS_INFER, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_forward_value(&f.model, a, tokens, cu, 2, 1.0f, lp, NULL, &vh, want, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_forward(&v, av, tokens, cu, 2, 1.0f, vals, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < 9; i++) cr_assert(vals[i] == want[i], "value %d: saved model %g, shared head %g", i, vals[i], want[i]);
    cr_assert(want[1] != 0, "the head gives 0: the comparison sees nothing");
    rl_acts_free(a), rl_acts_free(av);
    rl_model_free(&v);

    /* resuming it as the other kind of critic is refused by name */
    rl_model value;
    cr_assert_eq(rl_model_load_value(&value, &f.ctx, vdir, &err), 0, "%s", err.msg);
    rl_ppo t;
    rl_ppo_config c = ppo_test_config(SHARED);
    c.critic = RL_CRITIC_SEPARATE;
    cr_assert_eq(rl_ppo_create(&t, &f.model, &value, &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_ppo_resume(&t, ck, &err), -1);
    cr_assert(strstr(err.msg, "'shared'") && strstr(err.msg, "--critic"), "%s", err.msg);
    rl_ppo_free(&t);
    rl_model_free(&value);
    ppo_teardown(&f);
    free(full), free(half), free(res), free(hfull), free(hhalf), free(hres);
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
}

Test(ppo_shared, critic_warmup_trains_the_head_only)
{
    float *w, *h;
    size_t n, nh;
    rl_running_stats rs;
    ppo_run(SHARED, NULL, 2, NULL, 2, &w, &n, &h, &nh, &rs);
    fixture f;
    ppo_setup(&f, SHARED, NULL, "regex:^[a-m]");
    cr_assert_eq(n_diff(w, f.model.master, n), 0, "the policy moved during the critic warmup");
    size_t moved = 0;
    for (size_t i = 0; i < nh; i++) moved += h[i] != 0;
    cr_assert(moved > 0, "the head did not move");
    ppo_teardown(&f);
    free(w), free(h);
}

Test(ppo_shared, bad_configs)
{
    fixture f;
    ppo_setup(&f, SHARED, NULL, "regex:^[a-m]");
    rl_ppo t;
    rl_err err;
    rl_ppo_config c = ppo_test_config(SHARED);
    cr_assert_eq(rl_ppo_create(&t, &f.model, &f.ref, &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "shared critic") && strstr(err.msg, "no value model"), "%s", err.msg);
    c.critic = RL_CRITIC_SEPARATE;
    cr_assert_eq(rl_ppo_create(&t, &f.model, NULL, &f.ref, f.tok, f.reward, f.prompts, 4, &c, &err), -1);
    cr_assert(strstr(err.msg, "needs a value model"), "%s", err.msg);
    ppo_teardown(&f);
}
