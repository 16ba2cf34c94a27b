/* test_value.c — value models (config.h's score head, model.h "Value models"): the configs
 * transformers writes for Qwen3ForTokenClassification / ForSequenceClassification with one
 * label, a value model made from a causal LM (trunk kept, lm_head dropped, head of zeros), its
 * values against the head applied by hand to the final hidden states, its gradients against
 * finite differences (fp32 CPU), and a save / load round trip in the transformers layout. */
#include <unistd.h>

#include "backend/ops.h"
#include "core/file.h"
#include "io/json.h"
#include "model/acts_internal.h"
#include "model_fixture.h"

static const char *TOKEN_CFG =
    "{\"architectures\": [\"Qwen3ForTokenClassification\"], \"model_type\": \"qwen3\", \"vocab_size\": 64,"
    " \"hidden_size\": 16, \"intermediate_size\": 32, \"num_hidden_layers\": 1, \"num_attention_heads\": 2,"
    " \"num_key_value_heads\": 1, \"head_dim\": 8, \"max_position_embeddings\": 64%s}";

static int parse(const char *extra, const char *arch, rl_model_config *c, rl_err *err)
{
    char text[1024], cfg[1024];
    snprintf(cfg, sizeof cfg, TOKEN_CFG, extra);
    const char *at = strstr(cfg, "Qwen3ForTokenClassification");
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - cfg), cfg, arch, at + strlen("Qwen3ForTokenClassification"));
    return rl_config_parse(c, text, strlen(text), "config.json", err);
}

Test(value, config_heads)
{
    rl_model_config c;
    rl_err err = {{0}};
    cr_assert_eq(parse(", \"id2label\": {\"0\": \"LABEL_0\"}", "Qwen3ForTokenClassification", &c, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(c.head, RL_HEAD_TOKEN_CLS);
    cr_assert_str_eq(c.architecture, "Qwen3ForTokenClassification");
    rl_tensor_spec *specs;
    int n;
    cr_assert_eq(rl_config_tensor_specs(&c, &specs, &n, &err), 0);
    cr_assert_str_eq(specs[n - 2].name, "score.weight");
    cr_assert(specs[n - 2].shape[0] == 1 && specs[n - 2].shape[1] == 16);
    cr_assert_str_eq(specs[n - 1].name, "score.bias");
    for (int i = 0; i < n; i++) cr_assert(strcmp(specs[i].name, "lm_head.weight"), "a value model has no lm_head");
    free(specs);
    cr_assert_eq(parse(", \"num_labels\": 1", "Qwen3ForSequenceClassification", &c, &err), 0, "%s", err.msg);
    cr_assert_eq(c.head, RL_HEAD_SEQ_CLS);
    cr_assert_eq(rl_config_tensor_specs(&c, &specs, &n, &err), 0);
    cr_assert_str_eq(specs[n - 1].name, "score.weight");
    free(specs);
    /* transformers' default is two labels: a value head needs one */
    cr_assert_eq(parse("", "Qwen3ForTokenClassification", &c, &err), -1);
    cr_assert(strstr(err.msg, "one label") && strstr(err.msg, "got 2"), "%s", err.msg);
    cr_assert_eq(parse(", \"id2label\": {\"0\": \"a\", \"1\": \"b\"}", "Qwen3ForTokenClassification", &c, &err), -1);
    cr_assert_eq(parse(", \"num_labels\": 1", "Qwen3ForMaskedLM", &c, &err), -1);
    cr_assert(strstr(err.msg, "Qwen3ForMaskedLM"), "%s", err.msg);
}

typedef struct setup {
    rl_ctx ctx;
    rl_model v;
    rl_acts *acts;
    model_fixture f;
} setup;

/* The value model of qwen3-tiny-untied with a random head (weight ~ U(-1, 1), bias 0.25). */
static void open_setup(setup *s)
{
    rl_err err = {{0}};
    mf_load(&s->f, "qwen3-tiny-untied");
    cr_assert_eq(rl_ctx_create(&s->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load_value(&s->v, &s->ctx, s->f.model_dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_create(&s->acts, &s->v, s->f.n_tokens, RL_ACTS_TRAIN, &err), 0, "%s", err.msg);
    int D = s->v.config.hidden_size;
    tu_fill_uniform(s->v.master + s->v.score, (size_t)D, -1, 1, 7);
    s->v.master[s->v.score_bias] = 0.25f;
}

static void close_setup(setup *s)
{
    rl_acts_free(s->acts);
    rl_model_free(&s->v);
    rl_ctx_free(&s->ctx);
    mf_free(&s->f);
}

static double loss_of(setup *s, float *values)
{
    rl_err err = {{0}};
    cr_assert_eq(rl_model_forward(&s->v, s->acts, s->f.tokens, s->f.cu_seqlens, s->f.n_seqs, 1.0f, values, NULL, &err),
                 0, "%s", err.msg);
    double loss = 0;
    for (int t = 0; t < s->f.n_tokens; t++) loss += (double)s->f.weights[t] * values[t];
    return loss;
}

Test(value, from_causal_lm)
{
    setup s;
    open_setup(&s);
    rl_err err = {{0}};
    rl_model lm;
    cr_assert_eq(rl_model_load(&lm, &s.ctx, s.f.model_dir, &err), 0, "%s", err.msg);
    cr_assert_eq(s.v.config.head, RL_HEAD_TOKEN_CLS);
    cr_assert_str_eq(s.v.config.architecture, "Qwen3ForTokenClassification");
    cr_assert_eq(s.v.lm_head, SIZE_MAX);
    cr_assert_eq(rl_model_find_param(&s.v, "lm_head.weight"), -1);
    /* the trunk is the causal model's, tensor for tensor */
    for (int i = 0; i < lm.n_params; i++) {
        const rl_param *p = &lm.params[i];
        int j = rl_model_find_param(&s.v, p->name);
        if (!strcmp(p->name, "lm_head.weight")) continue;
        cr_assert(j >= 0, "%s missing from the value model", p->name);
        cr_assert(!memcmp(lm.master + p->offset, s.v.master + s.v.params[j].offset, p->count * sizeof(float)), "%s",
                  p->name);
    }
    rl_model_free(&lm);
    /* a fresh head is zeros: every value 0 */
    rl_model z;
    cr_assert_eq(rl_model_load_value(&z, &s.ctx, s.f.model_dir, &err), 0, "%s", err.msg);
    for (int d = 0; d < z.config.hidden_size; d++) cr_assert(z.master[z.score + d] == 0.0f);
    cr_assert(z.master[z.score_bias] == 0.0f);
    rl_model_free(&z);
    close_setup(&s);
}

Test(value, values_are_the_head_on_the_final_hidden_states)
{
    setup s;
    open_setup(&s);
    int T = s.f.n_tokens, D = s.v.config.hidden_size;
    float *values = malloc((size_t)T * sizeof(float));
    tu_poison(values, (size_t)T);
    loss_of(&s, values);
    const float *xf = s.acts->xf, *w = s.v.master + s.v.score;
    double worst = 0;
    for (int q = 0; q < s.f.n_seqs; q++)
        for (int t = s.f.cu_seqlens[q]; t < s.f.cu_seqlens[q + 1]; t++) {
            double want = 0;
            if (t > s.f.cu_seqlens[q]) {
                want = 0.25;
                for (int d = 0; d < D; d++) want += (double)xf[(size_t)(t - 1) * D + d] * w[d];
            }
            double e = fabs(values[t] - want);
            if (e > worst) worst = e;
        }
    cr_assert(worst < 1e-5, "values vs score(hidden[t - 1]) + bias: max error %g", worst);
    free(values);
    close_setup(&s);
}

/* d loss / d theta for a few parameters of the head, the final norm and a layer, by central
 * differences of the fp32 forward. */
Test(value, gradients_match_finite_differences)
{
    setup s;
    open_setup(&s);
    rl_err err = {{0}};
    int T = s.f.n_tokens;
    float *values = malloc((size_t)T * sizeof(float)), *dvalues = malloc((size_t)T * sizeof(float));
    cr_assert_eq(rl_model_enable_grads(&s.v, &err), 0);
    loss_of(&s, values);
    memcpy(dvalues, s.f.weights, (size_t)T * sizeof(float));
    cr_assert_eq(rl_model_backward(&s.v, s.acts, dvalues, &err), 0, "%s", err.msg);
    const char *names[] = {"score.weight", "score.bias", "model.norm.weight", "model.layers.2.mlp.down_proj.weight",
                           "model.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight"};
    double worst = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        int i = rl_model_find_param(&s.v, names[k]);
        cr_assert(i >= 0, "%s", names[k]);
        for (int probe = 0; probe < 3; probe++) {
            size_t at = s.v.params[i].offset + (size_t)probe * 37 % s.v.params[i].count;
            if (!strcmp(names[k], "model.embed_tokens.weight")) /* a row the batch reads */
                at = s.v.params[i].offset + (size_t)s.f.tokens[3 + probe] * s.v.config.hidden_size + probe;
            float keep = s.v.master[at], h = 1e-2f;
            s.v.master[at] = keep + h;
            double up = loss_of(&s, values);
            s.v.master[at] = keep - h;
            double down = loss_of(&s, values);
            s.v.master[at] = keep;
            double fd = (up - down) / (2 * h), g = s.v.grads[at];
            double e = fabs(fd - g) / (fabs(fd) > 1 ? fabs(fd) : 1);
            cr_assert(e < 5e-3, "%s[%zu]: backward %g, finite differences %g", names[k], at - s.v.params[i].offset, g,
                      fd);
            if (e > worst) worst = e;
        }
    }
    cr_log_info("value gradients vs finite differences: max scaled error %.2e", worst);
    free(values);
    free(dvalues);
    close_setup(&s);
}

Test(value, save_load_round_trip)
{
    setup s;
    open_setup(&s);
    rl_err err = {{0}};
    char dir[] = "/tmp/rlc_value_XXXXXX";
    cr_assert(mkdtemp(dir));
    cr_assert_eq(rl_model_save(&s.v, dir, RL_F32, &err), 0, "%s", err.msg);
    char path[512], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/config.json", dir);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0);
    cr_assert(strstr(text, "\"Qwen3ForTokenClassification\"") && strstr(text, "\"id2label\""), "%s", text);
    free(text);
    rl_model back;
    cr_assert_eq(rl_model_load(&back, &s.ctx, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(back.config.head, RL_HEAD_TOKEN_CLS);
    cr_assert_eq(back.n_elems, s.v.n_elems);
    cr_assert(!memcmp(back.master, s.v.master, s.v.n_elems * sizeof(float)));
    /* a value model is already one: loading it as a value model changes nothing */
    rl_model again;
    cr_assert_eq(rl_model_load_value(&again, &s.ctx, dir, &err), 0, "%s", err.msg);
    cr_assert(!memcmp(again.master, s.v.master, s.v.n_elems * sizeof(float)));
    rl_model_free(&again);
    rl_model_free(&back);
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
    close_setup(&s);
}

/* Against transformers (tools/make_value_fixtures.py): Qwen3ForTokenClassification with one
 * label, loaded from the directory transformers saved; every position's value and the gradient
 * of every parameter of loss = sum_t weights[t] values[t]. fp32 throughout: errors relative to
 * each tensor's scale, 1e-4 for the values and 1e-3 for the gradients (as tests/model's). */
Test(value, matches_transformers)
{
    rl_err err = {{0}};
    cJSON *root = rl_json_parse_file("tests/fixtures/model/qwen3-tiny-value.json", &err);
    cr_assert(root, "%s", err.msg);
    int T, n_cu;
    int32_t *tokens = mf_ints(cJSON_GetObjectItem(root, "tokens"), &T);
    int32_t *cu = mf_ints(cJSON_GetObjectItem(root, "cu_seqlens"), &n_cu);
    float *w = malloc((size_t)T * sizeof(float));
    for (int t = 0; t < T; t++) w[t] = (float)cJSON_GetArrayItem(cJSON_GetObjectItem(root, "weights"), t)->valuedouble;
    cJSON_Delete(root);
    model_fixture f = {0};
    cr_assert_eq(rl_safetensors_open(&f.ref, "tests/fixtures/model/qwen3-tiny-value.safetensors", &err), 0, "%s",
                 err.msg);
    rl_ctx ctx;
    rl_model v;
    rl_acts *acts;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&v, &ctx, "tests/fixtures/models/qwen3-tiny-value", &err), 0, "%s", err.msg);
    cr_assert_eq(v.config.head, RL_HEAD_TOKEN_CLS);
    cr_assert_eq(rl_acts_create(&acts, &v, T, RL_ACTS_TRAIN, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_enable_grads(&v, &err), 0, "%s", err.msg);
    float *values = malloc((size_t)T * sizeof(float));
    tu_poison(values, (size_t)T);
    cr_assert_eq(rl_model_forward(&v, acts, tokens, cu, n_cu - 1, 1.0f, values, NULL, &err), 0, "%s", err.msg);
    size_t n;
    float *ref = mf_tensor(&f, "values", &n);
    cr_assert_eq(n, (size_t)T);
    double e_values = mf_scaled_err(values, ref, n);
    cr_assert(e_values <= 1e-4, "values: error %.3e", e_values);
    free(ref);
    cr_assert_eq(rl_model_backward(&v, acts, w, &err), 0, "%s", err.msg);
    double worst = 0;
    const char *worst_name = "";
    for (int p = 0; p < v.n_params; p++) {
        const rl_param *par = &v.params[p];
        char name[128];
        snprintf(name, sizeof name, "grad.%s", par->name);
        ref = mf_tensor(&f, name, &n);
        cr_assert_eq(n, par->count, "%s", par->name);
        double e = mf_scaled_err(v.grads + par->offset, ref, n);
        cr_expect(e <= 1e-3, "gradient of %s: error %.3e", par->name, e);
        if (e > worst) worst = e, worst_name = par->name;
        free(ref);
    }
    cr_log_info("value model vs transformers: values error %.2e, worst gradient %s %.2e", e_values, worst_name, worst);
    free(values), free(w), free(tokens), free(cu);
    rl_acts_free(acts);
    rl_model_free(&v);
    rl_ctx_free(&ctx);
    rl_safetensors_close(f.ref);
}

/* PPO's value model trains on the policy's activations when the two have one shape
 * (rl_acts_share); another shape, or inference activations, are refused. */
Test(value, acts_are_shared_between_models_of_one_shape)
{
    setup s;
    open_setup(&s);
    rl_err err = {{0}};
    rl_model lm;
    cr_assert_eq(rl_model_load(&lm, &s.ctx, s.f.model_dir, &err), 0, "%s", err.msg);
    int T = s.f.n_tokens;
    float *a = malloc((size_t)T * sizeof(float)), *b = malloc((size_t)T * sizeof(float));
    loss_of(&s, a);
    cr_assert_eq(rl_acts_share(s.acts, &lm, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_forward(&lm, s.acts, s.f.tokens, s.f.cu_seqlens, s.f.n_seqs, 1.0f, b, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(rl_acts_share(s.acts, &s.v, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_enable_grads(&s.v, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_backward(&s.v, s.acts, a, &err), -1, "the shared acts forgot the value model's batch");
    cr_assert(strstr(err.msg, "no forward batch"), "%s", err.msg);
    loss_of(&s, b);
    cr_assert(!memcmp(a, b, (size_t)T * sizeof(float)), "values differ after the acts served another model");
    rl_model other;
    rl_model_config cfg = lm.config;
    cfg.n_layers = 1;
    cr_assert_eq(rl_model_init_random(&other, &s.ctx, &cfg, 3, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_share(s.acts, &other, &err), -1);
    cr_assert(strstr(err.msg, "another shape"), "%s", err.msg);
    rl_acts *infer;
    cr_assert_eq(rl_acts_create(&infer, &lm, T, RL_ACTS_INFER, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_share(infer, &s.v, &err), -1);
    rl_acts_free(infer);
    rl_model_free(&other);
    rl_model_free(&lm);
    free(a), free(b);
    close_setup(&s);
}
