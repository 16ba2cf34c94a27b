/* test_lm_head.c — the chunked lm_head + log-softmax against float64 torch (150 tokens: more
 * than one 128-token block; vocab 600: three 256-row vocabulary chunks, the last partial;
 * temperature 0.7; three tokens without a target): logp, lse, entropy, the backward (dhidden overwritten,
 * dweight added), the plain logits, finite differences, bad targets. fp32 tolerance: 2e-5
 * relative to max(|ref|, 0.1) for per-token values (dot products over dim 24, log-sum-exp in
 * double); the gradients sum over 600 vocabulary rows or 150 tokens, 5e-5. */
#include "op_fixture.h"

enum { T = 150, DIM = 24, VOCAB = 600, LOGIT_ROWS = 19 };

Test(lm_head, forward_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("lm_head");
    float *h = fx_get(st, "hidden", T * DIM), *w = fx_get(st, "weight", VOCAB * DIM);
    float *inv_t = fx_get(st, "inv_temperature", 1);
    int32_t *tgt = fx_ints(st, "targets", T);
    float *ref_logp = fx_get(st, "logp", T), *ref_lse = fx_get(st, "lse", T), *ref_ent = fx_get(st, "entropy", T);
    float *logp = fx_alloc_poisoned(T), *lse = fx_alloc_poisoned(T), *ent = fx_alloc_poisoned(T);
    cr_assert_eq(rl_lm_head_logprobs_fwd(&ctx, logp, lse, ent, h, w, tgt, T, DIM, VOCAB, inv_t[0]), 0, "%s",
                 ctx.err.msg);
    fx_expect_close("logp", logp, ref_logp, T, 2e-5, 0.1);
    fx_expect_close("lse", lse, ref_lse, T, 2e-5, 0.1);
    fx_expect_close("entropy", ent, ref_ent, T, 2e-5, 0.1);
    cr_expect(logp[3] == 0.0f && logp[17] == 0.0f && logp[136] == 0.0f, "tokens without target: logp 0");
    /* entropy may be NULL */
    tu_poison(logp, T);
    cr_assert_eq(rl_lm_head_logprobs_fwd(&ctx, logp, lse, NULL, h, w, tgt, T, DIM, VOCAB, inv_t[0]), 0, "%s",
                 ctx.err.msg);
    fx_expect_close("logp (no entropy)", logp, ref_logp, T, 2e-5, 0.1);
    free(h), free(w), free(inv_t), free(tgt), free(ref_logp), free(ref_lse), free(ref_ent);
    free(logp), free(lse), free(ent);
    rl_safetensors_close(st);
}

Test(lm_head, backward_matches_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("lm_head");
    float *h = fx_get(st, "hidden", T * DIM), *w = fx_get(st, "weight", VOCAB * DIM);
    float *inv_t = fx_get(st, "inv_temperature", 1), *lse = fx_get(st, "lse", T);
    int32_t *tgt = fx_ints(st, "targets", T);
    float *dlogp = fx_get(st, "dlogp", T), *ref_dh = fx_get(st, "dhidden", T * DIM);
    float *ref_dw = fx_get(st, "dweight", VOCAB * DIM);
    float *dh = fx_alloc_poisoned(T * DIM), *dw = malloc(VOCAB * DIM * sizeof *dw);
    tu_fill_uniform(dw, VOCAB * DIM, -1, 1, 7);
    for (int i = 0; i < VOCAB * DIM; i++) ref_dw[i] += dw[i];
    cr_assert_eq(rl_lm_head_logprobs_bwd(&ctx, dh, dw, dlogp, NULL, h, w, tgt, lse, NULL, T, DIM, VOCAB, inv_t[0]), 0, "%s",
                 ctx.err.msg);
    fx_expect_close("dhidden", dh, ref_dh, T * DIM, 5e-5, 0.1);
    fx_expect_close("dweight (+=)", dw, ref_dw, VOCAB * DIM, 5e-5, 0.1);
    free(h), free(w), free(inv_t), free(lse), free(tgt), free(dlogp), free(ref_dh), free(ref_dw), free(dh), free(dw);
    rl_safetensors_close(st);
}

Test(lm_head, logits_match_torch)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("lm_head");
    float *h = fx_get(st, "hidden", T * DIM), *w = fx_get(st, "weight", VOCAB * DIM);
    float *ref = fx_get(st, "logits", LOGIT_ROWS * VOCAB), *logits = fx_alloc_poisoned(LOGIT_ROWS * VOCAB);
    cr_assert_eq(rl_lm_head_logits(&ctx, logits, h, w, LOGIT_ROWS, DIM, VOCAB), 0, "%s", ctx.err.msg);
    fx_expect_close("logits", logits, ref, LOGIT_ROWS * VOCAB, 2e-5, 1.0);
    free(h), free(w), free(ref), free(logits);
    rl_safetensors_close(st);
}

enum { FT = 3, FDIM = 4, FV = 7 };

typedef struct fd_state {
    rl_ctx *ctx;
    float *h, *w, *dlogp, *logp, *lse;
    int32_t *tgt;
} fd_state;

static double fd_loss(void *user)
{
    fd_state *s = user;
    cr_assert_eq(rl_lm_head_logprobs_fwd(s->ctx, s->logp, s->lse, NULL, s->h, s->w, s->tgt, FT, FDIM, FV, 1.5f),
                 0);
    return fx_dot(s->dlogp, s->logp, FT);
}

Test(lm_head, finite_differences)
{
    rl_ctx ctx = fx_cpu();
    float h[FT * FDIM], w[FV * FDIM], dlogp[FT], logp[FT], lse[FT], dh[FT * FDIM], dw[FV * FDIM] = {0};
    int32_t tgt[FT] = {2, -1, 6};
    tu_fill_uniform(h, FT * FDIM, -1, 1, 1);
    tu_fill_uniform(w, FV * FDIM, -1, 1, 2);
    tu_fill_uniform(dlogp, FT, 0.5f, 1.5f, 3);
    fd_state s = {&ctx, h, w, dlogp, logp, lse, tgt};
    fd_loss(&s);
    cr_assert_eq(rl_lm_head_logprobs_bwd(&ctx, dh, dw, dlogp, NULL, h, w, tgt, lse, NULL, FT, FDIM, FV, 1.5f), 0, "%s",
                 ctx.err.msg);
    fx_check_fd("lm_head dhidden", h, FT * FDIM, dh, fd_loss, &s, 1e-2f, 1e-3);
    fx_check_fd("lm_head dweight", w, FV * FDIM, dw, fd_loss, &s, 1e-2f, 1e-3);
}

/* The entropy bonus's gradient (PPO's entropy_coef): loss = sum_t dlogp[t] logp[t] + dent[t]
 * entropy[t], entropy from the forward, against central differences of that loss; tokens
 * without a target take neither term. dent has both signs and is larger than dlogp, so the
 * entropy term dominates. */
typedef struct fd_ent_state {
    rl_ctx *ctx;
    float *h, *w, *dlogp, *dent, *logp, *lse, *ent;
    int32_t *tgt;
} fd_ent_state;

static double fd_ent_loss(void *user)
{
    fd_ent_state *s = user;
    cr_assert_eq(rl_lm_head_logprobs_fwd(s->ctx, s->logp, s->lse, s->ent, s->h, s->w, s->tgt, FT, FDIM, FV, 1.5f), 0);
    double l = fx_dot(s->dlogp, s->logp, FT);
    for (int t = 0; t < FT; t++)
        if (s->tgt[t] >= 0) l += (double)s->dent[t] * s->ent[t];
    return l;
}

Test(lm_head, entropy_gradient_finite_differences)
{
    rl_ctx ctx = fx_cpu();
    float h[FT * FDIM], w[FV * FDIM], dlogp[FT], dent[FT] = {-2.0f, 3.0f, 1.5f}, logp[FT], lse[FT], ent[FT];
    float dh[FT * FDIM], dw[FV * FDIM] = {0}, dh0[FT * FDIM], dw0[FV * FDIM] = {0};
    int32_t tgt[FT] = {2, -1, 6};
    tu_fill_uniform(h, FT * FDIM, -1, 1, 11);
    tu_fill_uniform(w, FV * FDIM, -1, 1, 12);
    tu_fill_uniform(dlogp, FT, 0.5f, 1.5f, 13);
    fd_ent_state s = {&ctx, h, w, dlogp, dent, logp, lse, ent, tgt};
    fd_ent_loss(&s);
    cr_assert_eq(rl_lm_head_logprobs_bwd(&ctx, dh, dw, dlogp, dent, h, w, tgt, lse, ent, FT, FDIM, FV, 1.5f), 0, "%s",
                 ctx.err.msg);
    fx_check_fd("lm_head dhidden with entropy", h, FT * FDIM, dh, fd_ent_loss, &s, 1e-2f, 1e-3);
    fx_check_fd("lm_head dweight with entropy", w, FV * FDIM, dw, fd_ent_loss, &s, 1e-2f, 1e-3);
    /* the entropy term changes the gradient (else the check above would not test it) */
    cr_assert_eq(rl_lm_head_logprobs_bwd(&ctx, dh0, dw0, dlogp, NULL, h, w, tgt, lse, NULL, FT, FDIM, FV, 1.5f), 0);
    double diff = 0;
    for (int i = 0; i < FT * FDIM; i++) diff += fabs(dh0[i] - dh[i]);
    cr_assert(diff > 1e-2, "the entropy term moved dhidden by only %g", diff);
}

/* Threads own vocabulary chunks: dweight and the forward agree bitwise between 1 and 3
 * threads; dhidden sums per-thread partials, so it only agrees to rounding (1e-6). */
Test(lm_head, thread_count)
{
    rl_ctx ctx = fx_cpu();
    rl_safetensors *st = fx_open("lm_head");
    float *h = fx_get(st, "hidden", T * DIM), *w = fx_get(st, "weight", VOCAB * DIM);
    float *dlogp = fx_get(st, "dlogp", T);
    int32_t *tgt = fx_ints(st, "targets", T);
    float *logp[2], *lse[2], *dh[2], *dw[2];
    for (int t = 0; t < 2; t++) {
        ctx.n_threads = t == 0 ? 1 : 3;
        logp[t] = fx_alloc_poisoned(T), lse[t] = fx_alloc_poisoned(T), dh[t] = fx_alloc_poisoned(T * DIM);
        dw[t] = calloc(VOCAB * DIM, sizeof(float));
        cr_assert_eq(rl_lm_head_logprobs_fwd(&ctx, logp[t], lse[t], NULL, h, w, tgt, T, DIM, VOCAB, 1.3f), 0, "%s",
                     ctx.err.msg);
        cr_assert_eq(rl_lm_head_logprobs_bwd(&ctx, dh[t], dw[t], dlogp, NULL, h, w, tgt, lse[t], NULL, T, DIM, VOCAB, 1.3f), 0,
                     "%s", ctx.err.msg);
    }
    cr_expect(memcmp(logp[0], logp[1], T * sizeof(float)) == 0, "logp differs between 1 and 3 threads");
    cr_expect(memcmp(dw[0], dw[1], VOCAB * DIM * sizeof(float)) == 0, "dweight differs between 1 and 3 threads");
    fx_expect_close("dhidden, 3 threads vs 1", dh[1], dh[0], T * DIM, 1e-6, 0.1);
    for (int t = 0; t < 2; t++) free(logp[t]), free(lse[t]), free(dh[t]), free(dw[t]);
    free(h), free(w), free(dlogp), free(tgt);
    rl_safetensors_close(st);
}

Test(lm_head, target_outside_vocabulary)
{
    rl_ctx ctx = fx_cpu();
    float h[4] = {1, 2, 3, 4}, w[6] = {1, 2, 3, 4, 5, 6}, logp[2], lse[2];
    int32_t tgt[2] = {1, 3};
    fx_expect_refused(&ctx, rl_lm_head_logprobs_fwd(&ctx, logp, lse, NULL, h, w, tgt, 2, 2, 3, 1.0f),
                      "rl_lm_head_logprobs_fwd: targets[1] 3 is outside the vocabulary [0, 3)");
    float dh[4], dw[6] = {0}, dlogp[2] = {1, 1};
    fx_expect_refused(&ctx, rl_lm_head_logprobs_bwd(&ctx, dh, dw, dlogp, NULL, h, w, tgt, lse, NULL, 2, 2, 3, 1.0f),
                      "rl_lm_head_logprobs_bwd: targets[1] 3 is outside the vocabulary [0, 3)");
}
