/* ctx.c — backend contexts and backend memory; CUDA calls go to backend/cuda when built. */
#include "backend/ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef RL_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#endif

int rl_cuda_devices(void)
{
#ifdef RL_HAVE_CUDA
    return rl_cuda_device_count();
#else
    return 0;
#endif
}

int rl_cuda_available(void) { return rl_cuda_devices() > 0; }

int rl_ctx_create(rl_ctx *ctx, rl_backend_kind kind, int device, rl_err *err)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->kind = kind;
    ctx->device = device;
    ctx->act_dtype = RL_F32;
    if (kind == RL_BACKEND_CPU) return 0;
#ifdef RL_HAVE_CUDA
    ctx->act_dtype = RL_BF16;
    return rl_cuda_ctx_create(ctx, device, err);
#else
    return rl_err_set(err, "CUDA backend requested, but this rlc was built without CUDA "
                           "(rebuild with nvcc on PATH, or CUDA=1)");
#endif
}

void rl_ctx_free(rl_ctx *ctx)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) rl_cuda_ctx_free(ctx);
#endif
    memset(ctx, 0, sizeof *ctx);
}

const char *rl_backend_name(const rl_ctx *ctx) { return ctx->kind == RL_BACKEND_CUDA ? "cuda" : "cpu"; }

const char *const rl_precision_names[] = {"auto", "bf16", "fp32", NULL};

int rl_ctx_set_precision(rl_ctx *ctx, rl_precision precision, rl_err *err)
{
    ctx->act_auto = 0;
    if (ctx->kind == RL_BACKEND_CPU) {
        if (precision == RL_PRECISION_BF16)
            return rl_err_set(err, "precision bf16: the CPU backend computes in fp32 only (bf16 needs --device cuda)");
        return 0;
    }
    if (precision == RL_PRECISION_AUTO) ctx->act_auto = 1;
    else ctx->act_dtype = precision == RL_PRECISION_FP32 ? RL_F32 : RL_BF16;
    return 0;
}

void rl_ctx_pick_act_dtype(rl_ctx *ctx, size_t n_params)
{
    if (!ctx->act_auto) return;
    ctx->act_auto = 0;
    ctx->act_dtype = n_params < RL_FP32_AUTO_MAX_PARAMS ? RL_F32 : RL_BF16;
}

const char *rl_ctx_precision_name(const rl_ctx *ctx) { return ctx->act_dtype == RL_F32 ? "fp32" : "bf16"; }

int rl_ctx_error(rl_ctx *ctx, rl_err *err)
{
    if (err && err != &ctx->err) *err = ctx->err;
    return -1;
}

void *rl_alloc(rl_ctx *ctx, size_t bytes)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_alloc(ctx, bytes);
#endif
    void *p = aligned_alloc(256, ((bytes ? bytes : 1) + 255) & ~(size_t)255);
    if (!p) rl_err_oom(&ctx->err, "host allocation", bytes);
    return p;
}

void rl_free(rl_ctx *ctx, void *ptr)
{
    if (!ptr) return;
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) {
        rl_cuda_free(ctx, ptr);
        return;
    }
#endif
    free(ptr);
}

int rl_memcpy(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_memcpy(ctx, dst, src, bytes, kind);
#endif
    if (bytes) memmove(dst, src, bytes);
    return 0;
}

int rl_memzero(rl_ctx *ctx, void *ptr, size_t bytes)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_memzero(ctx, ptr, bytes);
#endif
    if (bytes) memset(ptr, 0, bytes);
    return 0;
}

int rl_sync(rl_ctx *ctx)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_sync(ctx);
#endif
    return 0;
}

void *rl_alloc_host(rl_ctx *ctx, size_t bytes)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_alloc_host(ctx, bytes);
#endif
    void *p = aligned_alloc(256, ((bytes ? bytes : 1) + 255) & ~(size_t)255);
    if (!p) rl_err_oom(&ctx->err, "host allocation", bytes);
    return p;
}

void rl_free_host(rl_ctx *ctx, void *ptr)
{
    if (!ptr) return;
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) {
        rl_cuda_free_host(ctx, ptr);
        return;
    }
#endif
    free(ptr);
}

int rl_memcpy_async(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_memcpy_async(ctx, dst, src, bytes, kind);
#endif
    if (bytes) memmove(dst, src, bytes);
    return 0;
}

int rl_event_create(rl_ctx *ctx, rl_event **ev)
{
    *ev = NULL;
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_event_create(ctx, ev);
#endif
    return 0;
}

int rl_event_record(rl_ctx *ctx, rl_event *ev)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_event_record(ctx, ev);
#endif
    return 0;
}

int rl_event_wait_host(rl_ctx *ctx, rl_event *ev)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_event_wait_host(ctx, ev);
#endif
    return 0;
}

void rl_event_free(rl_ctx *ctx, rl_event *ev)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA && ev) rl_cuda_event_free(ctx, ev);
#endif
}

int rl_graph_supported(const rl_ctx *ctx)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_graph_supported(ctx);
#endif
    return 0;
}

int rl_fold_rows(const rl_ctx *ctx)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_fold_rows(ctx);
#endif
    return 0;
}

static int no_graphs(rl_ctx *ctx)
{
    return rl_err_set(&ctx->err, "graphs: the %s backend cannot capture ops", rl_backend_name(ctx));
}

int rl_graph_capture_begin(rl_ctx *ctx)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_graph_capture_begin(ctx);
#endif
    return no_graphs(ctx);
}

int rl_graph_capture_end(rl_ctx *ctx, rl_graph **out)
{
    *out = NULL;
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_graph_capture_end(ctx, out);
#endif
    return no_graphs(ctx);
}

int rl_graph_launch(rl_ctx *ctx, rl_graph *g)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_graph_launch(ctx, g);
#endif
    return no_graphs(ctx);
}

void rl_graph_free(rl_ctx *ctx, rl_graph *g)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA && g) rl_cuda_graph_free(ctx, g);
#endif
}

/* MemAvailable and MemTotal from /proc/meminfo (kB), else the physical page counts. */
static int host_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    unsigned long long avail = 0, total = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            sscanf(line, "MemTotal: %llu kB", &total);
            sscanf(line, "MemAvailable: %llu kB", &avail);
        }
        fclose(f);
        avail *= 1024;
        total *= 1024;
    }
    if (!total || !avail) {
        long pages = sysconf(_SC_PHYS_PAGES), free_pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages <= 0 || free_pages < 0 || page <= 0)
            return rl_err_set(&ctx->err, "memory info: neither /proc/meminfo nor sysconf gives the host's memory");
        total = (unsigned long long)pages * (unsigned long long)page;
        avail = (unsigned long long)free_pages * (unsigned long long)page;
    }
    *free_bytes = (size_t)avail;
    *total_bytes = (size_t)total;
    return 0;
}

int rl_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
#ifdef RL_HAVE_CUDA
    if (ctx->kind == RL_BACKEND_CUDA) return rl_cuda_mem_info(ctx, free_bytes, total_bytes);
#endif
    return host_mem_info(ctx, free_bytes, total_bytes);
}

int rl_upload_act(rl_ctx *ctx, void *dst, const float *src, size_t n)
{
    if (ctx->act_dtype == RL_F32) return rl_memcpy(ctx, dst, src, n * sizeof(float), RL_H2D);
    size_t bytes = n * rl_dtype_size(ctx->act_dtype);
    void *tmp = malloc(bytes ? bytes : 1);
    if (!tmp) return rl_err_oom(&ctx->err, "upload staging", bytes);
    rl_convert_from_f32(tmp, ctx->act_dtype, src, n);
    int rc = rl_memcpy(ctx, dst, tmp, bytes, RL_H2D);
    free(tmp);
    return rc;
}

int rl_download_act(rl_ctx *ctx, float *dst, const void *src, size_t n)
{
    if (ctx->act_dtype == RL_F32) return rl_memcpy(ctx, dst, src, n * sizeof(float), RL_D2H);
    size_t bytes = n * rl_dtype_size(ctx->act_dtype);
    void *tmp = malloc(bytes ? bytes : 1);
    if (!tmp) return rl_err_oom(&ctx->err, "download staging", bytes);
    int rc = rl_memcpy(ctx, tmp, src, bytes, RL_D2H);
    if (rc == 0) rl_convert_to_f32(dst, tmp, ctx->act_dtype, n);
    free(tmp);
    return rc;
}
