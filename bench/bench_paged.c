/* bench_paged.c — the decode step's kernels alone on the CUDA backend, against the memory
 * floor: paged attention over Qwen3-0.6B's shapes (16 query heads, 8 kv heads, head_dim 128)
 * for decode batches of several sizes and context lengths (bytes = every cached key and value
 * of the layer read once by each row; "shared=P": runs of 8 rows whose first P keys are the
 * same blocks, as the samples of one prompt, passed as rl_paged_kv runs), a chunked prefill on
 * tensor cores (TFLOP/s),
 * the sampler over the Qwen3 vocabulary (bytes = the fp32 logits read once), and the four
 * projections of a layer at 16 to 256 rows (bytes = the weight read once; 8 copies of each
 * weight in turn, so that they come from memory, not from the L2), and a layer's four products
 * back to back with their folded RMSNorm / SwiGLU ("layer_products": one layer's time).
 *
 * usage: bench_paged [--block-size N] [--products]   (--products: only the projections)
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

typedef struct prod_case {
    void *out, *in, *w[8];
    int m, n, k, residual, next;
} prod_case;

static int run_prod(void *arg)
{
    prod_case *c = arg;
    void *w = c->w[c->next++ % 8];
    return c->residual ? rl_matmul_residual_fwd(&ctx, c->out, c->out, c->in, w, c->m, c->n, c->k)
                       : rl_matmul_fwd(&ctx, c->out, c->in, w, NULL, c->m, c->n, c->k, 0);
}

/* A layer's four products back to back, as the model's decode forward runs them (the fused
 * RMSNorm + q|k|v, o + residual, RMSNorm + gate|up, SwiGLU + down + residual; no attention
 * between), over 8 layers' weights in turn: what consecutive products cost, each one's weight
 * copy overlapping the kernel before it where the product does that. */
typedef struct layer_case {
    void *w[8][4], *norm, *x, *xn, *qkv, *attn, *gu, *act;
    float *rstd;
    int m, next;
} layer_case;

static int run_layer(void *arg)
{
    enum { HIDDEN = 1024, INTER = 3072, QKV = (H + 2 * KV) * HD };
    layer_case *c = arg;
    void **w = c->w[c->next++ % 8];
    int m = c->m;
    return rl_rmsnorm_matmul_fwd(&ctx, c->qkv, c->xn, c->rstd, c->x, c->norm, 1e-6f, w[0], NULL, m, QKV, HIDDEN) ||
           rl_matmul_residual_fwd(&ctx, c->x, c->x, c->attn, w[1], m, HIDDEN, H * HD) ||
           rl_rmsnorm_matmul_fwd(&ctx, c->gu, c->xn, c->rstd, c->x, c->norm, 1e-6f, w[2], NULL, m, 2 * INTER, HIDDEN) ||
           rl_swiglu_matmul_residual_fwd(&ctx, c->x, c->act, c->x, c->gu, (char *)c->gu + INTER * 2, 2 * INTER, w[3], m,
                                         HIDDEN, INTER);
}

static void bench_layer(void)
{
    enum { HIDDEN = 1024, INTER = 3072, QKV = (H + 2 * KV) * HD, MAXM = 256 };
    static const int rows[] = {16, 32, 64, 128, 256};
    const size_t wn[4][2] = {{QKV, HIDDEN}, {HIDDEN, H * HD}, {2 * INTER, HIDDEN}, {HIDDEN, INTER}};
    layer_case c = {0};
    for (int l = 0; l < 8; l++)
        for (int i = 0; i < 4; i++) {
            c.w[l][i] = dev(wn[i][0] * wn[i][1] * 2);
            fill_random(c.w[l][i], wn[i][0] * wn[i][1], 20 + i);
        }
    c.norm = dev(HIDDEN * 2);
    fill_random(c.norm, HIDDEN, 30);
    c.x = dev((size_t)MAXM * HIDDEN * 2), c.xn = dev((size_t)MAXM * HIDDEN * 2), c.qkv = dev((size_t)MAXM * QKV * 2);
    c.attn = dev((size_t)MAXM * H * HD * 2), c.gu = dev((size_t)MAXM * 2 * INTER * 2), c.act = dev((size_t)MAXM * INTER * 2);
    c.rstd = dev(MAXM * 4);
    fill_random(c.attn, (size_t)MAXM * H * HD, 31);
    double bytes = 0;
    for (int i = 0; i < 4; i++) bytes += (double)wn[i][0] * wn[i][1] * 2;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        c.m = rows[r];
        fill_random(c.x, (size_t)MAXM * HIDDEN, 32); /* the residual stream grows by the products: restart it */
        double us = median_us(run_layer, &c);
        printf("paged layer_products rows=%d us=%.1f gbps=%.0f\n", c.m, us, bytes / us / 1e3);
    }
    for (int l = 0; l < 8; l++)
        for (int i = 0; i < 4; i++) rl_free(&ctx, c.w[l][i]);
    void *bufs[] = {c.norm, c.x, c.xn, c.qkv, c.attn, c.gu, c.act, c.rstd};
    for (int i = 0; i < 8; i++) rl_free(&ctx, bufs[i]);
}

/* Qwen3-0.6B's q|k|v, o (+ residual), gate|up and down (+ residual) at decode batch sizes. */
static void bench_products(void)
{
    enum { HIDDEN = 1024, INTER = 3072 };
    static const struct { const char *name; int n, k, residual; } shapes[] = {
        {"qkv", (H + 2 * KV) * HD, HIDDEN, 0}, {"o", HIDDEN, H * HD, 1}, {"gate_up", 2 * INTER, HIDDEN, 0},
        {"down", HIDDEN, INTER, 1}};
    static const int rows[] = {16, 32, 64, 128, 256};
    void *in = dev((size_t)256 * INTER * 2), *out = dev((size_t)256 * 2 * INTER * 2);
    fill_random(in, (size_t)256 * INTER, 4);
    fill_random(out, (size_t)256 * 2 * INTER, 5);
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        prod_case c = {.out = out, .in = in, .n = shapes[sh].n, .k = shapes[sh].k, .residual = shapes[sh].residual};
        for (int i = 0; i < 8; i++) {
            c.w[i] = dev((size_t)c.n * c.k * 2);
            if (i == 0) fill_random(c.w[0], (size_t)c.n * c.k, 10);
            else if (rl_memcpy(&ctx, c.w[i], c.w[0], (size_t)c.n * c.k * 2, RL_D2D)) die("copy");
        }
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            c.m = rows[r];
            double us = median_us(run_prod, &c);
            printf("paged product %s rows=%d n=%d k=%d us=%.1f gbps=%.0f\n", shapes[sh].name, c.m, c.n, c.k, us,
                   (double)c.n * c.k * 2 / us / 1e3);
        }
        for (int i = 0; i < 8; i++) rl_free(&ctx, c.w[i]);
    }
    rl_free(&ctx, in);
    rl_free(&ctx, out);
}

int main(int argc, char **argv)
{
    int bs = 16, products = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--block-size") && i + 1 < argc) bs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--products")) products = 1;
        else {
            fprintf(stderr, "usage: bench_paged [--block-size N] [--products]\n");
            return 2;
        }
    }
    rl_err err;
    if (rl_ctx_create(&ctx, RL_BACKEND_CUDA, 0, &err)) {
        fprintf(stderr, "bench_paged: %s\n", err.msg);
        return 1;
    }
    if (products) {
        bench_products();
        bench_layer();
        rl_ctx_free(&ctx);
        return 0;
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

    static const int cases[][4] = {/* batch, context, queries, shared keys (runs of 8) */
                                   {1, 512, 1, 0},   {1, 4096, 1, 0},  {1, 32768, 1, 0}, {16, 1024, 1, 0},
                                   {64, 512, 1, 0},  {64, 2048, 1, 0}, {256, 256, 1, 0}, {256, 1024, 1, 0},
                                   {64, 258, 1, 0},  {64, 258, 1, 128}, {64, 386, 1, 0},  {64, 386, 1, 128},
                                   {16, 258, 1, 0},  {32, 258, 1, 0},   {64, 130, 1, 0},  {64, 130, 1, 128},
                                   {64, 1100, 1, 1024}, {64, 1100, 1, 0},
                                   {1, 2048, 2048, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int B = cases[k][0], L = cases[k][1], Q = cases[k][2], P = cases[k][3];
        int mb = (L + bs - 1) / bs;
        if ((size_t)B * mb > n_blocks) continue;
        int32_t *tables = malloc((size_t)B * mb * 4), *cu = malloc((B + 1) * 4), *lens = malloc(B * 4);
        int32_t *share = malloc((size_t)3 * B * 4); /* lead, len, count */
        for (int s = 0, next = 0; s < B; s++) {
            int lead = P ? s - s % 8 : s;
            for (int i = 0; i < mb; i++)
                tables[s * mb + i] = s != lead && i < P / bs ? tables[lead * mb + i] : perm[next++];
            cu[s] = s * Q;
            lens[s] = L;
            share[s] = lead;
            share[B + s] = P;
            share[2 * B + s] = P && s == lead ? 8 : 0;
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
        int32_t *d_share = dev((size_t)3 * B * 4);
        if (P) {
            if (rl_memcpy(&ctx, d_share, share, (size_t)3 * B * 4, RL_H2D)) die("upload");
            c.kv.share_lead = d_share, c.kv.share_len = d_share + B, c.kv.share_count = d_share + 2 * B;
            c.kv.max_share = 8;
        }
        double us = median_us(run_attn, &c);
        if (Q == 1) {
            double bytes = (double)B * L * row * 2 * 2;
            printf("paged decode batch=%d context=%d shared=%d block=%d us=%.1f gbps=%.0f\n", B, L, P, bs, us,
                   bytes / us / 1e3);
        } else {
            double flops = 4.0 * B * H * HD * ((double)Q * L - (double)Q * (Q - 1) / 2);
            printf("paged prefill batch=%d queries=%d context=%d block=%d us=%.1f tflops=%.1f\n", B, Q, L, bs, us,
                   flops / us / 1e6);
        }
        rl_free(&ctx, d_tables);
        rl_free(&ctx, d_share);
        rl_free(&ctx, c.cu_q);
        rl_free(&ctx, c.seqlens);
        free(tables), free(cu), free(lens), free(share);
    }
    rl_free(&ctx, pool);
    bench_products();

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
