/* test_shared_prefix.c — rl_model_forward_shared (model.h) on the CUDA backend: one batch in
 * both layouts of tests/model/shared_layout.h (a 70-token prompt and continuations of 9, 1 and
 * 75 tokens, so slabs span several attention tiles) through a random model with the tiny
 * fixture's shapes (head_dim 16: the CUDA-core attention) and with Qwen3-0.6B's head_dim 128 /
 * GQA 2 (the tensor-core attention). The shared layout's log-probs and gradients against the
 * whole sequences' on the same GPU, bf16: log-probs within 3e-2, every gradient within 3e-2 of
 * its tensor's scale (the two layouts differ only in how many rows each product has and in the
 * order of the prefix's dk/dv sums); in fp32 within 1e-4. */
#include "../model/model_fixture.h"
#include "../model/shared_layout.h"
#include "gpu_util.h"

#define CONFIG "tests/fixtures/models/qwen3-tiny-tied/config.json"

static const int CONT_LEN[N_CONT] = {9, 1, 75};

typedef struct run {
    float *logp, *grads;
} run;

static run run_layout(gu *g, rl_model *m, const shared_layout *L, int shared)
{
    rl_err err = {{0}};
    rl_acts *a;
    cr_assert_eq(rl_acts_create(&a, m, 512, RL_ACTS_TRAIN, &err), 0, "%s", err.msg);
    int n = shared ? L->n_shared : L->n_whole;
    float *d_logp = gu_nan_f32(g, (size_t)n);
    int rc = shared ? rl_model_forward_shared(m, a, L->shared, L->cu_shared, L->prefix_of, N_CONT + 2, 0.9f, d_logp,
                                              NULL, &err)
                    : rl_model_forward(m, a, L->whole, L->cu_whole, N_CONT + 1, 0.9f, d_logp, NULL, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(rl_memzero(&g->gpu, m->grads, m->n_elems * sizeof(float)), 0, "%s", g->gpu.err.msg);
    cr_assert_eq(rl_model_backward(m, a, gu_up_f32(g, shared ? L->w_shared : L->w_whole, (size_t)n), &err), 0, "%s",
                 err.msg);
    run r = {gu_get_f32(g, d_logp, (size_t)n), gu_get_f32(g, m->grads, m->n_elems)};
    rl_acts_free(a);
    return r;
}

static void check(int fp32, int wide_heads)
{
    gu g;
    if (fp32) gu_begin_fp32(&g);
    else gu_begin(&g);
    rl_err err = {{0}};
    rl_model_config cfg;
    cr_assert_eq(rl_config_load(&cfg, CONFIG, &err), 0, "%s", err.msg);
    if (wide_heads) gu_wide_heads(&cfg);
    rl_model m;
    cr_assert_eq(rl_model_init_random(&m, &g.gpu, &cfg, 3, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_enable_grads(&m, &err), 0, "%s", err.msg);
    shared_layout L;
    sl_make(&L, 70, 5, CONT_LEN, cfg.vocab_size);
    run whole = run_layout(&g, &m, &L, 0), shared = run_layout(&g, &m, &L, 1);
    double worst_lp = 0, tol = fp32 ? 1e-4 : 3e-2;
    for (int t = 1; t < L.n_whole; t++)
        if (L.row_of[t] >= 0) worst_lp = fmax(worst_lp, fabs(shared.logp[L.row_of[t]] - whole.logp[t]));
    double worst = 0;
    const char *worst_name = "";
    for (int p = 0; p < m.n_params; p++) {
        const rl_param *par = &m.params[p];
        double e = mf_scaled_err(shared.grads + par->offset, whole.grads + par->offset, par->count);
        if (e > worst) worst = e, worst_name = par->name;
    }
    fprintf(stderr, "[err] shared prefix, %s, head_dim %d: logp max |diff| %.3g, worst gradient %s %.3g (tol %.0e)\n",
            fp32 ? "fp32" : "bf16", cfg.head_dim, worst_lp, worst_name, worst, tol);
    cr_expect(worst_lp <= tol, "log-probs differ by %.3e", worst_lp);
    cr_expect(worst <= tol, "gradient of %s differs by %.3e of its scale", worst_name, worst);
    sl_free(&L);
    rl_model_free(&m);
    gu_end(&g);
}

Test(gpu_shared_prefix, bf16_head_dim_16) { check(0, 0); }
Test(gpu_shared_prefix, bf16_head_dim_128) { check(0, 1); }
Test(gpu_shared_prefix, fp32_head_dim_16) { check(1, 0); }
