/* lm_head.c — the output projection fused with log-softmax, chunked over the vocabulary.
 *
 * z[t, v] = inv_temperature * hidden[t] . weight[v] is never held for all tokens at once: a
 * block of TB tokens times a chunk of VC vocabulary rows is computed with the packed product
 * (gemm.c) into per-thread scratch and folded into an online log-sum-exp (Milakov & Gimelshein
 * 2018): running max m, s = sum exp(z - m), u = sum exp(z - m) z (for the entropy
 * H = lse - sum p z), rescaled by exp(m_old - m_new) when the max grows.
 *
 * Backward of sum_t dlogp[t] logp[t] + dentropy[t] entropy[t]: with log p = z - lse,
 * dz = dlogp (onehot(target) - p) - dentropy p (log p + H), recomputed chunk by chunk; dhidden = inv_T dz W and dweight += inv_T dz^T hidden. Threads own vocabulary
 * chunks, so the dweight rows they add to are theirs alone; each thread adds its dhidden
 * contributions into a private [n_tokens, dim] partial (static schedule: the same chunks go to
 * the same thread every run), and the partials are summed in thread order at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

enum { TB = 128, VC = 256 };

/* The targets are a tensor, which backend/ops.c does not read; the reference checks them here
 * before it indexes with them (negative ones mean "no target"). */
static int check_targets(rl_ctx *ctx, const int32_t *targets, int n_tokens, int vocab)
{
    for (int t = 0; t < n_tokens; t++)
        if (targets[t] >= vocab)
            return rl_err_set(&ctx->err, "targets[%d] %d is outside the vocabulary [0, %d)", t, targets[t], vocab);
    return 0;
}

/* z[tb, vc] = inv_t * hidden[t0 : t0+tb] weight[v0 : v0+vc]^T into a row-major [tb, vc] block. */
static void logits_block(float *z, const float *hidden, const float *weight, int t0, int tb, int v0,
                         int vc, int dim, float inv_t, float *scratch)
{
    cpu_gemm_args g = {.m = tb, .n = vc, .k = dim, .a = hidden + (size_t)t0 * dim, .a_rs = dim,
                       .a_cs = 1, .b = weight + (size_t)v0 * dim, .b_rs = 1, .b_cs = dim, .c = z,
                       .ldc = vc, .accumulate = 0};
    cpu_gemm_serial(&g, scratch);
    for (size_t i = 0; i < (size_t)tb * vc; i++) z[i] *= inv_t;
}

int rl_cpu_lm_head_logprobs_fwd(rl_ctx *ctx, float *logp, float *lse, float *entropy,
                                const void *hidden, const void *weight, const int32_t *targets,
                                int n_tokens, int dim, int vocab, float inv_temperature)
{
    if (n_tokens == 0) return 0;
    if (check_targets(ctx, targets, n_tokens, vocab)) return -1;

    int n_threads = cpu_threads(ctx, (double)n_tokens * vocab * dim / 32), n_blocks = (n_tokens + TB - 1) / TB;
    size_t per_thread = (size_t)TB * VC + cpu_gemm_scratch_floats();
    float *scratch = malloc((size_t)n_threads * per_thread * sizeof(float));
    if (!scratch) return rl_err_oom(&ctx->err, "scratch", (size_t)n_threads * per_thread * 4);
    const float *hs = hidden, *ws = weight;
#pragma omp parallel for num_threads(n_threads) schedule(dynamic, 1)
    for (int blk = 0; blk < n_blocks; blk++) {
        float *z = scratch + (size_t)omp_get_thread_num() * per_thread, *gs = z + (size_t)TB * VC;
        int t0 = blk * TB, tb = n_tokens - t0 < TB ? n_tokens - t0 : TB;
        float m[TB], tz[TB];
        double s[TB], u[TB];
        for (int r = 0; r < tb; r++) {
            m[r] = -INFINITY;
            s[r] = u[r] = 0;
            tz[r] = 0;
        }
        for (int v0 = 0; v0 < vocab; v0 += VC) {
            int vc = vocab - v0 < VC ? vocab - v0 : VC;
            logits_block(z, hs, ws, t0, tb, v0, vc, dim, inv_temperature, gs);
            for (int r = 0; r < tb; r++) {
                const float *zr = z + (size_t)r * vc;
                float mc = m[r];
                for (int j = 0; j < vc; j++) mc = zr[j] > mc ? zr[j] : mc;
                if (mc > m[r]) {
                    double f = m[r] == -INFINITY ? 0.0 : exp((double)m[r] - mc);
                    s[r] *= f;
                    u[r] *= f;
                    m[r] = mc;
                }
                double sr = 0, ur = 0;
                for (int j = 0; j < vc; j++) {
                    float e = expf(zr[j] - m[r]);
                    sr += e;
                    ur += (double)e * zr[j];
                }
                s[r] += sr;
                u[r] += ur;
                int tgt = targets[t0 + r];
                if (tgt >= v0 && tgt < v0 + vc) tz[r] = zr[tgt - v0];
            }
        }
        for (int r = 0; r < tb; r++) {
            int t = t0 + r;
            double l = m[r] + log(s[r]);
            lse[t] = (float)l;
            logp[t] = targets[t] < 0 ? 0.0f : (float)(tz[r] - l);
            if (entropy) entropy[t] = (float)(l - u[r] / s[r]);
        }
    }
    free(scratch);
    return 0;
}

int rl_cpu_lm_head_logprobs_bwd(rl_ctx *ctx, void *dhidden, float *dweight, const float *dlogp,
                                const float *dentropy, const void *hidden, const void *weight,
                                const int32_t *targets, const float *lse, const float *entropy, int n_tokens,
                                int dim, int vocab, float inv_temperature)
{
    if (n_tokens == 0) return 0;
    if (check_targets(ctx, targets, n_tokens, vocab)) return -1;

    int n_threads = cpu_threads(ctx, (double)n_tokens * vocab * dim / 32), n_chunks = (vocab + VC - 1) / VC;
    if (n_threads > n_chunks) n_threads = n_chunks;
    size_t partial = (size_t)n_tokens * dim;
    size_t per_thread = partial + (size_t)TB * VC + cpu_gemm_scratch_floats();
    float *scratch = calloc((size_t)n_threads * per_thread, sizeof(float));
    if (!scratch) return rl_err_oom(&ctx->err, "scratch", (size_t)n_threads * per_thread * 4);
    const float *hs = hidden, *ws = weight;
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (int c = 0; c < n_chunks; c++) {
        float *dh = scratch + (size_t)omp_get_thread_num() * per_thread;
        float *z = dh + partial, *gs = z + (size_t)TB * VC;
        int v0 = c * VC, vc = vocab - v0 < VC ? vocab - v0 : VC;
        for (int t0 = 0; t0 < n_tokens; t0 += TB) {
            int tb = n_tokens - t0 < TB ? n_tokens - t0 : TB;
            logits_block(z, hs, ws, t0, tb, v0, vc, dim, inv_temperature, gs);
            /* z becomes inv_T * dz in place. */
            for (int r = 0; r < tb; r++) {
                int t = t0 + r, tgt = targets[t];
                float g = targets[t] < 0 ? 0.0f : dlogp[t] * inv_temperature;
                float ge = targets[t] < 0 || !dentropy ? 0.0f : dentropy[t] * inv_temperature;
                float *zr = z + (size_t)r * vc;
                if (ge != 0.0f) {
                    float h = entropy[t];
                    for (int j = 0; j < vc; j++) {
                        float lp = zr[j] - lse[t], p = expf(lp);
                        zr[j] = -g * p - ge * p * (lp + h);
                    }
                } else {
                    for (int j = 0; j < vc; j++) zr[j] = -g * expf(zr[j] - lse[t]);
                }
                if (tgt >= v0 && tgt < v0 + vc) zr[tgt - v0] += g;
            }
            cpu_gemm_args gh = {.m = tb, .n = dim, .k = vc, .a = z, .a_rs = vc, .a_cs = 1,
                                .b = ws + (size_t)v0 * dim, .b_rs = dim, .b_cs = 1,
                                .c = dh + (size_t)t0 * dim, .ldc = dim, .accumulate = 1};
            cpu_gemm_serial(&gh, gs);
            cpu_gemm_args gw = {.m = vc, .n = dim, .k = tb, .a = z, .a_rs = 1, .a_cs = vc,
                                .b = hs + (size_t)t0 * dim, .b_rs = dim, .b_cs = 1,
                                .c = dweight + (size_t)v0 * dim, .ldc = dim, .accumulate = 1};
            cpu_gemm_serial(&gw, gs);
        }
    }
    float *dhs = dhidden;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)partial)) schedule(static)
    for (size_t i = 0; i < partial; i++) {
        float acc = 0;
        for (int th = 0; th < n_threads; th++) acc += scratch[(size_t)th * per_thread + i];
        dhs[i] = acc;
    }
    free(scratch);
    return 0;
}

int rl_cpu_lm_head_logits(rl_ctx *ctx, float *logits, const void *hidden, const void *weight,
                          int n_rows, int dim, int vocab)
{
    if (n_rows == 0) return 0;
    cpu_gemm_args g = {.m = n_rows, .n = vocab, .k = dim, .a = hidden, .a_rs = dim, .a_cs = 1,
                       .b = weight, .b_rs = 1, .b_cs = dim, .c = logits, .ldc = vocab,
                       .accumulate = 0};
    return cpu_gemm(&g, cpu_threads(ctx, (double)n_rows * vocab * dim / 32), &ctx->err);
}
