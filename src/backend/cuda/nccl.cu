/* nccl.cu — the NCCL communicator behind nccl.h (and so behind dist/comm.h).
 *
 * Loading: libnccl.so.2 is dlopen'ed on first use and the functions below are looked up with
 * their types from nccl.h (compiled against the toolkit's header, NCCL 2.28), so a machine
 * without NCCL still runs rlc on one GPU.
 *
 * Streams: collectives run on the communicator's own stream. Each first makes that stream wait
 * for an event recorded on the ctx's stream (so it sees everything queued before the call), and
 * records a ticket event after itself into a ring of RING events; rl_nccl_wait makes the ctx's
 * stream wait for a ticket's event. A ticket whose ring slot was recorded again by a later
 * collective waits for that later one instead: later, never wrong.
 *
 * Failure: the communicator is created non-blocking (ncclConfig_t.blocking = 0), so no NCCL
 * call blocks the host indefinitely; calls that return ncclInProgress are polled with
 * ncclCommGetAsyncError, and host waits poll the stream the same way, also watching the abort
 * flag that rl_nccl_abort (the watchdog thread, dist/watchdog.h) raises before ncclCommAbort.
 *
 * Reduce with accumulate (dst += sum over ranks): the root first adds dst into its own send
 * buffer (comm.h allows the root's src to be used so) and reduces into dst: no scratch. */
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/nccl.h"

#define RING 64
#define HOST_SLOTS 64 /* doubles a host reduction moves at once */
#define MIN_VERSION 21800

#ifndef RL_NCCL_TOOLKIT_LIB
#define RL_NCCL_TOOLKIT_LIB "/usr/local/cuda/lib64/libnccl.so.2"
#endif

static_assert(sizeof(ncclUniqueId) == RL_NCCL_ID_BYTES, "NCCL unique id size");

/* ---- the library ------------------------------------------------------------------------------- */

static struct {
    int loaded;
    char error[768];
    decltype(&ncclGetVersion) GetVersion;
    decltype(&ncclGetUniqueId) GetUniqueId;
    decltype(&ncclCommInitRankConfig) CommInitRankConfig;
    decltype(&ncclCommFinalize) CommFinalize;
    decltype(&ncclCommDestroy) CommDestroy;
    decltype(&ncclCommAbort) CommAbort;
    decltype(&ncclCommGetAsyncError) CommGetAsyncError;
    decltype(&ncclGetErrorString) GetErrorString;
    decltype(&ncclGetLastError) GetLastError;
    decltype(&ncclAllReduce) AllReduce;
    decltype(&ncclReduce) Reduce;
    decltype(&ncclBroadcast) Broadcast;
    decltype(&ncclSend) Send;
    decltype(&ncclRecv) Recv;
    decltype(&ncclGroupStart) GroupStart;
    decltype(&ncclGroupEnd) GroupEnd;
} lib;

template <typename F> static bool find(void *h, const char *name, F *out)
{
    *out = (F)dlsym(h, name);
    return *out != NULL;
}

static int load_from(const char *path, char *tried, size_t size)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    size_t used = strlen(tried);
    if (!h) {
        const char *why = dlerror();
        snprintf(tried + used, size - used, "%s%s (%s)", used ? "; " : "", path, why ? why : "not found");
        return -1;
    }
    bool ok = find(h, "ncclGetVersion", &lib.GetVersion) && find(h, "ncclGetUniqueId", &lib.GetUniqueId) &&
              find(h, "ncclCommInitRankConfig", &lib.CommInitRankConfig) &&
              find(h, "ncclCommFinalize", &lib.CommFinalize) && find(h, "ncclCommDestroy", &lib.CommDestroy) &&
              find(h, "ncclCommAbort", &lib.CommAbort) && find(h, "ncclCommGetAsyncError", &lib.CommGetAsyncError) &&
              find(h, "ncclGetErrorString", &lib.GetErrorString) && find(h, "ncclGetLastError", &lib.GetLastError) &&
              find(h, "ncclAllReduce", &lib.AllReduce) && find(h, "ncclReduce", &lib.Reduce) &&
              find(h, "ncclBroadcast", &lib.Broadcast) && find(h, "ncclSend", &lib.Send) &&
              find(h, "ncclRecv", &lib.Recv) && find(h, "ncclGroupStart", &lib.GroupStart) &&
              find(h, "ncclGroupEnd", &lib.GroupEnd);
    int version = 0;
    if (ok && lib.GetVersion(&version) == ncclSuccess && version >= MIN_VERSION) return 0;
    snprintf(tried + used, size - used, "%s%s (%s)", used ? "; " : "", path,
             ok ? "NCCL older than 2.18" : "lacks NCCL functions");
    dlclose(h);
    return -1;
}

extern "C" int rl_nccl_load(rl_err *err)
{
    if (lib.loaded) return 0;
    char tried[640] = "";
    const char *own = getenv("RLC_NCCL_LIBRARY");
    const char *paths[3] = {own, "libnccl.so.2", RL_NCCL_TOOLKIT_LIB};
    for (int i = 0; i < 3; i++)
        if (paths[i] && load_from(paths[i], tried, sizeof tried) == 0) {
            lib.loaded = 1;
            return 0;
        }
    return rl_err_set(err, "NCCL (libnccl.so.2, 2.18 or newer) is needed for several GPUs and could not be loaded: "
                           "%s. Install it (the toolkit's, or pip's nvidia-nccl-cu13) and set RLC_NCCL_LIBRARY to "
                           "its path or add its folder to LD_LIBRARY_PATH",
                      tried);
}

/* ---- the communicator ------------------------------------------------------------------------ */

struct rl_nccl {
    rl_ctx *ctx;
    int rank, world, device;
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready, ring[RING];
    uint64_t issued;
    double *host_dev, *host_pinned; /* [HOST_SLOTS] each */
    volatile int aborted;
};

#define CUDA_OR_FAIL(expr)                                                                   \
    do {                                                                                     \
        cudaError_t e_ = (expr);                                                             \
        if (e_ != cudaSuccess)                                                               \
            return rl_err_set(err, "%s:%d: %s: %s", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
    } while (0)

static int nccl_error(rl_nccl *c, ncclResult_t r, const char *what, rl_err *err)
{
    const char *last = c && c->comm && !c->aborted ? lib.GetLastError(c->comm) : NULL;
    if (c && c->aborted)
        return rl_err_set(err, "NCCL %s: stopped (another rank was lost)", what);
    return rl_err_set(err, "NCCL %s on rank %d: %s%s%s", what, c ? c->rank : -1, lib.GetErrorString(r),
                      last && *last ? ": " : "", last && *last ? last : "");
}

/* A non-blocking call's outcome: polls while NCCL reports it in progress. */
static int settle(rl_nccl *c, ncclResult_t r, const char *what, rl_err *err)
{
    while (r == ncclInProgress && !c->aborted) {
        usleep(10);
        if (lib.CommGetAsyncError(c->comm, &r) != ncclSuccess) break;
    }
    if (r != ncclSuccess || c->aborted) return nccl_error(c, r, what, err);
    return 0;
}

/* Blocks until the communicator's stream is idle, watching NCCL's errors and the abort flag. */
static int host_wait(rl_nccl *c, const char *what, rl_err *err)
{
    for (;;) {
        cudaError_t q = cudaStreamQuery(c->stream);
        if (q == cudaSuccess) return 0;
        if (q != cudaErrorNotReady) return rl_err_set(err, "NCCL %s: %s", what, cudaGetErrorString(q));
        ncclResult_t state = ncclSuccess;
        lib.CommGetAsyncError(c->comm, &state);
        if ((state != ncclSuccess && state != ncclInProgress) || c->aborted) return nccl_error(c, state, what, err);
        usleep(20);
    }
}

static cudaStream_t ctx_stream(rl_nccl *c) { return rl_cuda_st(c->ctx)->stream; }

/* The collective's stream starts after the ctx's queued work. */
static int before(rl_nccl *c, rl_err *err)
{
    if (c->aborted) return rl_err_set(err, "NCCL: stopped (another rank was lost)");
    CUDA_OR_FAIL(cudaEventRecord(c->ready, ctx_stream(c)));
    CUDA_OR_FAIL(cudaStreamWaitEvent(c->stream, c->ready, 0));
    return 0;
}

static int after(rl_nccl *c, ncclResult_t r, const char *what, rl_err *err)
{
    if (settle(c, r, what, err)) return -1;
    c->issued++;
    CUDA_OR_FAIL(cudaEventRecord(c->ring[c->issued % RING], c->stream));
    return 0;
}

extern "C" int rl_nccl_unique_id(void *id, rl_err *err)
{
    if (rl_nccl_load(err)) return -1;
    ncclUniqueId u;
    ncclResult_t r = lib.GetUniqueId(&u);
    if (r != ncclSuccess) return rl_err_set(err, "ncclGetUniqueId: %s", lib.GetErrorString(r));
    memcpy(id, &u, sizeof u);
    return 0;
}

extern "C" void rl_nccl_free(rl_nccl *c)
{
    if (!c) return;
    if (c->comm && !c->aborted) {
        rl_err e;
        if (host_wait(c, "finish", &e) == 0 && settle(c, lib.CommFinalize(c->comm), "finalize", &e) == 0)
            lib.CommDestroy(c->comm);
        else
            lib.CommAbort(c->comm);
    }
    if (c->stream) cudaStreamSynchronize(c->stream);
    for (int i = 0; i < RING; i++)
        if (c->ring[i]) cudaEventDestroy(c->ring[i]);
    if (c->ready) cudaEventDestroy(c->ready);
    if (c->stream) cudaStreamDestroy(c->stream);
    cudaFree(c->host_dev);
    if (c->host_pinned) cudaFreeHost(c->host_pinned);
    free(c);
}

extern "C" void rl_nccl_abort(rl_nccl *c)
{
    if (!c || c->aborted) return;
    c->aborted = 1;
    cudaSetDevice(c->device);
    if (c->comm) lib.CommAbort(c->comm);
}

extern "C" int rl_nccl_create(rl_nccl **out, rl_ctx *ctx, int rank, int world, const void *id, rl_err *err)
{
    *out = NULL;
    if (rl_nccl_load(err)) return -1;
    rl_nccl *c = (rl_nccl *)calloc(1, sizeof *c);
    if (!c) return rl_err_oom(err, "NCCL communicator", sizeof *c);
    c->ctx = ctx;
    c->rank = rank;
    c->world = world;
    c->device = ctx->device;
    int rc = 0;
    cudaError_t e = cudaSetDevice(ctx->device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming);
    for (int i = 0; i < RING && e == cudaSuccess; i++) e = cudaEventCreateWithFlags(&c->ring[i], cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaMalloc((void **)&c->host_dev, HOST_SLOTS * sizeof(double));
    if (e == cudaSuccess) e = cudaMallocHost((void **)&c->host_pinned, HOST_SLOTS * sizeof(double));
    if (e != cudaSuccess) rc = rl_err_set(err, "NCCL communicator on device %d: %s", ctx->device, cudaGetErrorString(e));
    if (rc == 0) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        ncclUniqueId u;
        memcpy(&u, id, sizeof u);
        ncclResult_t r = lib.CommInitRankConfig(&c->comm, world, u, rank, &config);
        if (r != ncclSuccess && r != ncclInProgress) {
            c->comm = NULL;
            rc = rl_err_set(err, "ncclCommInitRankConfig on rank %d of %d: %s", rank, world, lib.GetErrorString(r));
        } else {
            rc = settle(c, r, "communicator set-up", err);
        }
    }
    if (rc != 0) {
        rl_nccl_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

/* ---- collectives ------------------------------------------------------------------------------- */

extern "C" int rl_nccl_allreduce(rl_nccl *c, float *buf, size_t n, rl_err *err)
{
    if (before(c, err)) return -1;
    return after(c, lib.AllReduce(buf, buf, n, ncclFloat32, ncclSum, c->comm, c->stream), "allreduce", err);
}

static __global__ void accumulate_kernel(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

extern "C" int rl_nccl_reduce(rl_nccl *c, float *dst, float *src, size_t n, int root, int accumulate, rl_err *err)
{
    if (before(c, err)) return -1;
    if (c->rank == root && accumulate && n > 0) {
        accumulate_kernel<<<rl_cuda_blocks(n, 256, 4096), 256, 0, c->stream>>>(src, dst, n);
        CUDA_OR_FAIL(cudaGetLastError());
    }
    float *recv = c->rank == root ? dst : src;
    return after(c, lib.Reduce(src, recv, n, ncclFloat32, ncclSum, root, c->comm, c->stream), "reduce", err);
}

extern "C" int rl_nccl_broadcast(rl_nccl *c, void *buf, size_t bytes, int root, rl_err *err)
{
    if (before(c, err)) return -1;
    return after(c, lib.Broadcast(buf, buf, bytes, ncclInt8, root, c->comm, c->stream), "broadcast", err);
}

extern "C" int rl_nccl_allgatherv(rl_nccl *c, void *buf, const size_t *offsets, size_t elem_bytes, rl_err *err)
{
    if (before(c, err)) return -1;
    /* an all-gather of unequal parts: one broadcast per rank, grouped (NCCL's advice) */
    ncclResult_t r = lib.GroupStart();
    for (int root = 0; root < c->world && r == ncclSuccess; root++) {
        size_t bytes = (offsets[root + 1] - offsets[root]) * elem_bytes;
        char *part = (char *)buf + offsets[root] * elem_bytes;
        if (bytes) r = lib.Broadcast(part, part, bytes, ncclInt8, root, c->comm, c->stream);
    }
    ncclResult_t end = lib.GroupEnd();
    return after(c, r != ncclSuccess ? r : end, "allgather", err);
}

extern "C" int rl_nccl_send(rl_nccl *c, const void *buf, size_t bytes, int peer, rl_err *err)
{
    if (before(c, err)) return -1;
    return after(c, lib.Send(buf, bytes, ncclInt8, peer, c->comm, c->stream), "send", err);
}

extern "C" int rl_nccl_recv(rl_nccl *c, void *buf, size_t bytes, int peer, rl_err *err)
{
    if (before(c, err)) return -1;
    return after(c, lib.Recv(buf, bytes, ncclInt8, peer, c->comm, c->stream), "recv", err);
}

extern "C" int rl_nccl_host_reduce(rl_nccl *c, double *x, int n, int op, rl_err *err)
{
    for (int at = 0; at < n; at += HOST_SLOTS) {
        int k = n - at < HOST_SLOTS ? n - at : HOST_SLOTS;
        if (c->aborted) return rl_err_set(err, "NCCL: stopped (another rank was lost)");
        memcpy(c->host_pinned, x + at, (size_t)k * sizeof(double));
        CUDA_OR_FAIL(cudaMemcpyAsync(c->host_dev, c->host_pinned, (size_t)k * sizeof(double), cudaMemcpyHostToDevice,
                                     c->stream));
        if (after(c, lib.AllReduce(c->host_dev, c->host_dev, (size_t)k, ncclFloat64, op ? ncclMax : ncclSum, c->comm,
                                   c->stream),
                  "host reduction", err))
            return -1;
        CUDA_OR_FAIL(cudaMemcpyAsync(c->host_pinned, c->host_dev, (size_t)k * sizeof(double), cudaMemcpyDeviceToHost,
                                     c->stream));
        if (host_wait(c, "host reduction", err)) return -1;
        memcpy(x + at, c->host_pinned, (size_t)k * sizeof(double));
    }
    return 0;
}

extern "C" uint64_t rl_nccl_ticket(rl_nccl *c) { return c->issued; }

extern "C" int rl_nccl_wait(rl_nccl *c, uint64_t ticket, rl_err *err)
{
    if (ticket == 0) return 0;
    if (c->aborted) return rl_err_set(err, "NCCL: stopped (another rank was lost)");
    CUDA_OR_FAIL(cudaStreamWaitEvent(ctx_stream(c), c->ring[ticket % RING], 0));
    return 0;
}
