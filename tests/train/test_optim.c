/* test_optim.c — the AdamW driver (groups, gradient scaling, clipping) and the learning-rate
 * schedules against torch.optim.AdamW + clip_grad_norm_ + transformers' schedules
 * (tests/fixtures/train/adamw.json, made by tools/make_train_fixtures.py). */
#include <string.h>

#include "backend/ctx.h"
#include "io/json.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "test_util.h"

static cJSON *fixture(void)
{
    rl_err err;
    cJSON *j = rl_json_parse_file("tests/fixtures/train/adamw.json", &err);
    cr_assert(j, "%s", err.msg);
    return j;
}

static void read_floats(const cJSON *arr, float *out, int n)
{
    cr_assert_eq(cJSON_GetArraySize(arr), n);
    for (int i = 0; i < n; i++) out[i] = (float)cJSON_GetArrayItem(arr, i)->valuedouble;
}

static double num(const cJSON *j, const char *key) { return cJSON_GetObjectItem(j, key)->valuedouble; }

Test(optim, matches_torch_adamw_with_groups_and_clipping)
{
    cJSON *j = fixture();
    rl_ctx ctx;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    /* the norm tensor comes first in the table but last in memory: groups are sorted */
    rl_param params[2] = {{.name = "norm", .n_dims = 1, .shape = {3}, .offset = 6, .count = 3, .weight_decay = 0},
                          {.name = "w", .n_dims = 2, .shape = {2, 3}, .offset = 0, .count = 6, .weight_decay = 1}};
    rl_optim_config cfg = rl_optim_defaults();
    cfg.schedule = (rl_lr_schedule){RL_LR_COSINE, num(j, "lr"), (int)num(j, "warmup"), (int)num(j, "total"), 0};
    const cJSON *betas = cJSON_GetObjectItem(j, "betas");
    cfg.beta1 = cJSON_GetArrayItem(betas, 0)->valuedouble;
    cfg.beta2 = cJSON_GetArrayItem(betas, 1)->valuedouble;
    cfg.eps = num(j, "eps");
    cfg.weight_decay = num(j, "weight_decay");
    cfg.max_grad_norm = num(j, "max_norm");
    rl_optim o;
    cr_assert_eq(rl_optim_create(&o, &ctx, params, 2, 9, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(o.n_runs, 2);
    float w[9], g[9], want[9];
    read_floats(cJSON_GetObjectItem(j, "init"), w, 9);
    int steps = (int)num(j, "total");
    for (int s = 0; s < steps; s++) {
        read_floats(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "grads"), s), g, 9);
        rl_optim_stats st;
        cr_assert_eq(rl_optim_step(&o, w, NULL, g, num(j, "grad_scale"), &st, &err), 0, "%s", err.msg);
        for (int i = 0; i < 9; i++) cr_assert_eq(g[i], 0.0f, "gradients not zeroed");
        double want_norm = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "norms"), s)->valuedouble;
        double want_lr = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "lrs"), s)->valuedouble;
        cr_assert(fabs(st.grad_norm - want_norm) < 1e-5 * want_norm, "step %d norm %g vs %g", s, st.grad_norm, want_norm);
        cr_assert(fabs(st.lr - want_lr) < 1e-12, "step %d lr %g vs %g", s, st.lr, want_lr);
        cr_assert_eq(st.clipped, want_norm > cfg.max_grad_norm);
        read_floats(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "after"), s), want, 9);
        double max_abs;
        double rel = tu_max_rel_err(w, want, 9, 1e-3, &max_abs);
        cr_assert(rel < 2e-5, "step %d: max rel err %g (abs %g)", s, rel, max_abs);
    }
    cr_assert_eq(o.step, steps);
    rl_optim_free(&o);
    rl_ctx_free(&ctx);
    cJSON_Delete(j);
}

Test(optim, non_finite_gradients_fail_without_update)
{
    rl_ctx ctx;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    rl_param p = {.name = "w", .offset = 0, .count = 4, .weight_decay = 1};
    rl_optim_config cfg = rl_optim_defaults();
    rl_optim o;
    cr_assert_eq(rl_optim_create(&o, &ctx, &p, 1, 4, &cfg, &err), 0, "%s", err.msg);
    float w[4] = {1, 2, 3, 4}, g[4] = {0, NAN, 0, 0};
    cr_assert_eq(rl_optim_step(&o, w, NULL, g, 1.0, NULL, &err), -1);
    cr_assert(strstr(err.msg, "step 1") && strstr(err.msg, "nan"), "%s", err.msg);
    cr_assert(w[0] == 1 && w[3] == 4 && o.step == 0);
    rl_optim_free(&o);
    rl_param bad = {.name = "big", .offset = 2, .count = 4};
    cr_assert_eq(rl_optim_create(&o, &ctx, &bad, 1, 4, &cfg, &err), -1);
    cr_assert(strstr(err.msg, "'big'") && strstr(err.msg, "element 6"), "%s", err.msg);
    rl_ctx_free(&ctx);
}

Test(schedule, matches_transformers)
{
    cJSON *j = fixture();
    const cJSON *s = cJSON_GetObjectItem(j, "schedules");
    const char *names[3] = {"constant", "linear", "cosine"};
    for (int k = 0; k < 3; k++) {
        rl_lr_schedule sch = {0};
        rl_err err;
        cr_assert_eq(rl_lr_kind_parse(names[k], &sch.kind, &err), 0);
        sch.peak = num(s, "peak");
        sch.warmup_steps = (int)num(s, "warmup");
        sch.total_steps = (int)num(s, "total");
        const cJSON *vals = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "lr"), names[k]);
        /* past the last step transformers' cosine rises again; ours stays at the floor */
        for (int step = 0; step <= sch.total_steps; step++) {
            double want = cJSON_GetArrayItem(vals, step)->valuedouble, got = rl_lr_at(&sch, step);
            cr_assert(fabs(got - want) < 1e-12, "%s step %d: %g vs %g", names[k], step, got, want);
        }
    }
    rl_lr_kind kind;
    rl_err err;
    cr_assert_eq(rl_lr_kind_parse("cosin", &kind, &err), -1);
    cr_assert(strstr(err.msg, "'cosin'"), "%s", err.msg);
    /* cosine floor: halfway through, min_ratio 0.1 gives 0.1 + 0.9 * 0.5 */
    rl_lr_schedule floor = {RL_LR_COSINE, 1.0, 0, 10, 0.1};
    cr_assert(fabs(rl_lr_at(&floor, 5) - 0.55) < 1e-12 && fabs(rl_lr_at(&floor, 10) - 0.1) < 1e-12);
    cr_assert(fabs(rl_lr_at(&floor, 12) - 0.1) < 1e-12);
    cJSON_Delete(j);
}
