/* test_value_shared.c — a value head on a causal LM (model.h rl_value_head: PPO's shared-trunk
 * critic) on the tiny untied Qwen3 fixture, fp32 CPU: the forward's log-probs are the plain
 * forward's, its values are the head applied by hand to the final hidden states (shifted as a
 * value model's), the values-only forward (no lm_head) gives the same values, and the backward of
 * sum_t w_t logp_t + u_t values_t matches central differences for the head and for tensors
 * of the trunk, which gets both gradients in one pass. */
#include "backend/ops.h"
#include "model/acts_internal.h"
#include "model_fixture.h"

typedef struct setup {
    rl_ctx ctx;
    rl_model m;
    rl_acts *acts;
    model_fixture f;
    float head[257]; /* weight [hidden] then bias; the fixture's hidden size is below 256 */
    float dhead[257];
    float *u;        /* value-loss weights [n_tokens] */
    rl_value_head vh;
} setup;

static void open_setup(setup *s)
{
    rl_err err = {{0}};
    mf_load(&s->f, "qwen3-tiny-untied");
    cr_assert_eq(rl_ctx_create(&s->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&s->m, &s->ctx, s->f.model_dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_create(&s->acts, &s->m, s->f.n_tokens, RL_ACTS_TRAIN, &err), 0, "%s", err.msg);
    int D = s->m.config.hidden_size;
    cr_assert(D < 257);
    tu_fill_uniform(s->head, (size_t)D, -1, 1, 7);
    s->head[D] = 0.25f;
    memset(s->dhead, 0, sizeof s->dhead);
    s->u = malloc((size_t)s->f.n_tokens * sizeof(float));
    tu_fill_uniform(s->u, (size_t)s->f.n_tokens, -1, 1, 8);
    s->vh = (rl_value_head){s->head, s->head + D, s->dhead, s->dhead + D};
}

static void close_setup(setup *s)
{
    free(s->u);
    rl_acts_free(s->acts);
    rl_model_free(&s->m);
    rl_ctx_free(&s->ctx);
    mf_free(&s->f);
}

static double loss_of(setup *s, float *logp, float *values)
{
    rl_err err = {{0}};
    cr_assert_eq(rl_model_forward_value(&s->m, s->acts, s->f.tokens, s->f.cu_seqlens, s->f.n_seqs,
                                        s->f.inv_temperature, logp, NULL, &s->vh, values, &err),
                 0, "%s", err.msg);
    double loss = 0;
    for (int t = 0; t < s->f.n_tokens; t++) loss += (double)s->f.weights[t] * logp[t] + (double)s->u[t] * values[t];
    return loss;
}

Test(value_shared, forward_gives_the_log_probs_and_the_head_on_the_hidden_states)
{
    setup s;
    open_setup(&s);
    rl_err err = {{0}};
    int T = s.f.n_tokens, D = s.m.config.hidden_size;
    float *logp = malloc((size_t)T * sizeof(float)), *plain = malloc((size_t)T * sizeof(float));
    float *values = malloc((size_t)T * sizeof(float)), *only = malloc((size_t)T * sizeof(float));
    tu_poison(logp, (size_t)T), tu_poison(values, (size_t)T), tu_poison(only, (size_t)T);
    cr_assert_eq(rl_model_forward(&s.m, s.acts, s.f.tokens, s.f.cu_seqlens, s.f.n_seqs, s.f.inv_temperature, plain,
                                  NULL, &err), 0, "%s", err.msg);
    loss_of(&s, logp, values);
    cr_assert(!memcmp(logp, plain, (size_t)T * sizeof(float)), "the head changed the log-probs");
    const float *xf = s.acts->xf;
    double worst = 0;
    for (int q = 0; q < s.f.n_seqs; q++)
        for (int t = s.f.cu_seqlens[q]; t < s.f.cu_seqlens[q + 1]; t++) {
            double want = 0;
            if (t > s.f.cu_seqlens[q]) {
                want = s.head[D];
                for (int d = 0; d < D; d++) want += (double)xf[(size_t)(t - 1) * D + d] * s.head[d];
            }
            double e = fabs(values[t] - want);
            if (e > worst) worst = e;
        }
    cr_assert(worst < 1e-5, "values vs head(hidden[t - 1]): max error %g", worst);
    cr_assert_eq(rl_model_forward_value(&s.m, s.acts, s.f.tokens, s.f.cu_seqlens, s.f.n_seqs, 1.0f, NULL, NULL, &s.vh,
                                        only, &err), 0, "%s", err.msg);
    cr_assert(!memcmp(values, only, (size_t)T * sizeof(float)), "the values-only forward differs");
    /* nothing to differentiate after a values-only forward; a head on a value model is refused */
    cr_assert_eq(rl_model_enable_grads(&s.m, &err), 0);
    cr_assert_eq(rl_model_backward_value(&s.m, s.acts, s.u, NULL, &s.vh, s.u, &err), -1);
    cr_assert(strstr(err.msg, "no forward batch"), "%s", err.msg);
    cr_assert_eq(rl_model_forward_value(&s.m, s.acts, s.f.tokens, s.f.cu_seqlens, s.f.n_seqs, 1.0f, NULL, NULL, NULL,
                                        only, &err), -1);
    free(logp), free(plain), free(values), free(only);
    close_setup(&s);
}

Test(value_shared, gradients_match_finite_differences)
{
    setup s;
    open_setup(&s);
    rl_err err = {{0}};
    int T = s.f.n_tokens, D = s.m.config.hidden_size;
    float *logp = malloc((size_t)T * sizeof(float)), *values = malloc((size_t)T * sizeof(float));
    cr_assert_eq(rl_model_enable_grads(&s.m, &err), 0);
    loss_of(&s, logp, values);
    cr_assert_eq(rl_model_backward_value(&s.m, s.acts, s.f.weights, NULL, &s.vh, s.u, &err), 0, "%s", err.msg);
    double worst = 0;
    /* the head: weight and bias */
    for (int k = 0; k < 4; k++) {
        int at = k < 3 ? k * 5 % D : D;
        float keep = s.head[at], h = 1e-2f;
        s.head[at] = keep + h;
        double up = loss_of(&s, logp, values);
        s.head[at] = keep - h;
        double down = loss_of(&s, logp, values);
        s.head[at] = keep;
        double fd = (up - down) / (2 * h), e = fabs(fd - s.dhead[at]) / (fabs(fd) > 1 ? fabs(fd) : 1);
        cr_assert(e < 5e-3, "head[%d]: backward %g, finite differences %g", at, s.dhead[at], fd);
        if (e > worst) worst = e;
    }
    /* the trunk: both losses' gradients */
    const char *names[] = {"model.norm.weight", "model.layers.2.mlp.down_proj.weight",
                           "model.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        int i = rl_model_find_param(&s.m, names[k]);
        cr_assert(i >= 0, "%s", names[k]);
        for (int probe = 0; probe < 3; probe++) {
            size_t at = s.m.params[i].offset + (size_t)probe * 37 % s.m.params[i].count;
            if (!strcmp(names[k], "model.embed_tokens.weight")) /* a row the batch reads */
                at = s.m.params[i].offset + (size_t)s.f.tokens[3 + probe] * D + probe;
            float keep = s.m.master[at], h = 1e-2f;
            s.m.master[at] = keep + h;
            double up = loss_of(&s, logp, values);
            s.m.master[at] = keep - h;
            double down = loss_of(&s, logp, values);
            s.m.master[at] = keep;
            double fd = (up - down) / (2 * h), g = s.m.grads[at];
            double e = fabs(fd - g) / (fabs(fd) > 1 ? fabs(fd) : 1);
            cr_assert(e < 5e-3, "%s[%zu]: backward %g, finite differences %g", names[k], at - s.m.params[i].offset, g,
                      fd);
            if (e > worst) worst = e;
        }
    }
    /* the value term reaches the trunk: without it the final norm's gradient differs */
    int i = rl_model_find_param(&s.m, "model.norm.weight");
    float *with = malloc((size_t)D * sizeof(float));
    memcpy(with, s.m.grads + s.m.params[i].offset, (size_t)D * sizeof(float));
    cr_assert_eq(rl_model_zero_grads(&s.m, &err), 0);
    loss_of(&s, logp, values);
    cr_assert_eq(rl_model_backward(&s.m, s.acts, s.f.weights, &err), 0, "%s", err.msg);
    cr_assert(memcmp(with, s.m.grads + s.m.params[i].offset, (size_t)D * sizeof(float)), "the values' gradient did "
              "not reach the trunk");
    cr_log_info("shared value head: gradients vs finite differences, max scaled error %.2e", worst);
    free(with), free(logp), free(values);
    close_setup(&s);
}
