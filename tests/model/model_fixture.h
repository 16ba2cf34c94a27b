/* model_fixture.h — reads the references tools/make_model_fixtures.py wrote for a tiny model
 * (tests/fixtures/model/<name>.json + .safetensors) and loads the model itself
 * (tests/fixtures/models/<name>). Shared by tests/model and tests/engine. */
#ifndef RL_TEST_MODEL_FIXTURE_H
#define RL_TEST_MODEL_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "test_util.h"

#define MF_MAX_PROMPTS 8

typedef struct model_fixture {
    char model_dir[256];
    int32_t *tokens, *cu_seqlens;
    int n_tokens, n_seqs;
    float *weights; /* [n_tokens] loss weights */
    float inv_temperature;
    int n_prompts, max_new_tokens;
    int32_t *prompts[MF_MAX_PROMPTS], *outputs[MF_MAX_PROMPTS];
    int prompt_len[MF_MAX_PROMPTS], output_len[MF_MAX_PROMPTS];
    rl_safetensors *ref; /* logits, logp, entropy, logp_temp, grad.<name> */
} model_fixture;

/* Reads a JSON array of integers into a malloc'd int32 array. */
static inline int32_t *mf_ints(const cJSON *arr, int *n)
{
    *n = cJSON_GetArraySize(arr);
    int32_t *out = malloc(((size_t)*n + 1) * sizeof *out);
    cr_assert(out);
    for (int i = 0; i < *n; i++) out[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return out;
}

static inline void mf_load(model_fixture *f, const char *name)
{
    memset(f, 0, sizeof *f);
    rl_err err = {{0}};
    char path[512];
    snprintf(f->model_dir, sizeof f->model_dir, "tests/fixtures/models/%s", name);
    snprintf(path, sizeof path, "tests/fixtures/model/%s.json", name);
    cJSON *root = rl_json_parse_file(path, &err);
    cr_assert(root, "%s", err.msg);
    int n_cu = 0, n_w = 0;
    f->tokens = mf_ints(cJSON_GetObjectItem(root, "tokens"), &f->n_tokens);
    f->cu_seqlens = mf_ints(cJSON_GetObjectItem(root, "cu_seqlens"), &n_cu);
    f->n_seqs = n_cu - 1;
    const cJSON *w = cJSON_GetObjectItem(root, "weights");
    n_w = cJSON_GetArraySize(w);
    cr_assert_eq(n_w, f->n_tokens);
    f->weights = malloc((size_t)n_w * sizeof(float));
    for (int i = 0; i < n_w; i++) f->weights[i] = (float)cJSON_GetArrayItem(w, i)->valuedouble;
    f->inv_temperature = (float)cJSON_GetObjectItem(root, "inv_temperature")->valuedouble;
    const cJSON *gen = cJSON_GetObjectItem(root, "generate");
    f->max_new_tokens = cJSON_GetObjectItem(gen, "max_new_tokens")->valueint;
    const cJSON *prompts = cJSON_GetObjectItem(gen, "prompts"), *outputs = cJSON_GetObjectItem(gen, "outputs");
    f->n_prompts = cJSON_GetArraySize(prompts);
    cr_assert(f->n_prompts <= MF_MAX_PROMPTS);
    for (int i = 0; i < f->n_prompts; i++) {
        f->prompts[i] = mf_ints(cJSON_GetArrayItem(prompts, i), &f->prompt_len[i]);
        f->outputs[i] = mf_ints(cJSON_GetArrayItem(outputs, i), &f->output_len[i]);
    }
    cJSON_Delete(root);
    snprintf(path, sizeof path, "tests/fixtures/model/%s.safetensors", name);
    cr_assert_eq(rl_safetensors_open(&f->ref, path, &err), 0, "%s", err.msg);
}

/* A reference tensor as a malloc'd fp32 array; *n gets its element count. */
static inline float *mf_tensor(const model_fixture *f, const char *name, size_t *n)
{
    const rl_st_tensor *t = rl_safetensors_find(f->ref, name);
    cr_assert(t, "fixture tensor '%s' missing", name);
    *n = (size_t)rl_st_tensor_numel(t);
    float *out = malloc(*n * sizeof(float));
    cr_assert(out);
    rl_safetensors_to_f32(t, out);
    return out;
}

static inline void mf_free(model_fixture *f)
{
    free(f->tokens);
    free(f->cu_seqlens);
    free(f->weights);
    for (int i = 0; i < f->n_prompts; i++) {
        free(f->prompts[i]);
        free(f->outputs[i]);
    }
    rl_safetensors_close(f->ref);
}

/* max |a - b| / max |b|: the error relative to the tensor's scale (elementwise ratios blow up
 * on entries that are nearly zero by cancellation). */
static inline double mf_scaled_err(const float *a, const float *b, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d == d)) return INFINITY;
        if (d > worst) worst = d;
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
    }
    return scale > 0 ? worst / scale : worst;
}

#endif
