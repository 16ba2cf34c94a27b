/* probe_lt_pdl.cu — do cuBLASLt's kernels wait at a programmatic (PDL) graph edge, and what
 * would a decode layer's chain gain if the edges into its products were programmatic?
 * Standalone (cuBLASLt and the runtime only), so it can be re-run after a cuBLAS update: if the
 * first part ever prints "waits" for every product, rlc's decode graphs could make the edges
 * into cuBLASLt's kernels programmatic (docs/benchmarks.md, "Five ways around ...").
 *
 * 1. A graph [predecessor, product]: the predecessor lets its dependents start at once, then
 *    spins 200 us and writes the product's input (ones). With a plain edge the product reads
 *    ones; with the edge made programmatic after capture (cudaGraphAddDependencies with
 *    cudaGraphDependencyTypeProgrammatic) a product that does not wait reads the zeros before.
 * 2. 28 layers of [copy, qkv, copy, o + residual, copy, gate_up, copy, down + residual] at 64 rows
 *    (the copies launched as rlc's small kernels: programmatic launch, wait, then trigger), timed
 *    over 55 graph replays (median), each replay's output compared with the plain graph's:
 *    plain edges (rlc now); programmatic edges into the products with the copies triggering at
 *    their start (the products may read before their input exists: the bound on what a product
 *    that waits could gain); and with the copies triggering after their writes, with and without
 *    a device-scope fence.
 * usage: probe_lt_pdl */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "probe_cuda.cuh"

enum { M = 64, L = 28, HID = 1024, QKV = 4096, ATT = 2048, INTER = 3072, REPLAYS = 60, WARM = 5 };

static cublasLtHandle_t lt;
static void *ws;
static size_t ws_bytes = (size_t)64 << 20;
static cudaStream_t st;

__global__ void late_ones(bf *p, size_t n, unsigned us)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < us * 1000ull);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(1.0f);
}

/* y = x; TRIGGER 0: wait, trigger, copy (rlc's small kernels); 1: wait, copy, fence, trigger;
 * 2: wait, copy, trigger. */
template <int TRIGGER>
__global__ void copy(bf *y, const bf *x, size_t n)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (TRIGGER == 0) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) y[i] = x[i];
    if (TRIGGER == 1) __threadfence();
    if (TRIGGER != 0) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

typedef void (*copy_fn)(bf *, const bf *, size_t);

static void launch_copy(copy_fn k, bf *y, const bf *x, size_t n)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(32), cfg.blockDim = dim3(256), cfg.stream = st, cfg.attrs = &attr, cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, k, y, x, n));
}

typedef struct gemm { cublasLtMatmulDesc_t desc; cublasLtMatrixLayout_t la, lb, ld; cublasLtMatmulAlgo_t algo; } gemm;

/* out[m, n] = in[m, k] W[n, k]^T (+ c) as matmul.cu runs it: the heuristic's first algorithm. */
static void gemm_init(gemm *g, int n, int k)
{
    LK(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    LK(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
    LK(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
    LK(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, k, n, k));
    LK(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, k, M, k));
    LK(cublasLtMatrixLayoutCreate(&g->ld, CUDA_R_16BF, n, M, n));
    cublasLtMatmulPreference_t pref;
    LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red));
    cublasLtMatmulHeuristicResult_t hr;
    int nh = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(lt, g->desc, g->la, g->lb, g->ld, g->ld, pref, 1, &hr, &nh));
    cublasLtMatmulPreferenceDestroy(pref);
    if (nh == 0) { fprintf(stderr, "no cuBLASLt algorithm for %d x %d x %d\n", n, M, k); exit(1); }
    g->algo = hr.algo;
}

static void gemm_run(gemm *g, bf *d, const bf *w, const bf *x, const bf *c)
{
    float alpha = 1, beta = c ? 1.0f : 0.0f;
    LK(cublasLtMatmul(lt, g->desc, &alpha, w, g->la, x, g->lb, &beta, c ? c : d, g->ld, d, g->ld, &g->algo, ws, ws_bytes,
                      st));
}

/* Every plain edge between two kernel nodes of g becomes programmatic. */
static int make_programmatic(cudaGraph_t g)
{
    size_t ne = 0;
    CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &ne));
    cudaGraphNode_t *from = (cudaGraphNode_t *)malloc(ne * sizeof *from), *to = (cudaGraphNode_t *)malloc(ne * sizeof *to);
    cudaGraphEdgeData *ed = (cudaGraphEdgeData *)malloc(ne * sizeof *ed);
    CK(cudaGraphGetEdges(g, from, to, ed, &ne));
    int changed = 0;
    for (size_t i = 0; i < ne; i++) {
        cudaGraphNodeType a, b;
        CK(cudaGraphNodeGetType(from[i], &a));
        CK(cudaGraphNodeGetType(to[i], &b));
        if (a != cudaGraphNodeTypeKernel || b != cudaGraphNodeTypeKernel || ed[i].type != cudaGraphDependencyTypeDefault)
            continue;
        cudaGraphEdgeData pe = {};
        pe.type = cudaGraphDependencyTypeProgrammatic;
        pe.from_port = cudaGraphKernelNodePortProgrammatic;
        CK(cudaGraphRemoveDependencies(g, &from[i], &to[i], &ed[i], 1));
        CK(cudaGraphAddDependencies(g, &from[i], &to[i], &pe, 1));
        changed++;
    }
    free(from), free(to), free(ed);
    return changed;
}

/* max over rows i of |D[:, i] - sum_j W[i, j]|: D should be W 1 in every column. */
static double error_vs_ones(const bf *d, const bf *w, int n, int k)
{
    bf *hd = (bf *)malloc((size_t)n * M * sizeof(bf)), *hw = (bf *)malloc((size_t)n * k * sizeof(bf));
    CK(cudaMemcpy(hd, d, (size_t)n * M * sizeof(bf), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hw, w, (size_t)n * k * sizeof(bf), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < k; j++) s += __bfloat162float(hw[(size_t)i * k + j]);
        for (int c = 0; c < M; c++) worst = fmax(worst, fabs(__bfloat162float(hd[(size_t)c * n + i]) - s));
    }
    free(hd), free(hw);
    return worst;
}

static void waits_at_edge(const char *name, int n, int k)
{
    gemm g;
    gemm_init(&g, n, k);
    bf *w, *x, *d;
    CK(cudaMalloc(&w, (size_t)n * k * sizeof(bf)));
    CK(cudaMalloc(&x, (size_t)k * M * sizeof(bf)));
    CK(cudaMalloc(&d, (size_t)n * M * sizeof(bf)));
    fill<<<256, 256>>>(w, (size_t)n * k, 7, 0.01f);
    double err[2];
    for (int programmatic = 0; programmatic < 2; programmatic++) {
        CK(cudaMemset(x, 0, (size_t)k * M * sizeof(bf)));
        CK(cudaMemset(d, 0, (size_t)n * M * sizeof(bf)));
        CK(cudaDeviceSynchronize());
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        late_ones<<<32, 256, 0, st>>>(x, (size_t)k * M, 200);
        gemm_run(&g, d, w, x, NULL);
        CK(cudaStreamEndCapture(st, &graph));
        if (programmatic) make_programmatic(graph);
        CK(cudaGraphInstantiate(&exec, graph, 0));
        CK(cudaGraphLaunch(exec, st));
        CK(cudaStreamSynchronize(st));
        err[programmatic] = error_vs_ones(d, w, n, k);
        cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
    }
    printf("%-8s max |D - W 1|: plain edge %.4g, programmatic edge %.4g: %s\n", name, err[0], err[1],
           err[1] <= 2 * err[0] + 1e-3 ? "waits" : "does NOT wait");
    cudaFree(w), cudaFree(x), cudaFree(d);
}

int main(void)
{
    LK(cublasLtCreate(&lt));
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    waits_at_edge("qkv", QKV, HID);
    waits_at_edge("o", HID, ATT);
    waits_at_edge("gate_up", 2 * INTER, HID);
    waits_at_edge("down", HID, INTER);

    gemm gq, go, gg, gd;
    gemm_init(&gq, QKV, HID), gemm_init(&go, HID, ATT), gemm_init(&gg, 2 * INTER, HID), gemm_init(&gd, HID, INTER);
    const size_t wn[4] = {(size_t)QKV * HID, (size_t)HID * ATT, (size_t)2 * INTER * HID, (size_t)HID * INTER};
    bf *W[L][4], *x, *x0, *xn, *qkv, *attn, *h, *gu, *act;
    for (int l = 0; l < L; l++)
        for (int j = 0; j < 4; j++) {
            CK(cudaMalloc(&W[l][j], wn[j] * sizeof(bf)));
            fill<<<256, 256>>>(W[l][j], wn[j], 11 + l * 4 + j, 0.02f);
        }
    const size_t an[8] = {HID, HID, HID, QKV, ATT, HID, 2 * INTER, INTER};
    bf **bufs[8] = {&x, &x0, &xn, &qkv, &attn, &h, &gu, &act};
    for (int i = 0; i < 8; i++) CK(cudaMalloc(bufs[i], (size_t)M * an[i] * sizeof(bf)));
    fill<<<64, 256>>>(x0, (size_t)M * HID, 3, 1.0f);
    CK(cudaDeviceSynchronize());
    static const struct { const char *name; copy_fn k; int programmatic; } modes[] = {
        {"plain edges into the products (rlc now)", copy<0>, 0},
        {"programmatic, copies trigger at start (reads too early)", copy<0>, 1},
        {"programmatic, copies trigger after writes + fence", copy<1>, 1},
        {"programmatic, copies trigger after writes, no fence", copy<2>, 1},
    };
    size_t out_bytes = (size_t)M * HID * sizeof(bf);
    bf *ref = (bf *)malloc(out_bytes), *out = (bf *)malloc(out_bytes);
    for (int mode = 0; mode < 4; mode++) {
        copy_fn k = modes[mode].k;
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        CK(cudaMemcpyAsync(x, x0, out_bytes, cudaMemcpyDeviceToDevice, st));
        for (int l = 0; l < L; l++) {
            launch_copy(k, xn, x, (size_t)M * HID);
            gemm_run(&gq, qkv, W[l][0], xn, NULL);
            launch_copy(k, attn, qkv, (size_t)M * ATT);
            gemm_run(&go, h, W[l][1], attn, x);
            launch_copy(k, xn, h, (size_t)M * HID);
            gemm_run(&gg, gu, W[l][2], xn, NULL);
            launch_copy(k, act, gu, (size_t)M * INTER);
            gemm_run(&gd, x, W[l][3], act, h);
        }
        CK(cudaStreamEndCapture(st, &graph));
        int changed = modes[mode].programmatic ? make_programmatic(graph) : 0;
        CK(cudaGraphInstantiate(&exec, graph, 0));
        double t[REPLAYS - WARM];
        int differ = 0;
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        for (int r = 0; r < REPLAYS; r++) {
            CK(cudaEventRecord(a, st));
            CK(cudaGraphLaunch(exec, st));
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (r >= WARM) t[r - WARM] = ms * 1000.0;
            CK(cudaMemcpy(out, x, out_bytes, cudaMemcpyDeviceToHost));
            if (mode == 0 && r == 0) memcpy(ref, out, out_bytes);
            else differ += memcmp(out, ref, out_bytes) != 0;
        }
        double med = bench_median(t, REPLAYS - WARM);
        printf("%d layers, %-56s (%3d edges changed): %7.1f us, %5.2f us per layer; %d of %d replays differ\n", L,
               modes[mode].name, changed, med, med / L, differ, REPLAYS);
        cudaEventDestroy(a), cudaEventDestroy(b);
        cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
    }
    free(ref), free(out);
    return 0;
}
