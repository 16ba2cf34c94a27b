/* test_model.c — the model's forward and backward against transformers (fp32, eager attention)
 * on the tiny checkpoints: logits, token log-probs, entropies, and the gradient of every
 * parameter of a weighted log-prob loss (tools/make_model_fixtures.py). Also: the entropy
 * bonus's gradient against finite differences, gradient checkpointing gives the same gradients, training mode keeps only what is costly to remake,
 * gradients accumulate, inference-mode forward agrees with training mode, and bad batches are
 * refused with a message. */
#include "model/acts_internal.h"
#include "backend/ops.h"
#include "model_fixture.h"

static const char *MODELS[] = {"qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

typedef struct setup {
    rl_ctx ctx;
    rl_model m;
    rl_acts *acts;
    model_fixture f;
} setup;

static void open_setup(setup *s, const char *name, rl_acts_mode mode)
{
    rl_err err = {{0}};
    mf_load(&s->f, name);
    cr_assert_eq(rl_ctx_create(&s->ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&s->m, &s->ctx, s->f.model_dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_acts_create(&s->acts, &s->m, s->f.n_tokens, mode, &err), 0, "%s", err.msg);
}

static void close_setup(setup *s)
{
    rl_acts_free(s->acts);
    rl_model_free(&s->m);
    rl_ctx_free(&s->ctx);
    mf_free(&s->f);
}

/* Runs the forward at inv_temperature into fresh NaN-poisoned logp / entropy arrays. */
static void forward(setup *s, float inv_temperature, float *logp, float *entropy)
{
    rl_err err = {{0}};
    tu_poison(logp, (size_t)s->f.n_tokens);
    if (entropy) tu_poison(entropy, (size_t)s->f.n_tokens);
    cr_assert_eq(rl_model_forward(&s->m, s->acts, s->f.tokens, s->f.cu_seqlens, s->f.n_seqs,
                                  inv_temperature, logp, entropy, &err), 0, "%s", err.msg);
}

Test(model, forward_matches_transformers)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        setup s;
        open_setup(&s, MODELS[i], RL_ACTS_TRAIN);
        int T = s.f.n_tokens, V = s.m.config.vocab_size;
        float *logp = malloc(T * sizeof(float)), *entropy = malloc(T * sizeof(float));
        forward(&s, 1.0f, logp, entropy);

        size_t n;
        float *ref_logp = mf_tensor(&s.f, "logp", &n);
        float *ref_entropy = mf_tensor(&s.f, "entropy", &n);
        float *ref_logits = mf_tensor(&s.f, "logits", &n);
        cr_assert_eq(n, (size_t)T * V);
        /* Logits of every row, from the final-norm output the forward kept. */
        float *logits = malloc(n * sizeof(float));
        tu_poison(logits, n);
        cr_assert_eq(rl_lm_head_logits(&s.ctx, logits, s.acts->xf,
                                       (const char *)s.m.working + s.m.lm_head * sizeof(float), T,
                                       s.m.config.hidden_size, V), 0);
        double e_logits = mf_scaled_err(logits, ref_logits, n);
        double e_logp = tu_max_rel_err(logp, ref_logp, T, 1e-3, NULL);
        double e_entropy = tu_max_rel_err(entropy, ref_entropy, T, 1e-3, NULL);
        cr_log_info("%s: logits err %.2e, logp rel err %.2e, entropy rel err %.2e", MODELS[i],
                    e_logits, e_logp, e_entropy);
        cr_expect(e_logits <= 1e-4, "%s: logits error %.3e", MODELS[i], e_logits);
        cr_expect(e_logp <= 1e-4, "%s: logp relative error %.3e", MODELS[i], e_logp);
        cr_expect(e_entropy <= 1e-4, "%s: entropy relative error %.3e", MODELS[i], e_entropy);
        for (int sq = 0; sq < s.f.n_seqs; sq++)
            cr_expect(logp[s.f.cu_seqlens[sq]] == 0.0f && entropy[s.f.cu_seqlens[sq]] == 0.0f,
                      "%s: sequence %d's first token must score 0", MODELS[i], sq);

        float *ref_temp = mf_tensor(&s.f, "logp_temp", &n);
        forward(&s, s.f.inv_temperature, logp, NULL);
        double e_temp = tu_max_rel_err(logp, ref_temp, T, 1e-3, NULL);
        cr_expect(e_temp <= 1e-4, "%s: logp at inv_temperature %g: relative error %.3e", MODELS[i],
                  s.f.inv_temperature, e_temp);
        free(ref_logp);
        free(ref_entropy);
        free(ref_logits);
        free(ref_temp);
        free(logits);
        free(logp);
        free(entropy);
        close_setup(&s);
    }
}

/* Forward at the fixture's temperature, backward of sum weights * logp; grads left in s->m. */
static void loss_grads(setup *s)
{
    rl_err err = {{0}};
    float *logp = malloc(s->f.n_tokens * sizeof(float));
    cr_assert_eq(rl_model_enable_grads(&s->m, &err), 0, "%s", err.msg);
    forward(s, s->f.inv_temperature, logp, NULL);
    cr_assert_eq(rl_model_backward(&s->m, s->acts, s->f.weights, &err), 0, "%s", err.msg);
    free(logp);
}

static void check_grads(rl_acts_mode mode)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        setup s;
        open_setup(&s, MODELS[i], mode);
        loss_grads(&s);
        double worst = 0;
        const char *worst_name = "";
        for (int p = 0; p < s.m.n_params; p++) {
            const rl_param *par = &s.m.params[p];
            char name[128];
            snprintf(name, sizeof name, "grad.%s", par->name);
            size_t n;
            float *ref = mf_tensor(&s.f, name, &n);
            cr_assert_eq(n, par->count, "%s: %s has %zu elements, reference %zu", MODELS[i], par->name, par->count, n);
            double e = mf_scaled_err(s.m.grads + par->offset, ref, n);
            if (e > worst) {
                worst = e;
                worst_name = par->name;
            }
            cr_expect(e <= 1e-3, "%s: gradient of %s: error %.3e (max |diff| / max |ref|)", MODELS[i], par->name, e);
            free(ref);
        }
        cr_log_info("%s (%s): worst gradient %s, error %.2e", MODELS[i],
                    mode == RL_ACTS_TRAIN ? "train" : "checkpoint", worst_name, worst);
        close_setup(&s);
    }
}

Test(model, gradients_match_transformers) { check_grads(RL_ACTS_TRAIN); }

Test(model, gradients_match_with_checkpointing) { check_grads(RL_ACTS_TRAIN_CHECKPOINT); }

/* TRAIN remakes the norm outputs, q, k and act in the backward, and CHECKPOINT re-runs the whole
 * layer, both with the forward's own ops on the same inputs: the gradients must be the same
 * numbers, not merely close. */
Test(model, checkpointing_gives_the_same_gradients)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        setup a, b;
        open_setup(&a, MODELS[i], RL_ACTS_TRAIN);
        open_setup(&b, MODELS[i], RL_ACTS_TRAIN_CHECKPOINT);
        loss_grads(&a);
        loss_grads(&b);
        double e = mf_scaled_err(b.m.grads, a.m.grads, a.m.n_elems);
        cr_expect(memcmp(b.m.grads, a.m.grads, a.m.n_elems * sizeof(float)) == 0,
                  "%s: checkpointed gradients differ from train mode's (error %.3e)", MODELS[i], e);
        cr_expect_lt(rl_acts_bytes(b.acts), rl_acts_bytes(a.acts), "%s: checkpointing must keep less", MODELS[i]);
        close_setup(&a);
        close_setup(&b);
    }
}

static size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

/* TRAIN keeps per layer, besides the input x, only what is costly to remake: q_raw and k_raw
 * (q and k without QK-norm), v, the attention output and its lse, h, gate and up; the norm
 * outputs (and rstd), q and k after QK-norm + RoPE, and act are one set shared by all layers,
 * as in CHECKPOINT mode. So the two plans differ by exactly n_layers - 1 kept sets (each piece
 * starts on a 256-byte boundary). */
Test(model, train_mode_keeps_only_what_is_costly_to_remake)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        setup a, b;
        open_setup(&a, MODELS[i], RL_ACTS_TRAIN);
        open_setup(&b, MODELS[i], RL_ACTS_TRAIN_CHECKPOINT);
        const rl_model_config *c = &a.m.config;
        size_t T = (size_t)a.f.n_tokens, e = rl_dtype_size(a.ctx.act_dtype);
        size_t D = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
        size_t qd = (size_t)c->n_heads * c->head_dim, kd = (size_t)c->n_kv_heads * c->head_dim;
        size_t kept = aligned(T * qd * e) + 2 * aligned(T * kd * e) + aligned(T * qd * e) +
                      aligned(T * c->n_heads * sizeof(float)) + aligned(T * D * e) + 2 * aligned(T * I * e);
        size_t train = rl_acts_bytes(a.acts), ckpt = rl_acts_bytes(b.acts);
        cr_log_info("%s: train %zu bytes, checkpoint %zu, kept per layer %zu", MODELS[i], train, ckpt, kept);
        cr_expect_eq(train - ckpt, (size_t)(c->n_layers - 1) * kept,
                     "%s: train mode holds %zu bytes more than checkpoint mode, expected %d x %zu", MODELS[i],
                     train - ckpt, c->n_layers - 1, kept);
        const rl_layer_acts *first = &a.acts->layers[0];
        for (int l = 1; l < c->n_layers; l++) {
            const rl_layer_acts *s = &a.acts->layers[l];
            cr_expect(s->xn1 == first->xn1 && s->xn2 == first->xn2 && s->act == first->act &&
                          s->rstd1 == first->rstd1 && s->rstd2 == first->rstd2,
                      "%s: layer %d must share the remade norm outputs and act", MODELS[i], l);
            cr_expect(s->gate != first->gate && s->up != first->up && s->h != first->h &&
                          s->v != first->v && s->attn != first->attn && s->lse != first->lse,
                      "%s: layer %d must keep its own gate, up, h, v, attn, lse", MODELS[i], l);
            if (c->qk_norm)
                cr_expect(s->q == first->q && s->k == first->k && s->q_raw != first->q_raw &&
                              s->k_raw != first->k_raw,
                          "%s: layer %d must keep q_raw, k_raw and share q, k", MODELS[i], l);
            else
                cr_expect(s->q != first->q && s->k != first->k, "%s: layer %d must keep q, k", MODELS[i], l);
        }
        close_setup(&a);
        close_setup(&b);
    }
}

Test(model, gradients_accumulate)
{
    setup s;
    open_setup(&s, "qwen3-tiny-tied", RL_ACTS_TRAIN);
    loss_grads(&s);
    size_t n = s.m.n_elems;
    float *once = malloc(n * sizeof(float));
    memcpy(once, s.m.grads, n * sizeof(float));
    loss_grads(&s);
    for (size_t i = 0; i < n; i++) once[i] *= 2.0f;
    double e = mf_scaled_err(s.m.grads, once, n);
    cr_assert(e <= 1e-6, "two backwards must give twice the gradient: error %.3e", e);
    rl_err err = {{0}};
    cr_assert_eq(rl_model_zero_grads(&s.m, &err), 0);
    for (size_t i = 0; i < n; i++) cr_assert_eq(s.m.grads[i], 0.0f);
    free(once);
    close_setup(&s);
}

Test(model, inference_mode_matches_training_mode)
{
    setup s;
    open_setup(&s, "qwen3-tiny-untied", RL_ACTS_INFER);
    int T = s.f.n_tokens;
    float *logp = malloc(T * sizeof(float));
    forward(&s, 1.0f, logp, NULL);
    size_t n;
    float *ref = mf_tensor(&s.f, "logp", &n);
    double e = tu_max_rel_err(logp, ref, T, 1e-3, NULL);
    cr_assert(e <= 1e-4, "inference-mode logp relative error %.3e", e);
    rl_err err = {{0}};
    cr_assert_eq(rl_model_enable_grads(&s.m, &err), 0);
    cr_assert_eq(rl_model_backward(&s.m, s.acts, logp, &err), -1);
    cr_assert(strstr(err.msg, "inference only"), "%s", err.msg);
    free(ref);
    free(logp);
    close_setup(&s);
}

Test(model, bad_batches_are_refused)
{
    setup s;
    open_setup(&s, "qwen3-tiny-tied", RL_ACTS_TRAIN);
    rl_err err = {{0}};
    float logp[64];
    int32_t tokens[4] = {1, 2, 512, 3};
    int32_t cu[3] = {0, 2, 4};
    cr_assert_eq(rl_model_forward(&s.m, s.acts, tokens, cu, 2, 1.0f, logp, NULL, &err), -1);
    cr_assert(strstr(err.msg, "token 512 at position 2 is outside the vocabulary"), "%s", err.msg);
    tokens[2] = 5;
    int32_t empty[3] = {0, 2, 2};
    cr_assert_eq(rl_model_forward(&s.m, s.acts, tokens, empty, 2, 1.0f, logp, NULL, &err), -1);
    cr_assert(strstr(err.msg, "sequence 1 has length 0"), "%s", err.msg);
    int32_t long_cu[3] = {0, 1, 4};
    int max_pos = s.m.config.max_position_embeddings;
    s.m.config.max_position_embeddings = 2; /* positions past it were never trained */
    cr_assert_eq(rl_model_forward(&s.m, s.acts, tokens, long_cu, 2, 1.0f, logp, NULL, &err), -1);
    cr_assert(strstr(err.msg, "sequence 1 has 3 tokens, more than max_position_embeddings = 2"), "%s", err.msg);
    s.m.config.max_position_embeddings = max_pos;
    int32_t big[2] = {0, s.f.n_tokens + 1};
    cr_assert_eq(rl_model_forward(&s.m, s.acts, s.f.tokens, big, 1, 1.0f, logp, NULL, &err), -1);
    cr_assert(strstr(err.msg, "more than"), "%s", err.msg);
    cr_assert_eq(rl_model_backward(&s.m, s.acts, logp, &err), -1);
    cr_assert(strstr(err.msg, "gradients are not enabled"), "%s", err.msg);
    cr_assert_eq(rl_model_enable_grads(&s.m, &err), 0);
    cr_assert_eq(rl_model_backward(&s.m, s.acts, logp, &err), -1);
    cr_assert(strstr(err.msg, "no forward batch"), "%s", err.msg);
    close_setup(&s);
}

/* The entropy bonus's gradient through the whole model (rl_model_backward_entropy: the shift of
 * dentropy to the lm_head's rows, the op's entropy term): loss = sum_t dlogp[t] logp[t] +
 * dent[t] entropy[t] against central differences in double of the fp32 forward, on elements of
 * the embedding (tied lm_head), the final norm and layer 0's q and down projections; sequence
 * starts carry dent too (they have no entropy: their weight must be ignored). Measured: within
 * 3.3e-4 of the differences (tolerance 1e-3); without the entropy term the first element is off by
 * 4.9e-3. A forward without entropies is refused. */
static double ent_loss(setup *s, const float *dlogp, const float *dent, float *logp, float *ent)
{
    forward(s, 1.3f, logp, ent);
    double l = 0;
    for (int t = 0; t < s->f.n_tokens; t++) l += (double)dlogp[t] * logp[t] + (double)dent[t] * ent[t];
    return l;
}

Test(model, entropy_gradient_matches_finite_differences)
{
    setup s;
    open_setup(&s, "qwen3-tiny-tied", RL_ACTS_TRAIN);
    rl_err err = {{0}};
    int T = s.f.n_tokens;
    float *dlogp = malloc(T * sizeof(float)), *dent = malloc(T * sizeof(float));
    float *logp = malloc(T * sizeof(float)), *ent = malloc(T * sizeof(float));
    tu_fill_uniform(dlogp, T, -0.5f, 0.5f, 21);
    tu_fill_uniform(dent, T, -2.0f, 2.0f, 22);
    cr_assert_eq(rl_model_enable_grads(&s.m, &err), 0);
    forward(&s, 1.3f, logp, NULL);
    cr_assert_eq(rl_model_backward_entropy(&s.m, s.acts, dlogp, dent, &err), -1);
    cr_assert(strstr(err.msg, "no entropy"), "%s", err.msg);
    ent_loss(&s, dlogp, dent, logp, ent);
    cr_assert_eq(rl_model_backward_entropy(&s.m, s.acts, dlogp, dent, &err), 0, "%s", err.msg);
    size_t picks[4] = {s.m.embed + 7 * (size_t)s.m.config.hidden_size + 3, s.m.final_norm + 5,
                       s.m.layers[0].q + 11, s.m.layers[0].down + 17};
    for (int k = 0; k < 4; k++) {
        size_t i = picks[k];
        float w = s.m.master[i], h = 3e-2f * (fabsf(w) > 0.1f ? fabsf(w) : 0.1f);
        s.m.master[i] = w + h;
        double up = ent_loss(&s, dlogp, dent, logp, ent);
        s.m.master[i] = w - h;
        double down = ent_loss(&s, dlogp, dent, logp, ent);
        s.m.master[i] = w;
        double fd = (up - down) / (2.0 * h), g = s.m.grads[i];
        cr_log_info("entropy gradient, element %zu: backward %.6g, finite differences %.6g", i, g, fd);
        cr_assert(fabs(g - fd) <= 1e-3 * (fabs(fd) > 1 ? fabs(fd) : 1), "element %zu: backward %.6g, finite differences %.6g",
                  i, g, fd);
    }
    free(dlogp), free(dent), free(logp), free(ent);
    close_setup(&s);
}
