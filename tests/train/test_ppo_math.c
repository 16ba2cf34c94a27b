/* test_ppo_math.c — PPO's arithmetic (ppo_math.h) against tests/fixtures/train/ppo_math.json,
 * which tools/make_ppo_math_fixtures.py computes from the definitions in plain Python (GAE as
 * the explicit discounted sum, the value-loss gradient by finite differences), plus hand cases:
 * GAE with gamma = lam = 1 is the reward-to-go minus the value, whitening keeps masked entries. */
#include "io/json.h"
#include "train/ppo_math.h"
#include "test_util.h"

typedef struct fx {
    cJSON *root;
} fx;

static float *arr(const cJSON *root, const char *key, int *n)
{
    const cJSON *a = cJSON_GetObjectItem(root, key);
    cr_assert(cJSON_IsArray(a), "fixture key %s", key);
    *n = cJSON_GetArraySize(a);
    float *out = malloc((size_t)*n * sizeof(float));
    for (int i = 0; i < *n; i++) out[i] = (float)cJSON_GetArrayItem(a, i)->valuedouble;
    return out;
}

static double num(const cJSON *root, const char *key) { return cJSON_GetObjectItem(root, key)->valuedouble; }

static cJSON *load(void)
{
    rl_err err = {{0}};
    cJSON *root = rl_json_parse_file("tests/fixtures/train/ppo_math.json", &err);
    cr_assert(root, "%s", err.msg);
    return root;
}

static void close_to(const float *got, const float *want, int n, double tol, const char *what)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        cr_assert(e <= tol, "%s[%d] = %.7g, want %.7g", what, i, got[i], want[i]);
        if (e > worst) worst = e;
    }
    cr_log_info("%s: max error %.2e", what, worst);
}

Test(ppo_math, rewards_gae_whitening)
{
    cJSON *r = load();
    int n, k;
    float *logp = arr(r, "logp", &n), *ref = arr(r, "ref_logp", &k), *values = arr(r, "values", &k);
    float *want_r = arr(r, "rewards", &k), *want_a = arr(r, "advantages", &k), *want_ret = arr(r, "returns", &k);
    float *want_a1 = arr(r, "advantages_gamma1", &k), *want_w = arr(r, "whitened", &k);
    float rewards[64], adv[64], ret[64];
    tu_poison(rewards, 64);
    rl_ppo_token_rewards(logp, ref, n, (float)num(r, "score"), (float)num(r, "kl_coef"), rewards);
    close_to(rewards, want_r, n, 1e-6, "rewards");
    tu_poison(adv, 64);
    tu_poison(ret, 64);
    rl_ppo_gae(rewards, values, n, (float)num(r, "gamma"), (float)num(r, "lam"), adv, ret);
    close_to(adv, want_a, n, 1e-5, "gae advantages");
    close_to(ret, want_ret, n, 1e-5, "returns");
    rl_ppo_gae(rewards, values, n, 1, 1, adv, ret);
    close_to(adv, want_a1, n, 1e-5, "gae (gamma = lam = 1)");
    /* by hand: gamma = lam = 1 gives the reward-to-go minus the value */
    double togo = 0;
    for (int t = n - 1; t >= 0; t--) {
        togo += rewards[t];
        cr_assert(fabs(adv[t] - (togo - values[t])) < 1e-5);
        cr_assert(fabs(ret[t] - togo) < 1e-5, "returns are the reward-to-go");
    }
    rl_ppo_gae(rewards, values, n, (float)num(r, "gamma"), (float)num(r, "lam"), adv, ret);
    rl_ppo_whiten(adv, NULL, (size_t)n, 1);
    close_to(adv, want_w, n, 1e-5, "whitened");
    /* masked entries are neither counted nor touched */
    float x[5] = {1, 100, 3, -7, 5};
    unsigned char mask[5] = {1, 0, 1, 0, 1};
    rl_ppo_whiten(x, mask, 5, 1);
    cr_assert(x[1] == 100 && x[3] == -7);
    cr_assert(fabs(x[0] + 1) < 1e-6 && fabs(x[2]) < 1e-6 && fabs(x[4] - 1) < 1e-6, "%g %g %g", x[0], x[2], x[4]);
    free(logp), free(ref), free(values), free(want_r), free(want_a), free(want_ret), free(want_a1), free(want_w);
    cJSON_Delete(r);
}

Test(ppo_math, value_loss_and_diagnostics)
{
    cJSON *r = load();
    int n, k;
    float *v = arr(r, "new_values", &n), *old = arr(r, "values", &k), *w = arr(r, "weights", &k);
    float *logp = arr(r, "logp", &k), *ref = arr(r, "ref_logp", &k), *rewards = arr(r, "rewards", &k);
    float *ret = arr(r, "returns", &k), *want_g = arr(r, "value_grad", &k);
    float dv[64];
    tu_poison(dv, 64);
    double frac = -1;
    double loss = rl_ppo_value_loss(v, old, ret, w, n, (float)num(r, "cliprange_value"), dv, &frac);
    cr_assert(fabs(loss - num(r, "value_loss")) < 1e-6, "value loss %.8g, want %.8g", loss, num(r, "value_loss"));
    close_to(dv, want_g, n, 1e-4, "value loss gradient");
    cr_assert(fabs(frac - num(r, "value_clip_frac")) < 1e-6, "clip fraction %g, want %g", frac,
              num(r, "value_clip_frac"));
    double k1, k3;
    rl_ppo_kl_estimates(logp, ref, NULL, (size_t)n, &k1, &k3);
    cr_assert(fabs(k1 - num(r, "k1")) < 1e-6 && fabs(k3 - num(r, "k3")) < 1e-6, "k1 %g k3 %g", k1, k3);
    double ev = rl_ppo_explained_variance(old, ret, NULL, (size_t)n);
    cr_assert(fabs(ev - num(r, "explained_variance")) < 1e-5, "explained variance %g, want %g", ev,
              num(r, "explained_variance"));
    cr_assert(fabs(rl_ppo_explained_variance(ret, ret, NULL, (size_t)n) - 1) < 1e-12, "perfect values explain all");
    (void)rewards;
    free(v), free(old), free(w), free(logp), free(ref), free(rewards), free(ret), free(want_g);
    cJSON_Delete(r);
}

Test(ppo_math, running_stats_and_kl_controller)
{
    cJSON *r = load();
    rl_running_stats s = {0};
    cr_assert(rl_running_std(&s) == 1.0, "nothing seen: std 1");
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(r, "batches"))
    {
        int n = cJSON_GetArraySize(b);
        float x[16];
        for (int i = 0; i < n; i++) x[i] = (float)cJSON_GetArrayItem(b, i)->valuedouble;
        rl_running_update(&s, x, n);
    }
    cr_assert(fabs(s.mean - num(r, "running_mean")) < 1e-5, "running mean %g", s.mean);
    cr_assert(fabs(rl_running_std(&s) - num(r, "running_std")) < 1e-5, "running std %g", rl_running_std(&s));
    const cJSON *kc = cJSON_GetObjectItem(r, "kl_ctl");
    rl_kl_ctl c = {num(kc, "init"), num(kc, "target"), num(kc, "horizon")};
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(kc, "updates"))
    rl_kl_ctl_update(&c, cJSON_GetArrayItem(b, 0)->valuedouble, cJSON_GetArrayItem(b, 1)->valuedouble);
    cr_assert(fabs(c.value - num(kc, "value")) < 1e-12, "kl coef %.10g, want %.10g", c.value, num(kc, "value"));
    rl_kl_ctl fixed = {0.1, 0, 0};
    rl_kl_ctl_update(&fixed, 50, 512);
    cr_assert(fixed.value == 0.1, "target 0: a fixed coefficient");
    cJSON_Delete(r);
}
