/* bench_attention.c — rlc's CUDA attention forward and backward: time and TFLOP/s.
 *
 * usage: bench_attention BATCH SEQLEN [N_HEADS HEAD_DIM REPEATS]
 * Causal self-attention over BATCH sequences of SEQLEN tokens packed end to end (cu_seqlens),
 * n_heads = n_kv_heads (default 16 heads of 128), random bf16 inputs. Each op runs twice to warm
 * up, then REPEATS timed runs (default 10), each between two rl_sync calls on a monotonic host
 * clock (the context's stream is private, so host timing around a sync is what the public API
 * allows; the ops take milliseconds, far above the clock's resolution); the median is printed.
 * FLOPs as FlashAttention counts them: forward 4 * batch * heads * seqlen^2 * head_dim / 2
 * (causal), backward 2.5x the forward. Output lines, one per direction:
 *   "rlc fwd b=<B> s=<S> ms=<median> tflops=<rate>"  (and "rlc bwd ..."). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/ctx.h"
#include "backend/ops.h"
#include "core/rng.h"
#include "core/timer.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *random_bf16(rl_ctx *ctx, size_t n, uint64_t seed)
{
    float *h = malloc(n * sizeof *h);
    void *d = rl_alloc(ctx, n * 2);
    if (!h || !d) return NULL;
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (size_t i = 0; i < n; i++) h[i] = rl_rng_uniform(&rng) * 2 - 1;
    int rc = rl_upload_act(ctx, d, h, n);
    free(h);
    return rc ? NULL : d;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_attention BATCH SEQLEN [N_HEADS HEAD_DIM REPEATS]\n");
        return 2;
    }
    int batch = atoi(argv[1]), seqlen = atoi(argv[2]);
    int n_heads = argc > 3 ? atoi(argv[3]) : 16, head_dim = argc > 4 ? atoi(argv[4]) : 128;
    int repeats = argc > 5 ? atoi(argv[5]) : 10;
    if (batch < 1 || seqlen < 1 || n_heads < 1 || head_dim < 1 || repeats < 1 || repeats > 1000) {
        fprintf(stderr, "bench_attention: bad arguments\n");
        return 2;
    }
    rl_err err;
    rl_ctx ctx;
    if (rl_ctx_create(&ctx, RL_BACKEND_CUDA, 0, &err)) {
        fprintf(stderr, "bench_attention: %s\n", err.msg);
        return 1;
    }
    size_t n_tokens = (size_t)batch * seqlen, n = n_tokens * n_heads * head_dim;
    int32_t *cu = malloc((batch + 1) * sizeof *cu);
    for (int b = 0; b <= batch; b++) cu[b] = b * seqlen;
    int32_t *d_cu = rl_alloc(&ctx, (batch + 1) * sizeof *cu);
    void *q = random_bf16(&ctx, n, 1), *k = random_bf16(&ctx, n, 2), *v = random_bf16(&ctx, n, 3);
    void *dout = random_bf16(&ctx, n, 4);
    void *out = rl_alloc(&ctx, n * 2), *dq = rl_alloc(&ctx, n * 2), *dk = rl_alloc(&ctx, n * 2);
    void *dv = rl_alloc(&ctx, n * 2);
    float *lse = rl_alloc(&ctx, n_tokens * n_heads * sizeof(float));
    if (!d_cu || !q || !k || !v || !dout || !out || !dq || !dk || !dv || !lse ||
        rl_memcpy(&ctx, d_cu, cu, (batch + 1) * sizeof *cu, RL_H2D)) {
        fprintf(stderr, "bench_attention: setup: %s\n", ctx.err.msg);
        return 1;
    }
    float scale = 1.0f / sqrtf((float)head_dim);
    double fwd_flops = 4.0 * batch * n_heads * (double)seqlen * seqlen * head_dim / 2;
    double *ms = malloc(repeats * sizeof *ms);
    for (int dir = 0; dir < 2; dir++) {
        for (int it = -2; it < repeats; it++) {
            if (rl_sync(&ctx)) break;
            double t0 = rl_time_now();
            int rc = dir == 0 ? rl_attention_fwd(&ctx, out, lse, q, k, v, d_cu, d_cu, NULL, batch, seqlen, seqlen,
                                                 n_heads, n_heads, head_dim, scale, 1)
                              : rl_attention_bwd(&ctx, dq, dk, dv, dout, out, lse, q, k, v, d_cu, d_cu, batch, seqlen,
                                                 seqlen, n_heads, n_heads, head_dim, scale, 1);
            if (rc || rl_sync(&ctx)) {
                fprintf(stderr, "bench_attention: %s\n", ctx.err.msg);
                return 1;
            }
            if (it >= 0) ms[it] = (rl_time_now() - t0) * 1e3;
        }
        qsort(ms, repeats, sizeof *ms, cmp_double);
        double med = ms[repeats / 2], flops = dir == 0 ? fwd_flops : 2.5 * fwd_flops;
        printf("rlc %s b=%d s=%d ms=%.4f tflops=%.2f\n", dir == 0 ? "fwd" : "bwd", batch, seqlen, med,
               flops / (med * 1e-3) / 1e12);
    }
    free(ms);
    free(cu);
    rl_free(&ctx, q);
    rl_free(&ctx, k);
    rl_free(&ctx, v);
    rl_free(&ctx, dout);
    rl_free(&ctx, out);
    rl_free(&ctx, dq);
    rl_free(&ctx, dk);
    rl_free(&ctx, dv);
    rl_free(&ctx, lse);
    rl_free(&ctx, d_cu);
    rl_ctx_free(&ctx);
    return 0;
}
