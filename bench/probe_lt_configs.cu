/* probe_lt_configs.cu — can any cuBLASLt configuration beat the heuristic's choice for
 * Qwen3-0.6B's four decode products at M rows (bf16, fp32 accumulation, split-K partials in
 * fp32, as src/backend/cuda/matmul.cu asks)? Standalone (cuBLASLt and the runtime only), so it
 * can be re-run after a cuBLAS update. For each product: the heuristic's first 8 algorithms as
 * returned, then each with split-K in {1,2,3,4,6,8} x CTA swizzle {0,1}, then every
 * (algorithm id, tile, stages, split-K) cublasLtMatmulAlgoCheck accepts; each timed over 28
 * weight copies in turn (so the weight comes from memory, as in a decode step), the median of
 * rounds of 28 launches. Prints the heuristic's lines and the 8 fastest of the rest, with each
 * one's largest difference from the heuristic's output relative to its largest value.
 *
 * usage: probe_lt_configs [M]   (default 64: the GRPO step's decode batch; docs/benchmarks.md) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_stats.h"
#include "probe_cuda.cuh"

enum { COPIES = 28, MAX_FOUND = 4096 };

static cublasLtHandle_t lt;
static void *ws;
static size_t ws_bytes = (size_t)64 << 20; /* matmul.cu's workspace */

typedef struct problem {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, ld;
    bf *w[COPIES], *x, *c, *d, *ref;
    int n, k, m, residual;
} problem;

typedef struct found { cublasLtMatmulAlgo_t algo; float us; double err; char what[96]; } found;

static int launch(problem *p, const cublasLtMatmulAlgo_t *algo, int copy)
{
    float alpha = 1, beta = p->residual ? 1.0f : 0.0f;
    return cublasLtMatmul(lt, p->desc, &alpha, p->w[copy % COPIES], p->la, p->x, p->lb, &beta, p->residual ? p->c : p->d,
                          p->ld, p->d, p->ld, algo, ws, ws_bytes, 0) != CUBLAS_STATUS_SUCCESS;
}

/* Median microseconds of one launch over `rounds` rounds of COPIES launches (after one round). */
static float time_us(problem *p, const cublasLtMatmulAlgo_t *algo, int rounds)
{
    double t[16];
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int r = 0; r <= rounds; r++) {
        CK(cudaEventRecord(a));
        for (int i = 0; i < COPIES; i++)
            if (launch(p, algo, i)) return -1;
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r) t[r - 1] = ms * 1000.0 / COPIES;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return (float)bench_median(t, rounds);
}

/* max |d - ref| / max |ref| after one launch on copy 0. */
static double error_vs_ref(problem *p, const cublasLtMatmulAlgo_t *algo)
{
    size_t n = (size_t)p->n * p->m;
    CK(cudaMemset(p->d, 0, n * sizeof(bf)));
    if (launch(p, algo, 0)) return -1;
    CK(cudaDeviceSynchronize());
    bf *h = (bf *)malloc(2 * n * sizeof(bf));
    CK(cudaMemcpy(h, p->d, n * sizeof(bf), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h + n, p->ref, n * sizeof(bf), cudaMemcpyDeviceToHost));
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double x = __bfloat162float(h[i]), r = __bfloat162float(h[n + i]);
        e = fmax(e, fabs(x - r)), s = fmax(s, fabs(r));
    }
    free(h);
    return e / (s > 0 ? s : 1);
}

static int cmp_found(const void *a, const void *b)
{
    float x = ((const found *)a)->us, y = ((const found *)b)->us;
    return (x > y) - (x < y);
}

static void set(cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t attr, int v)
{
    cublasLtMatmulAlgoConfigSetAttribute(a, attr, &v, sizeof v);
}

static int get(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t attr)
{
    int v = 0;
    size_t sz;
    cublasLtMatmulAlgoConfigGetAttribute(a, attr, &v, sizeof v, &sz);
    return v;
}

static void set_split(cublasLtMatmulAlgo_t *a, int split)
{
    set(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split);
    set(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
        split > 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE : CUBLASLT_REDUCTION_SCHEME_NONE);
}

/* Times algo if cuBLASLt accepts it; appends it to out. */
static void try_one(problem *p, cublasLtMatmulAlgo_t algo, const char *what, found *out, int *n_out)
{
    cublasLtMatmulHeuristicResult_t chk;
    if (*n_out == MAX_FOUND || cublasLtMatmulAlgoCheck(lt, p->desc, p->la, p->lb, p->ld, p->ld, &algo, &chk) ||
        chk.workspaceSize > ws_bytes)
        return;
    double err = error_vs_ref(p, &algo);
    float us = err < 0 ? -1 : time_us(p, &algo, 3);
    if (us < 0) return;
    found *f = &out[(*n_out)++];
    f->algo = algo, f->us = us, f->err = err;
    snprintf(f->what, sizeof f->what, "%s", what);
}

static void probe(const char *name, int n, int k, int m, int residual, found *all)
{
    problem p = {0};
    p.n = n, p.k = k, p.m = m, p.residual = residual;
    for (int i = 0; i < COPIES; i++) {
        CK(cudaMalloc(&p.w[i], (size_t)n * k * sizeof(bf)));
        fill<<<512, 256>>>(p.w[i], (size_t)n * k, 17, 0.05f);
    }
    CK(cudaMalloc(&p.x, (size_t)k * m * sizeof(bf)));
    CK(cudaMalloc(&p.c, (size_t)n * m * sizeof(bf)));
    CK(cudaMalloc(&p.d, (size_t)n * m * sizeof(bf)));
    CK(cudaMalloc(&p.ref, (size_t)n * m * sizeof(bf)));
    fill<<<64, 256>>>(p.x, (size_t)k * m, 3, 0.05f);
    fill<<<64, 256>>>(p.c, (size_t)n * m, 5, 0.05f);
    /* out[m, n] = in[m, k] W[n, k]^T as matmul.cu lays it out: column-major D[n x m]. */
    LK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    LK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
    LK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
    LK(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16BF, k, n, k));
    LK(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16BF, k, m, k));
    LK(cublasLtMatrixLayoutCreate(&p.ld, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red));
    cublasLtMatmulHeuristicResult_t hr[8];
    int nh = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.la, p.lb, p.ld, p.ld, pref, 8, hr, &nh));
    cublasLtMatmulPreferenceDestroy(pref);
    if (nh == 0) { printf("%s m=%d: no heuristic result\n", name, m); exit(1); }
    float alpha = 1, beta = residual ? 1.0f : 0.0f;
    LK(cublasLtMatmul(lt, p.desc, &alpha, p.w[0], p.la, p.x, p.lb, &beta, residual ? p.c : p.ref, p.ld, p.ref, p.ld,
                      &hr[0].algo, ws, ws_bytes, 0));
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < nh; i++)
        printf("%s m=%d heuristic[%d]: algo %d tile %d stages %d split %d, waves %.2f: %.2f us\n", name, m, i,
               get(&hr[i].algo, CUBLASLT_ALGO_CONFIG_ID), get(&hr[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
               get(&hr[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID), get(&hr[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
               hr[i].wavesCount, time_us(&p, &hr[i].algo, 7));
    static const int splits[] = {1, 2, 3, 4, 6, 8};
    int n_all = 0;
    char what[96];
    for (int i = 0; i < nh; i++)
        for (int s = 0; s < 6; s++)
            for (int swz = 0; swz < 2; swz++) {
                cublasLtMatmulAlgo_t a = hr[i].algo;
                set_split(&a, splits[s]);
                set(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swz);
                snprintf(what, sizeof what, "heuristic[%d] split %d swizzle %d", i, splits[s], swz);
                try_one(&p, a, what, all, &n_all);
            }
    int ids[128], n_ids = 0;
    LK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                128, ids, &n_ids));
    for (int a = 0; a < n_ids; a++) {
        cublasLtMatmulAlgo_t algo;
        if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                   ids[a], &algo))
            continue;
        int tiles[128] = {0}, stages[128] = {0}, nt = 0, ns = 0, splitk = 0;
        size_t sz = 0;
        if (!cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, sizeof tiles, &sz)) nt = (int)(sz / 4);
        if (!cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages, sizeof stages, &sz)) ns = (int)(sz / 4);
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk, sizeof splitk, &sz);
        for (int t = 0; t < (nt ? nt : 1); t++)
            for (int s = 0; s < (ns ? ns : 1); s++)
                for (int q = 0; q < (splitk ? 6 : 1); q++) {
                    cublasLtMatmulAlgo_t c = algo;
                    set(&c, CUBLASLT_ALGO_CONFIG_TILE_ID, tiles[t]);
                    set(&c, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages[s]);
                    set_split(&c, splits[q]);
                    snprintf(what, sizeof what, "algo %d tile %d stages %d split %d", ids[a], tiles[t], stages[s], splits[q]);
                    try_one(&p, c, what, all, &n_all);
                }
    }
    qsort(all, (size_t)n_all, sizeof *all, cmp_found);
    printf("%s m=%d: %d configurations ran; the fastest (retimed):\n", name, m, n_all);
    for (int i = 0; i < n_all && i < 8; i++)
        printf("  %-44s %.2f us (retimed %.2f), relative difference %.1e\n", all[i].what, all[i].us,
               time_us(&p, &all[i].algo, 9), all[i].err);
    for (int i = 0; i < COPIES; i++) cudaFree(p.w[i]);
    cudaFree(p.x), cudaFree(p.c), cudaFree(p.d), cudaFree(p.ref);
    cublasLtMatrixLayoutDestroy(p.la), cublasLtMatrixLayoutDestroy(p.lb), cublasLtMatrixLayoutDestroy(p.ld);
    cublasLtMatmulDescDestroy(p.desc);
}

int main(int argc, char **argv)
{
    int m = argc > 1 ? atoi(argv[1]) : 64;
    if (m < 1 || m > 4096) { fprintf(stderr, "usage: probe_lt_configs [M in 1..4096]\n"); return 2; }
    LK(cublasLtCreate(&lt));
    CK(cudaMalloc(&ws, ws_bytes));
    found *all = (found *)malloc(MAX_FOUND * sizeof *all);
    if (!all) return 1;
    probe("qkv", 4096, 1024, m, 0, all);
    probe("o", 1024, 2048, m, 1, all);
    probe("gate_up", 6144, 1024, m, 0, all);
    probe("down", 1024, 3072, m, 1, all);
    free(all);
    return 0;
}
