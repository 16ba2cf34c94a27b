/* gemm.c — the fp32 matrix product under matmul.c, attention.c and lm_head.c.
 *
 * Idea (Goto/BLIS blocking): C is cut into MC x NC tiles, one tile per loop iteration, so each
 * thread owns the C elements it writes (no races, and the result does not depend on the thread
 * count). For each KC-deep slice the tile's part of A is packed into MR-row slivers and B into
 * NR-column slivers, contiguous in p, zero-padded at the edges. The micro-kernel then keeps an
 * MR x NR block of C in registers and does rank-1 updates whose inner loop over NR columns is
 * a contiguous, vectorisable multiply-add (no reassociation needed, so -O3 vectorises it
 * without -ffast-math). Strided packing lets A and B be transposed views at no cost.
 * Assumes: row-major C; sizes fit int; A and B do not alias C. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"

enum { MR = 6, NR = 32, MC = 96, NC = 256, KC = 256 };

size_t cpu_gemm_scratch_floats(void) { return (size_t)MC * KC + (size_t)KC * NC; }

static int round_up(int x, int to) { return (x + to - 1) / to * to; }

/* Packing space a product of this shape needs: small products (decode) get small buffers. */
static size_t apack_floats(const cpu_gemm_args *g)
{
    return (size_t)round_up(g->m < MC ? g->m : MC, MR) * (size_t)(g->k < KC ? g->k : KC);
}

static size_t scratch_floats(const cpu_gemm_args *g)
{
    return apack_floats(g) + (size_t)(g->k < KC ? g->k : KC) * (size_t)round_up(g->n < NC ? g->n : NC, NR);
}

static void pack_a(const cpu_gemm_args *g, int i0, int mc, int p0, int kc, float *dst)
{
    for (int s = 0; s < mc; s += MR) {
        float *sliver = dst + (size_t)s * kc;
        if (g->a_rs == 1 && mc - s >= MR) {
            /* A is a transposed view: its MR rows are contiguous for each p */
            for (int p = 0; p < kc; p++) {
                const float *col = g->a + (ptrdiff_t)(p0 + p) * g->a_cs + i0 + s;
                for (int r = 0; r < MR; r++) sliver[p * MR + r] = col[r];
            }
            continue;
        }
        for (int r = 0; r < MR; r++) {
            if (s + r >= mc) {
                for (int p = 0; p < kc; p++) sliver[p * MR + r] = 0.0f;
                continue;
            }
            const float *row = g->a + (ptrdiff_t)(i0 + s + r) * g->a_rs + (ptrdiff_t)p0 * g->a_cs;
            for (int p = 0; p < kc; p++) sliver[p * MR + r] = row[p * g->a_cs];
        }
    }
}

static void pack_b(const cpu_gemm_args *g, int j0, int nc, int p0, int kc, float *dst)
{
    for (int t = 0; t < nc; t += NR) {
        float *sliver = dst + (size_t)t * kc;
        int width = nc - t < NR ? nc - t : NR;
        for (int p = 0; p < kc; p++) {
            const float *row = g->b + (ptrdiff_t)(p0 + p) * g->b_rs + (ptrdiff_t)(j0 + t) * g->b_cs;
            float *out = sliver + (size_t)p * NR;
            if (g->b_cs == 1) {
                memcpy(out, row, (size_t)width * sizeof *out);
            } else {
                for (int j = 0; j < width; j++) out[j] = row[j * g->b_cs];
            }
            for (int j = width; j < NR; j++) out[j] = 0.0f;
        }
    }
}

/* acc = a_sliver^T b_sliver over kc; then C[0:mr, 0:nr] = or += acc. */
static void micro_kernel(int kc, const float *restrict a, const float *restrict b, float *c,
                         ptrdiff_t ldc, int mr, int nr, int overwrite)
{
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int p = 0; p < kc; p++) {
        const float *bp = b + (size_t)p * NR;
        for (int r = 0; r < MR; r++) {
            float ar = a[p * MR + r];
#pragma omp simd
            for (int j = 0; j < NR; j++) acc[r][j] += ar * bp[j];
        }
    }
    for (int r = 0; r < mr; r++) {
        float *crow = c + r * ldc;
        if (overwrite) {
            for (int j = 0; j < nr; j++) crow[j] = acc[r][j];
        } else {
            for (int j = 0; j < nr; j++) crow[j] += acc[r][j];
        }
    }
}

static void gemm_tile(const cpu_gemm_args *g, int i0, int j0, float *scratch)
{
    int mc = g->m - i0 < MC ? g->m - i0 : MC;
    int nc = g->n - j0 < NC ? g->n - j0 : NC;
    float *apack = scratch, *bpack = scratch + apack_floats(g);
    if (g->k == 0 && !g->accumulate) {
        for (int i = 0; i < mc; i++) memset(g->c + (i0 + i) * g->ldc + j0, 0, (size_t)nc * sizeof(float));
        return;
    }
    for (int p0 = 0; p0 < g->k; p0 += KC) {
        int kc = g->k - p0 < KC ? g->k - p0 : KC;
        pack_a(g, i0, mc, p0, kc, apack);
        pack_b(g, j0, nc, p0, kc, bpack);
        int overwrite = p0 == 0 && !g->accumulate;
        for (int t = 0; t < nc; t += NR) {
            for (int s = 0; s < mc; s += MR) {
                micro_kernel(kc, apack + (size_t)s * kc, bpack + (size_t)t * kc,
                             g->c + (i0 + s) * g->ldc + j0 + t, g->ldc,
                             mc - s < MR ? mc - s : MR, nc - t < NR ? nc - t : NR, overwrite);
            }
        }
    }
}

void cpu_gemm_serial(const cpu_gemm_args *g, float *scratch)
{
    for (int i0 = 0; i0 < g->m; i0 += MC)
        for (int j0 = 0; j0 < g->n; j0 += NC) gemm_tile(g, i0, j0, scratch);
}

int cpu_gemm(const cpu_gemm_args *g, int n_threads, rl_err *err)
{
    int tiles_m = (g->m + MC - 1) / MC, tiles_n = (g->n + NC - 1) / NC;
    long n_tiles = (long)tiles_m * tiles_n;
    if (n_tiles == 0) return 0;
    if (n_threads > n_tiles) n_threads = (int)n_tiles;
    size_t bytes = (scratch_floats(g) ? scratch_floats(g) : 1) * sizeof(float);
    int failed = 0;
#pragma omp parallel num_threads(n_threads) reduction(|| : failed)
    {
        float *scratch = malloc(bytes);
        if (!scratch) failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (long t = 0; t < n_tiles; t++)
            if (scratch) gemm_tile(g, (int)(t / tiles_n) * MC, (int)(t % tiles_n) * NC, scratch);
        free(scratch);
    }
    if (failed) return rl_err_oom(err, "matrix product packing buffers", bytes);
    return 0;
}
