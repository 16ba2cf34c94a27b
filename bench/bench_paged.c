/* bench_paged.c — the decode step's kernels alone on the CUDA backend, against the memory
 * floor: paged attention over Qwen3-0.6B's shapes (16 query heads, 8 kv heads, head_dim 128)
 * for decode batches of several sizes and context lengths (bytes = every cached key and value
 * of the layer read once), a chunked prefill on tensor cores (TFLOP/s), and the sampler over
 * the Qwen3 vocabulary (bytes = the fp32 logits read once).
 *
 * usage: bench_paged [--block-size N]
 * Each line: "paged <what> ... us=<median microseconds> gbps=<GB/s>|tflops=<TFLOP/s>".
 * The pool is 2 GiB of random bf16 (above the L2), block tables are shuffled, and each case
 * runs 5 warm-up launches, then 15 rounds of 20 launches queued back to back and timed on the
 * host around rl_sync; the median round over 20 is the time of one launch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "backend/ctx.h"
#include "backend/ops.h"
#include "core/rng.h"
#include "core/timer.h"

enum { H = 16, KV = 8, HD = 128, ROUNDS = 15, PER_ROUND = 20 };

static rl_ctx ctx;

static void die(const char *what)
{
    fprintf(stderr, "bench_paged: %s: %s\n", what, ctx.err.msg);
    exit(1);
}

static void *dev(size_t bytes)
{
    void *p = rl_alloc(&ctx, bytes);
    if (!p) die("alloc");
    return p;
}

/* Uploads random bf16-ish values (any bit pattern of finite small floats) in 64 MiB pieces. */
static void fill_random(void *d, size_t n_elems, uint64_t seed)
{
    size_t piece = (size_t)32 << 20;
    float *h = malloc(piece * sizeof(float));
    rl_rng rng;
    rl_rng_init(&rng, seed);
    for (size_t i = 0; i < piece; i++) h[i] = (float)rl_rng_below(&rng, 2001) / 1000.0f - 1.0f;
    for (size_t at = 0; at < n_elems; at += piece) {
        size_t m = n_elems - at < piece ? n_elems - at : piece;
        if (rl_upload_act(&ctx, (char *)d + at * 2, h, m)) die("upload");
    }
    free(h);
}

typedef int (*launch_fn)(void *);

static double median_us(launch_fn f, void *arg)
{
    double t[ROUNDS];
    for (int i = 0; i < 5; i++)
        if (f(arg)) die("launch");
    if (rl_sync(&ctx)) die("sync");
    for (int i = 0; i < ROUNDS; i++) {
        double t0 = rl_time_now();
        for (int j = 0; j < PER_ROUND; j++)
            if (f(arg)) die("launch");
        if (rl_sync(&ctx)) die("sync");
        t[i] = (rl_time_now() - t0) * 1e6 / PER_ROUND;
    }
    qsort(t, ROUNDS, sizeof t[0], bench_cmp_double);
    return t[ROUNDS / 2];
}

typedef struct attn_case {
    void *out, *q;
    rl_paged_kv kv;
    int32_t *cu_q, *seqlens;
    int n_seqs, max_q, max_k;
} attn_case;

static int run_attn(void *arg)
{
    attn_case *c = arg;
    return rl_paged_attention_fwd(&ctx, c->out, c->q, &c->kv, c->cu_q, c->seqlens, c->n_seqs, c->max_q, c->max_k, H, KV,
                                  HD, 1.0f / sqrtf((float)HD));
}

typedef struct sample_case {
    int32_t *tok;
    float *logp, *logits;
    rl_sample_row *rows;
    int n;
} sample_case;

static int run_sample(void *arg)
{
    sample_case *c = arg;
    return rl_sample(&ctx, c->tok, c->logp, c->logits, c->n, 151936, c->rows);
}

int main(int argc, char **argv)
{
    int bs = 16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--block-size") && i + 1 < argc) bs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_paged [--block-size N]\n");
            return 2;
        }
    }
    rl_err err;
    if (rl_ctx_create(&ctx, RL_BACKEND_CUDA, 0, &err)) {
        fprintf(stderr, "bench_paged: %s\n", err.msg);
        return 1;
    }
    size_t row = (size_t)KV * HD, plane = (size_t)bs * row, block_elems = 2 * plane; /* one layer */
    size_t pool_elems = ((size_t)2 << 30) / 2, n_blocks = pool_elems / block_elems;
    void *pool = dev(pool_elems * 2);
    fill_random(pool, pool_elems, 1);
    int max_total_q = 4096;
    void *q = dev((size_t)max_total_q * H * HD * 2), *out = dev((size_t)max_total_q * H * HD * 2);
    fill_random(q, (size_t)max_total_q * H * HD, 2);
    int32_t *perm = malloc(n_blocks * sizeof(int32_t));
    rl_rng rng;
    rl_rng_init(&rng, 3);
    for (size_t b = 0; b < n_blocks; b++) perm[b] = (int32_t)b;
    for (size_t b = n_blocks - 1; b > 0; b--) {
        size_t j = rl_rng_below(&rng, (uint32_t)b + 1);
        int32_t t = perm[b];
        perm[b] = perm[j], perm[j] = t;
    }

    static const int cases[][3] = {/* batch, context, queries */
                                   {1, 512, 1},   {1, 4096, 1},   {1, 32768, 1}, {16, 1024, 1}, {64, 512, 1},
                                   {64, 2048, 1}, {256, 256, 1},  {256, 1024, 1}, {1, 2048, 2048}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int B = cases[k][0], L = cases[k][1], Q = cases[k][2];
        int mb = (L + bs - 1) / bs;
        if ((size_t)B * mb > n_blocks) continue;
        int32_t *tables = malloc((size_t)B * mb * 4), *cu = malloc((B + 1) * 4), *lens = malloc(B * 4);
        for (int s = 0, next = 0; s < B; s++) {
            for (int i = 0; i < mb; i++) tables[s * mb + i] = perm[next++];
            cu[s] = s * Q;
            lens[s] = L;
        }
        cu[B] = B * Q;
        attn_case c = {.out = out, .q = q, .n_seqs = B, .max_q = Q, .max_k = Q > 1 ? L : 32768};
        c.kv = (rl_paged_kv){.k = pool, .v = (char *)pool + plane * 2, .block_stride = block_elems, .block_size = bs,
                             .max_blocks = mb};
        int32_t *d_tables = dev((size_t)B * mb * 4);
        c.cu_q = dev((B + 1) * 4);
        c.seqlens = dev(B * 4);
        if (rl_memcpy(&ctx, d_tables, tables, (size_t)B * mb * 4, RL_H2D) ||
            rl_memcpy(&ctx, c.cu_q, cu, (B + 1) * 4, RL_H2D) || rl_memcpy(&ctx, c.seqlens, lens, B * 4, RL_H2D))
            die("upload");
        c.kv.block_tables = d_tables;
        double us = median_us(run_attn, &c);
        if (Q == 1) {
            double bytes = (double)B * L * row * 2 * 2;
            printf("paged decode batch=%d context=%d block=%d us=%.1f gbps=%.0f\n", B, L, bs, us, bytes / us / 1e3);
        } else {
            double flops = 4.0 * B * H * HD * ((double)Q * L - (double)Q * (Q - 1) / 2);
            printf("paged prefill batch=%d queries=%d context=%d block=%d us=%.1f tflops=%.1f\n", B, Q, L, bs, us,
                   flops / us / 1e6);
        }
        rl_free(&ctx, d_tables);
        rl_free(&ctx, c.cu_q);
        rl_free(&ctx, c.seqlens);
        free(tables), free(cu), free(lens);
    }
    rl_free(&ctx, pool);

    int rows_n[] = {1, 64, 256};
    size_t vocab = 151936;
    float *logits = dev((size_t)256 * vocab * 4);
    float *h = malloc((size_t)256 * vocab * 4);
    for (size_t i = 0; i < (size_t)256 * vocab; i++) h[i] = (float)rl_rng_below(&rng, 20001) / 1000.0f - 10.0f;
    if (rl_memcpy(&ctx, logits, h, (size_t)256 * vocab * 4, RL_H2D)) die("upload");
    free(h);
    const char *kinds[] = {"greedy", "temperature", "top_p"};
    for (int kind = 0; kind < 3; kind++)
        for (size_t k = 0; k < sizeof rows_n / sizeof rows_n[0]; k++) {
            int n = rows_n[k];
            rl_sample_row hr[256];
            for (int r = 0; r < n; r++)
                hr[r] = (rl_sample_row){.temperature = kind ? 1.0f : 0.0f, .top_p = kind == 2 ? 0.9f : 1.0f,
                                        .seed = 1, .row = (uint32_t)r};
            sample_case c = {.tok = dev(256 * 4), .logp = dev(256 * 4), .logits = logits, .rows = dev(sizeof hr), .n = n};
            if (rl_memcpy(&ctx, c.rows, hr, n * sizeof hr[0], RL_H2D)) die("upload");
            double us = median_us(run_sample, &c);
            printf("paged sample kind=%s rows=%d us=%.1f gbps=%.0f\n", kinds[kind], n, us,
                   (double)n * vocab * 4 / us / 1e3);
            rl_free(&ctx, c.tok);
            rl_free(&ctx, c.logp);
            rl_free(&ctx, c.rows);
        }
    rl_free(&ctx, logits);
    rl_ctx_free(&ctx);
    return 0;
}
