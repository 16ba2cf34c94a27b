/* ctx.cu — the CUDA context (device, stream, cuBLASLt handle and workspace, scratch), device
 * and pinned host memory, events and graphs, for backend/ctx.c.
 *
 * Nothing runs at load time: a machine with no driver or GPU only sees
 * rl_cuda_device_count() return 0. All work goes to the context's one stream; rl_cuda_memcpy
 * is synchronous with respect to the host (it waits for the stream), so host buffers may be
 * reused right after it returns; rl_cuda_memcpy_async is not (pinned host memory, an event to
 * wait on).
 *
 * Graphs: capture_begin starts a thread-local capture of the stream, so any call of this
 * thread that is not allowed in a capture (an allocation, a synchronous copy) fails instead of
 * running; capture_end instantiates. The scratch buffer a graph was captured with is baked
 * into it: when scratch grows while graphs are alive, the old buffer is kept (retired) until
 * the last graph is freed. */
#include "backend/cuda/common.cuh"

#include <stdlib.h>
#include <string.h>

#define WORKSPACE_BYTES ((size_t)64 << 20)

extern "C" int rl_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

static void free_retired(rl_cuda_state *st)
{
    for (int i = 0; i < st->n_retired; i++) cudaFree(st->retired[i]);
    free(st->retired);
    st->retired = NULL;
    st->n_retired = 0;
}

static void state_free(rl_cuda_state *st)
{
    if (st->stream) cudaStreamSynchronize(st->stream);
    free_retired(st);
    rl_cuda_gemm_plans_free(st);
    if (st->lt) cublasLtDestroy(st->lt);
    cudaFree(st->workspace);
    cudaFree(st->scratch);
    cudaFree(st->reduce);
    cudaFree(st->split_counters);
    if (st->reduce_host) cudaFreeHost(st->reduce_host);
    if (st->stream) cudaStreamDestroy(st->stream);
    free(st);
}

extern "C" int rl_cuda_ctx_create(rl_ctx *ctx, int device, rl_err *err)
{
    int n = rl_cuda_device_count();
    if (n <= 0) return rl_err_set(err, "CUDA backend: no CUDA device is visible (driver or GPU missing)");
    if (device < 0 || device >= n)
        return rl_err_set(err, "CUDA backend: device %d requested, %d visible", device, n);
    rl_cuda_state *st = (rl_cuda_state *)calloc(1, sizeof *st);
    if (!st) return rl_err_oom(err, "CUDA context", sizeof *st);
    ctx->cuda = st;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&st->n_sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&st->workspace, WORKSPACE_BYTES);
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->reduce, RL_CUDA_REDUCE_SLOTS * sizeof(double));
    if (e == cudaSuccess) e = cudaMallocHost((void **)&st->reduce_host, RL_CUDA_REDUCE_SLOTS * sizeof(double));
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->split_counters, RL_CUDA_SPLIT_COUNTERS * sizeof(unsigned));
    if (e == cudaSuccess) e = cudaMemset(st->split_counters, 0, RL_CUDA_SPLIT_COUNTERS * sizeof(unsigned));
    if (e != cudaSuccess) {
        rl_err_set(err, "CUDA backend: device %d: %s", device, cudaGetErrorString(e));
        state_free(st);
        ctx->cuda = NULL;
        return -1;
    }
    st->workspace_bytes = WORKSPACE_BYTES;
    cublasStatus_t s = cublasLtCreate(&st->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
        rl_err_set(err, "CUDA backend: cublasLtCreate failed with status %d", (int)s);
        state_free(st);
        ctx->cuda = NULL;
        return -1;
    }
    return 0;
}

extern "C" void rl_cuda_ctx_free(rl_ctx *ctx)
{
    if (ctx->cuda) state_free(rl_cuda_st(ctx));
    ctx->cuda = NULL;
}

void *rl_cuda_scratch(rl_ctx *ctx, size_t bytes)
{
    rl_cuda_state *st = rl_cuda_st(ctx);
    if (bytes <= st->scratch_bytes) return st->scratch;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(st->stream, &capturing);
    if (e == cudaSuccess && capturing != cudaStreamCaptureStatusNone) {
        rl_err_set(&ctx->err, "CUDA scratch would grow from %zu to %zu bytes inside a graph capture (run the "
                              "captured ops once un-captured first)",
                   st->scratch_bytes, bytes);
        return NULL;
    }
    /* Queued kernels may still read the old buffer. */
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    if (e == cudaSuccess && st->scratch && st->live_graphs > 0) {
        void **r = (void **)realloc(st->retired, (size_t)(st->n_retired + 1) * sizeof *r);
        if (!r) {
            rl_err_oom(&ctx->err, "retired scratch list", (size_t)(st->n_retired + 1) * sizeof *r);
            return NULL;
        }
        st->retired = r;
        st->retired[st->n_retired++] = st->scratch;
        st->scratch = NULL;
    }
    if (e == cudaSuccess) {
        cudaFree(st->scratch);
        st->scratch = NULL;
        st->scratch_bytes = 0;
        e = cudaMalloc(&st->scratch, bytes);
    }
    if (e != cudaSuccess) {
        rl_err_set(&ctx->err, "CUDA scratch of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    st->scratch_bytes = bytes;
    return st->scratch;
}

extern "C" void *rl_cuda_alloc(rl_ctx *ctx, size_t bytes)
{
    void *p = NULL;
    /* cudaMalloc returns 256-byte aligned memory. */
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        rl_err_set(&ctx->err, "device allocation of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

extern "C" void rl_cuda_free(rl_ctx *ctx, void *ptr)
{
    if (!ptr) return;
    /* cudaFree synchronises the device, so queued kernels finish with the memory first. */
    cudaFree(ptr);
}

extern "C" int rl_cuda_memcpy(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind)
{
    if (!bytes) return 0;
    cudaMemcpyKind k = kind == RL_H2D ? cudaMemcpyHostToDevice
                       : kind == RL_D2H ? cudaMemcpyDeviceToHost
                                        : cudaMemcpyDeviceToDevice;
    cudaStream_t s = rl_cuda_st(ctx)->stream;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, k, s));
    if (kind != RL_D2D) CUDA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

extern "C" int rl_cuda_memzero(rl_ctx *ctx, void *ptr, size_t bytes)
{
    if (!bytes) return 0;
    CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, rl_cuda_st(ctx)->stream));
    return 0;
}

extern "C" int rl_cuda_sync(rl_ctx *ctx)
{
    CUDA_CHECK(cudaStreamSynchronize(rl_cuda_st(ctx)->stream));
    return 0;
}

extern "C" void *rl_cuda_alloc_host(rl_ctx *ctx, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        rl_err_set(&ctx->err, "pinned host allocation of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

extern "C" void rl_cuda_free_host(rl_ctx *ctx, void *ptr)
{
    /* cudaFreeHost synchronises the device, so queued copies finish with the memory first. */
    if (ptr) cudaFreeHost(ptr);
}

extern "C" int rl_cuda_memcpy_async(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind)
{
    if (!bytes) return 0;
    cudaMemcpyKind k = kind == RL_H2D ? cudaMemcpyHostToDevice
                       : kind == RL_D2H ? cudaMemcpyDeviceToHost
                                        : cudaMemcpyDeviceToDevice;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, k, rl_cuda_st(ctx)->stream));
    return 0;
}

struct rl_event {
    cudaEvent_t ev;
};

extern "C" int rl_cuda_event_create(rl_ctx *ctx, rl_event **out)
{
    *out = NULL;
    rl_event *ev = (rl_event *)calloc(1, sizeof *ev);
    if (!ev) return rl_err_oom(&ctx->err, "event", sizeof *ev);
    /* Timing off: recording is cheaper. No blocking-sync flag: the engine waits on this every
     * decode step, and a spinning wait wakes tens of microseconds sooner than a sleeping one. */
    cudaError_t e = cudaEventCreateWithFlags(&ev->ev, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        free(ev);
        return rl_err_set(&ctx->err, "cudaEventCreateWithFlags: %s", cudaGetErrorString(e));
    }
    *out = ev;
    return 0;
}

extern "C" int rl_cuda_event_record(rl_ctx *ctx, rl_event *ev)
{
    CUDA_CHECK(cudaEventRecord(ev->ev, rl_cuda_st(ctx)->stream));
    return 0;
}

extern "C" int rl_cuda_event_wait_host(rl_ctx *ctx, rl_event *ev)
{
    CUDA_CHECK(cudaEventSynchronize(ev->ev));
    return 0;
}

extern "C" void rl_cuda_event_free(rl_ctx *ctx, rl_event *ev)
{
    if (!ev) return;
    cudaEventDestroy(ev->ev);
    free(ev);
}

struct rl_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

extern "C" int rl_cuda_graph_supported(const rl_ctx *ctx) { return 1; }

extern "C" int rl_cuda_graph_capture_begin(rl_ctx *ctx)
{
    CUDA_CHECK(cudaStreamBeginCapture(rl_cuda_st(ctx)->stream, cudaStreamCaptureModeThreadLocal));
    return 0;
}

extern "C" int rl_cuda_graph_capture_end(rl_ctx *ctx, rl_graph **out)
{
    *out = NULL;
    rl_cuda_state *st = rl_cuda_st(ctx);
    cudaGraph_t graph = NULL;
    /* Ends the capture even when an op inside it failed (the capture is then invalidated and
     * this reports it). */
    cudaError_t e = cudaStreamEndCapture(st->stream, &graph);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (graph) cudaGraphDestroy(graph);
        return rl_err_set(&ctx->err, "graph capture failed: %s (an op that may not run inside a capture ran in it)",
                          cudaGetErrorString(e));
    }
    rl_graph *g = (rl_graph *)calloc(1, sizeof *g);
    if (!g) {
        cudaGraphDestroy(graph);
        return rl_err_oom(&ctx->err, "graph", sizeof *g);
    }
    g->graph = graph;
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        free(g);
        return rl_err_set(&ctx->err, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    st->live_graphs++;
    *out = g;
    return 0;
}

extern "C" int rl_cuda_graph_launch(rl_ctx *ctx, rl_graph *g)
{
    CUDA_CHECK(cudaGraphLaunch(g->exec, rl_cuda_st(ctx)->stream));
    return 0;
}

extern "C" void rl_cuda_graph_free(rl_ctx *ctx, rl_graph *g)
{
    if (!g) return;
    rl_cuda_state *st = rl_cuda_st(ctx);
    /* A replay may still be queued. */
    cudaStreamSynchronize(st->stream);
    cudaGraphExecDestroy(g->exec);
    cudaGraphDestroy(g->graph);
    free(g);
    if (--st->live_graphs == 0) free_retired(st);
}

extern "C" int rl_cuda_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}
