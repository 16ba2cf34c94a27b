/* compare_qwen3.c — whole-model parity of rlc against transformers on a real-size checkpoint
 * (a randomly initialised Qwen3-0.6B written by tools/make_qwen3_0p6b.py).
 *
 * usage: compare_qwen3 DIR [--no-cpu]
 * DIR holds model/ (the checkpoint), ref.json (tokens, cu_seqlens, weights) and ref.safetensors
 * (logp_fp32, logp_bf16, grad.<name>). The model runs on CUDA (bf16 activations, fp32 masters
 * and gradients): forward to log-probs, backward of sum_t weights[t] * logp[t]; and on the CPU
 * (fp32) forward only, unless --no-cpu. Prints, for the per-token log-probs (sequence starts,
 * which are 0 by definition, left out):
 *   "parity logp <which> max=<max |diff|> mean=<mean |diff|>"   against transformers fp32
 * and for the gradients, per tensor rel = ||g_rlc - g_ref|| / ||g_ref||:
 *   "parity grad worst<k> <name> rel=<rel>"  (k = 1..5) and "parity grad median=<rel> ..."
 * Nothing here decides pass or fail: the numbers go to docs/benchmarks.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ctx.h"
#include "core/timer.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/model.h"

typedef struct rel_err {
    const char *name;
    double rel;
} rel_err;

static int cmp_rel(const void *a, const void *b)
{
    double x = ((const rel_err *)a)->rel, y = ((const rel_err *)b)->rel;
    return (x < y) - (x > y); /* largest first */
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "compare_qwen3: %s: %s\n", what, msg);
    return 1;
}

static int32_t *json_ints(const cJSON *arr, int *n)
{
    *n = cJSON_GetArraySize(arr);
    int32_t *out = malloc(((size_t)*n + 1) * sizeof *out);
    if (!out) return NULL;
    for (int i = 0; i < *n; i++) out[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return out;
}

static float *ref_tensor(const rl_safetensors *st, const char *name, size_t want)
{
    const rl_st_tensor *t = rl_safetensors_find(st, name);
    if (!t || (size_t)rl_st_tensor_numel(t) != want) return NULL;
    float *out = malloc(want * sizeof *out);
    if (out) rl_safetensors_to_f32(t, out);
    return out;
}

/* max and mean |a - b| over the tokens that are not a sequence start. */
static void report_logp(const char *which, const float *a, const float *ref, const int32_t *cu, int n_seqs)
{
    double max = 0, sum = 0;
    long n = 0;
    for (int s = 0; s < n_seqs; s++)
        for (int t = cu[s] + 1; t < cu[s + 1]; t++) {
            double d = fabs((double)a[t] - ref[t]);
            if (!(d <= max)) max = d; /* NaN propagates into max */
            sum += d;
            n++;
        }
    printf("parity logp %-28s max=%.4g mean=%.4g tokens=%ld\n", which, max, sum / (double)n, n);
}

/* Forward (and, with grads, backward of sum weights * logp) on one backend; logp and grads
 * (may be NULL) are host outputs. */
static int run_model(rl_backend_kind kind, const char *model_dir, const int32_t *tokens, const int32_t *cu,
                     int n_seqs, const float *weights, float *logp, float **grads, rl_model *m_out, rl_err *err)
{
    rl_ctx *ctx = malloc(sizeof *ctx);
    rl_acts *acts = NULL;
    int n_tokens = cu[n_seqs];
    if (!ctx || rl_ctx_create(ctx, kind, 0, err)) return -1;
    rl_model *m = m_out;
    if (rl_model_load(m, ctx, model_dir, err)) return -1;
    if (rl_acts_create(&acts, m, n_tokens, grads ? RL_ACTS_TRAIN : RL_ACTS_INFER, err)) return -1;
    if (grads && rl_model_enable_grads(m, err)) return -1;
    float *d_logp = rl_alloc(ctx, (size_t)n_tokens * sizeof(float));
    float *d_w = rl_alloc(ctx, (size_t)n_tokens * sizeof(float));
    if (!d_logp || !d_w) return rl_ctx_error(ctx, err);
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, d_w, weights, (size_t)n_tokens * sizeof(float), RL_H2D));
    double t0 = rl_time_now();
    if (rl_model_forward(m, acts, tokens, cu, n_seqs, 1.0f, d_logp, NULL, err)) return -1;
    if (grads && rl_model_backward(m, acts, d_w, err)) return -1;
    RL_TRY_OP(ctx, err, rl_sync(ctx));
    fprintf(stderr, "compare_qwen3: %s %s: %.2f s\n", rl_backend_name(ctx), grads ? "forward+backward" : "forward",
            rl_time_now() - t0);
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, logp, d_logp, (size_t)n_tokens * sizeof(float), RL_D2H));
    if (grads) {
        *grads = malloc(m->n_elems * sizeof(float));
        if (!*grads) return rl_err_oom(err, "gradients", m->n_elems * sizeof(float));
        if (rl_memcpy(ctx, *grads, m->grads, m->n_elems * sizeof(float), RL_D2H)) {
            rl_ctx_error(ctx, err);
            return rl_err_prefix(err, "downloading gradients: ");
        }
    }
    rl_free(ctx, d_logp);
    rl_free(ctx, d_w);
    rl_acts_free(acts);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: compare_qwen3 DIR [--no-cpu]\n");
        return 2;
    }
    int with_cpu = !(argc > 2 && strcmp(argv[2], "--no-cpu") == 0);
    char path[1024], model_dir[1024];
    rl_err err = {{0}};
    snprintf(path, sizeof path, "%s/ref.json", argv[1]);
    snprintf(model_dir, sizeof model_dir, "%s/model", argv[1]);
    cJSON *root = rl_json_parse_file(path, &err);
    if (!root) return fail("references", err.msg);
    int n_tokens, n_cu, n_w;
    int32_t *tokens = json_ints(cJSON_GetObjectItem(root, "tokens"), &n_tokens);
    int32_t *cu = json_ints(cJSON_GetObjectItem(root, "cu_seqlens"), &n_cu);
    const cJSON *wj = cJSON_GetObjectItem(root, "weights");
    n_w = cJSON_GetArraySize(wj);
    if (!tokens || !cu || n_cu < 2 || n_w != n_tokens || cu[n_cu - 1] != n_tokens)
        return fail(path, "tokens, cu_seqlens and weights do not match");
    int n_seqs = n_cu - 1;
    float *weights = malloc((size_t)n_tokens * sizeof *weights);
    for (int i = 0; i < n_tokens; i++) weights[i] = (float)cJSON_GetArrayItem(wj, i)->valuedouble;
    cJSON_Delete(root);

    rl_safetensors *ref;
    snprintf(path, sizeof path, "%s/ref.safetensors", argv[1]);
    if (rl_safetensors_open(&ref, path, &err)) return fail("references", err.msg);
    float *ref32 = ref_tensor(ref, "logp_fp32", (size_t)n_tokens), *ref16 = ref_tensor(ref, "logp_bf16", (size_t)n_tokens);
    if (!ref32 || !ref16) return fail(path, "logp_fp32 / logp_bf16 missing or of the wrong size");

    float *logp_gpu = malloc((size_t)n_tokens * sizeof(float)), *logp_cpu = malloc((size_t)n_tokens * sizeof(float));
    float *grads = NULL;
    rl_model mg, mc;
    if (run_model(RL_BACKEND_CUDA, model_dir, tokens, cu, n_seqs, weights, logp_gpu, &grads, &mg, &err))
        return fail("cuda", err.msg);
    if (with_cpu && run_model(RL_BACKEND_CPU, model_dir, tokens, cu, n_seqs, weights, logp_cpu, NULL, &mc, &err))
        return fail("cpu", err.msg);

    report_logp("rlc-cuda-bf16_vs_hf-fp32", logp_gpu, ref32, cu, n_seqs);
    report_logp("hf-bf16_vs_hf-fp32", ref16, ref32, cu, n_seqs);
    if (with_cpu) {
        report_logp("rlc-cpu-fp32_vs_hf-fp32", logp_cpu, ref32, cu, n_seqs);
        report_logp("rlc-cuda-bf16_vs_rlc-cpu-fp32", logp_gpu, logp_cpu, cu, n_seqs);
    }

    rel_err *rel = malloc((size_t)mg.n_params * sizeof *rel);
    for (int p = 0; p < mg.n_params; p++) {
        const rl_param *par = &mg.params[p];
        char gname[160];
        snprintf(gname, sizeof gname, "grad.%s", par->name);
        float *g_ref = ref_tensor(ref, gname, par->count);
        if (!g_ref) return fail(gname, "missing or of the wrong size");
        double num = 0, den = 0;
        for (size_t i = 0; i < par->count; i++) {
            double d = (double)grads[par->offset + i] - g_ref[i];
            num += d * d;
            den += (double)g_ref[i] * g_ref[i];
        }
        rel[p].name = par->name;
        rel[p].rel = den > 0 ? sqrt(num / den) : sqrt(num);
        free(g_ref);
    }
    qsort(rel, (size_t)mg.n_params, sizeof *rel, cmp_rel);
    for (int k = 0; k < 5 && k < mg.n_params; k++)
        printf("parity grad worst%d %-44s rel=%.4g\n", k + 1, rel[k].name, rel[k].rel);
    double mean = 0;
    for (int p = 0; p < mg.n_params; p++) mean += rel[p].rel;
    printf("parity grad median=%.4g mean=%.4g best=%.4g tensors=%d\n", rel[mg.n_params / 2].rel,
           mean / mg.n_params, rel[mg.n_params - 1].rel, mg.n_params);

    free(rel);
    free(grads);
    free(logp_gpu);
    free(logp_cpu);
    free(ref32);
    free(ref16);
    free(weights);
    free(tokens);
    free(cu);
    rl_safetensors_close(ref);
    return 0;
}
