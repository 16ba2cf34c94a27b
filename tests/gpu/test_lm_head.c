/* test_lm_head.c — CUDA lm_head + log-softmax (logp, lse, entropy), its backward (dhidden,
 * fp32 dweight accumulation; also with the entropy term, dentropy) and full logits, against the CPU op. One shape has the real
 * Qwen3 vocabulary size and enough tokens to run several token chunks.
 * Tolerances: fp32 logp/lse 1e-4, entropy 1e-3, logits 1e-4 (fp32 outputs of a bf16-operand
 * product with fp32 accumulation); dhidden (bf16) and dweight (fp32) norm-relative 1e-2
 * (measured about 2.4e-3) and elementwise 2.5e-1 (measured up to 0.1): dz is rounded to bf16
 * before the two products, as torch's bf16 logits gradient is, and both sum terms that cancel
 * (softmax gradients sum to zero over the vocabulary). */
#include "gpu_util.h"

static void run(int n_tokens, int dim, int vocab, float inv_temp, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    size_t nh = (size_t)n_tokens * dim, nw = (size_t)vocab * dim;
    float *hidden = gu_rand(&g, nh, -1, 1, seed), *w = gu_rand(&g, nw, -0.5f, 0.5f, seed + 1);
    int32_t *tg = gu_host(&g, n_tokens * sizeof(int32_t));
    rl_rng rng;
    rl_rng_init(&rng, seed + 2);
    for (int t = 0; t < n_tokens; t++) tg[t] = t % 5 == 4 ? -1 : (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
    void *d_h = gu_up_bf16(&g, hidden, nh), *d_w = gu_up_bf16(&g, w, nw);
    int32_t *d_tg = gu_up_bytes(&g, tg, n_tokens * sizeof(int32_t));
    float *d_logp = gu_nan_f32(&g, n_tokens), *d_lse = gu_nan_f32(&g, n_tokens), *d_ent = gu_nan_f32(&g, n_tokens);
    GU_OK(&g, rl_lm_head_logprobs_fwd(&g.gpu, d_logp, d_lse, d_ent, d_h, d_w, d_tg, n_tokens, dim, vocab, inv_temp));
    float *logp = gu_host(&g, n_tokens * 4), *lse = gu_host(&g, n_tokens * 4), *ent = gu_host(&g, n_tokens * 4);
    GU_CPU_OK(&g, rl_cpu_lm_head_logprobs_fwd(&g.cpu, logp, lse, ent, hidden, w, tg, n_tokens, dim, vocab, inv_temp));
    char what[96];
    snprintf(what, sizeof what, "lm_head logp T%d D%d V%d (fp32)", n_tokens, dim, vocab);
    gu_check(what, gu_get_f32(&g, d_logp, n_tokens), logp, n_tokens, 1e-4);
    snprintf(what, sizeof what, "lm_head lse T%d D%d V%d (fp32)", n_tokens, dim, vocab);
    gu_check(what, gu_get_f32(&g, d_lse, n_tokens), lse, n_tokens, 1e-4);
    snprintf(what, sizeof what, "lm_head entropy T%d D%d V%d (fp32)", n_tokens, dim, vocab);
    gu_check(what, gu_get_f32(&g, d_ent, n_tokens), ent, n_tokens, 1e-3);

    float *dlogp = gu_rand(&g, n_tokens, -1, 1, seed + 3);
    float *dw = gu_rand(&g, nw, -0.01f, 0.01f, seed + 4);
    float *d_dw = gu_up_f32(&g, dw, nw);
    void *d_dh = gu_nan_bf16(&g, nh);
    GU_OK(&g, rl_lm_head_logprobs_bwd(&g.gpu, d_dh, d_dw, gu_up_f32(&g, dlogp, n_tokens), NULL, d_h, d_w, d_tg, d_lse,
                                      NULL, n_tokens, dim, vocab, inv_temp));
    float *dh = gu_host(&g, nh * 4);
    GU_CPU_OK(&g, rl_cpu_lm_head_logprobs_bwd(&g.cpu, dh, dw, dlogp, NULL, hidden, w, tg, lse, NULL, n_tokens, dim,
                                              vocab, inv_temp));
    snprintf(what, sizeof what, "lm_head_bwd dhidden T%d D%d V%d", n_tokens, dim, vocab);
    gu_check_norm(what, gu_get_bf16(&g, d_dh, nh), dh, nh, 1e-2, 2.5e-1);
    snprintf(what, sizeof what, "lm_head_bwd dweight T%d D%d V%d (fp32)", n_tokens, dim, vocab);
    gu_check_norm(what, gu_get_f32(&g, d_dw, nw), dw, nw, 1e-2, 2.5e-1);

    /* with the entropy bonus's gradient (dentropy of both signs, larger than dlogp): the same
     * tolerances; the CPU op is checked against finite differences (tests/backend) */
    float *dent = gu_rand(&g, n_tokens, -2, 2, seed + 5);
    float *dw2 = gu_rand(&g, nw, -0.01f, 0.01f, seed + 6);
    float *d_dw2 = gu_up_f32(&g, dw2, nw);
    void *d_dh2 = gu_nan_bf16(&g, nh);
    GU_OK(&g, rl_lm_head_logprobs_bwd(&g.gpu, d_dh2, d_dw2, gu_up_f32(&g, dlogp, n_tokens), gu_up_f32(&g, dent, n_tokens),
                                      d_h, d_w, d_tg, d_lse, d_ent, n_tokens, dim, vocab, inv_temp));
    float *dh2 = gu_host(&g, nh * 4);
    GU_CPU_OK(&g, rl_cpu_lm_head_logprobs_bwd(&g.cpu, dh2, dw2, dlogp, dent, hidden, w, tg, lse, ent, n_tokens, dim,
                                              vocab, inv_temp));
    snprintf(what, sizeof what, "lm_head_bwd+entropy dhidden T%d D%d V%d", n_tokens, dim, vocab);
    gu_check_norm(what, gu_get_bf16(&g, d_dh2, nh), dh2, nh, 1e-2, 2.5e-1);
    snprintf(what, sizeof what, "lm_head_bwd+entropy dweight T%d D%d V%d (fp32)", n_tokens, dim, vocab);
    gu_check_norm(what, gu_get_f32(&g, d_dw2, nw), dw2, nw, 1e-2, 2.5e-1);

    /* 1..8 rows: gemv.cu's fp32-out product; 9: cuBLASLt */
    static const int row_counts[] = {1, 3, 8, 9};
    for (size_t i = 0; i < sizeof row_counts / sizeof row_counts[0]; i++) {
        int rows = row_counts[i] < n_tokens ? row_counts[i] : n_tokens;
        float *d_logits = gu_nan_f32(&g, (size_t)rows * vocab);
        GU_OK(&g, rl_lm_head_logits(&g.gpu, d_logits, d_h, d_w, rows, dim, vocab));
        float *logits = gu_host(&g, (size_t)rows * vocab * 4);
        GU_CPU_OK(&g, rl_cpu_lm_head_logits(&g.cpu, logits, hidden, w, rows, dim, vocab));
        snprintf(what, sizeof what, "lm_head_logits R%d D%d V%d (fp32)", rows, dim, vocab);
        gu_check(what, gu_get_f32(&g, d_logits, (size_t)rows * vocab), logits, (size_t)rows * vocab, 1e-4);
    }
    gu_end(&g);
}

Test(gpu_lm_head, small) { run(37, 64, 1000, 1.0f, 91); }
Test(gpu_lm_head, temperature_odd) { run(300, 256, 5003, 1.0f / 0.7f, 92); }
Test(gpu_lm_head, qwen_vocab_chunks) { run(600, 64, 151936, 1.0f, 93); }
