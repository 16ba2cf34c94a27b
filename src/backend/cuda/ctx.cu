/* ctx.cu — the CUDA context (device, stream, cuBLASLt handle and workspace, scratch) and
 * device memory, for backend/ctx.c.
 *
 * Nothing runs at load time: a machine with no driver or GPU only sees
 * rl_cuda_device_count() return 0. All work goes to the context's one stream; rl_cuda_memcpy
 * is synchronous with respect to the host (it waits for the stream), so host buffers may be
 * reused right after it returns. */
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

static void state_free(rl_cuda_state *st)
{
    if (st->stream) cudaStreamSynchronize(st->stream);
    rl_cuda_gemm_plans_free(st);
    if (st->lt) cublasLtDestroy(st->lt);
    cudaFree(st->workspace);
    cudaFree(st->scratch);
    cudaFree(st->reduce);
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
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&st->workspace, WORKSPACE_BYTES);
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->reduce, RL_CUDA_REDUCE_SLOTS * sizeof(double));
    if (e == cudaSuccess) e = cudaMallocHost((void **)&st->reduce_host, RL_CUDA_REDUCE_SLOTS * sizeof(double));
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
    /* Queued kernels may still read the old buffer. */
    cudaError_t e = cudaStreamSynchronize(st->stream);
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

extern "C" int rl_cuda_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}
