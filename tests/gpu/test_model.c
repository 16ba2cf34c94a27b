/* test_model.c — the whole model on the CUDA backend (bf16 activations, fp32 masters and
 * gradients) against transformers' fp32 references for the tiny checkpoints
 * (tests/fixtures/model, tools/make_model_fixtures.py): token log-probs, entropies and the
 * gradient of every parameter of a weighted log-prob loss.
 * Tolerances (max |diff| / max |ref| per tensor, bf16 storage through every layer): log-probs
 * and entropies 5e-2, gradients 1e-1; the measured errors are printed. The same in the fp32 mode
 * (backend/ctx.h, what --precision auto picks for models this small) with fp32's tolerances:
 * log-probs and entropies 1e-4, gradients 1e-3. */
#include "../model/model_fixture.h"
#include "gpu_util.h"

static const char *MODELS[] = {"qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

static void check_model(const char *name, int fp32)
{
    gu g;
    if (fp32) gu_begin_fp32(&g);
    else gu_begin(&g);
    double tol = fp32 ? 1e-4 : 5e-2, tol_grad = fp32 ? 1e-3 : 1e-1;
    const char *mode = fp32 ? "fp32" : "bf16";
    model_fixture f;
    mf_load(&f, name);
    rl_err err = {{0}};
    rl_model m;
    rl_acts *acts;
    cr_assert_eq(rl_model_load(&m, &g.gpu, f.model_dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_create(&acts, &m, f.n_tokens, RL_ACTS_TRAIN, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_enable_grads(&m, &err), 0, "%s", err.msg);
    int T = f.n_tokens;
    float *d_logp = gu_nan_f32(&g, T), *d_ent = gu_nan_f32(&g, T);
    cr_assert_eq(rl_model_forward(&m, acts, f.tokens, f.cu_seqlens, f.n_seqs, 1.0f, d_logp, d_ent, &err), 0, "%s",
                 err.msg);
    size_t n;
    float *ref_logp = mf_tensor(&f, "logp", &n), *ref_ent = mf_tensor(&f, "entropy", &n);
    double e_logp = mf_scaled_err(gu_get_f32(&g, d_logp, T), ref_logp, T);
    double e_ent = mf_scaled_err(gu_get_f32(&g, d_ent, T), ref_ent, T);
    fprintf(stderr, "[err] model %-18s %s logp %.3g entropy %.3g (tol %.0e)\n", name, mode, e_logp, e_ent, tol);
    cr_expect(e_logp <= tol, "%s %s: logp error %.3e", name, mode, e_logp);
    cr_expect(e_ent <= tol, "%s %s: entropy error %.3e", name, mode, e_ent);

    float *ref_temp = mf_tensor(&f, "logp_temp", &n);
    cr_assert_eq(rl_model_forward(&m, acts, f.tokens, f.cu_seqlens, f.n_seqs, f.inv_temperature, d_logp, NULL, &err),
                 0, "%s", err.msg);
    double e_temp = mf_scaled_err(gu_get_f32(&g, d_logp, T), ref_temp, T);
    fprintf(stderr, "[err] model %-18s %s logp at temperature %.3g (tol %.0e)\n", name, mode, e_temp, tol);
    cr_expect(e_temp <= tol, "%s %s: logp at inv_temperature %g: error %.3e", name, mode, f.inv_temperature, e_temp);
    cr_assert_eq(rl_model_backward(&m, acts, gu_up_f32(&g, f.weights, T), &err), 0, "%s", err.msg);

    double worst = 0;
    const char *worst_name = "";
    for (int p = 0; p < m.n_params; p++) {
        const rl_param *par = &m.params[p];
        char gname[128];
        snprintf(gname, sizeof gname, "grad.%s", par->name);
        float *ref = mf_tensor(&f, gname, &n);
        cr_assert_eq(n, par->count);
        double e = mf_scaled_err(gu_get_f32(&g, m.grads + par->offset, n), ref, n);
        if (e > worst) {
            worst = e;
            worst_name = par->name;
        }
        cr_expect(e <= tol_grad, "%s %s: gradient of %s: error %.3e", name, mode, par->name, e);
        free(ref);
    }
    fprintf(stderr, "[err] model %-18s %s worst gradient %s: %.3g (tol %.0e)\n", name, mode, worst_name, worst,
            tol_grad);
    free(ref_logp);
    free(ref_ent);
    free(ref_temp);
    rl_acts_free(acts);
    rl_model_free(&m);
    mf_free(&f);
    gu_end(&g);
}

Test(gpu_model, qwen3_tied) { check_model(MODELS[0], 0); }
Test(gpu_model, qwen3_untied) { check_model(MODELS[1], 0); }
Test(gpu_model, qwen2) { check_model(MODELS[2], 0); }
Test(gpu_model, llama3) { check_model(MODELS[3], 0); }
Test(gpu_model, fp32_qwen3_tied) { check_model(MODELS[0], 1); }
Test(gpu_model, fp32_qwen3_untied) { check_model(MODELS[1], 1); }
Test(gpu_model, fp32_qwen2) { check_model(MODELS[2], 1); }
Test(gpu_model, fp32_llama3) { check_model(MODELS[3], 1); }
