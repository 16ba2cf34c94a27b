/* ctx.h — the backend handle every op takes, and backend memory.
 *
 * An rl_ctx says where ops run (CPU or one CUDA device) and owns that backend's handles (CUDA
 * stream, cuBLASLt handle and workspace: opaque here, so this header needs no CUDA headers).
 * "Backend memory" is host memory on the CPU and device memory on CUDA; every pointer an op
 * takes is backend memory unless its comment says host.
 *
 * Dtypes: activations and working weights are stored in ctx->act_dtype (fp32 on the CPU, bf16
 * on CUDA); weight gradients, master weights, AdamW moments, norms' rstd, log-sum-exp, log-probs
 * and losses are always fp32.
 *
 * Precision (CUDA). bf16 storage suits large models; a tiny one (the demo's 3.3M parameters,
 * hyper-parameters tuned on the fp32 CPU path) learns measurably worse with it: its SFT ended at
 * loss 0.716 on CUDA where the CPU's ended at 0.537 (docs/benchmarks.md). So a CUDA context can
 * also run every op in fp32 (act_dtype RL_F32: fp32 activations, the fp32 masters are then the
 * working weights as on the CPU, matrix products in fp32 through cuBLASLt without TF32, the
 * engine too). rl_ctx_set_precision chooses: bf16, fp32, or auto, where the first model created on
 * the context picks fp32 when it has fewer than RL_FP32_AUTO_MAX_PARAMS parameters (the models
 * after it, e.g. a reference or value model, use the same). act_dtype must not change once
 * anything was allocated in it. */
#ifndef RL_BACKEND_CTX_H
#define RL_BACKEND_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

typedef enum { RL_BACKEND_CPU = 0, RL_BACKEND_CUDA = 1 } rl_backend_kind;

/* rl_ctx_set_precision's choices (the CLI's --precision auto|bf16|fp32). */
typedef enum { RL_PRECISION_AUTO = 0, RL_PRECISION_BF16 = 1, RL_PRECISION_FP32 = 2 } rl_precision;
extern const char *const rl_precision_names[]; /* "auto", "bf16", "fp32", NULL */

/* Auto precision: models with fewer parameters than this run in fp32 on CUDA. Below it a model's
 * fp32 step is a few milliseconds of launches either way (tensor cores buy nothing at hidden
 * sizes of a few hundred) and its memory is a few hundred MB; Qwen3-0.6B (596M) stays bf16. */
#define RL_FP32_AUTO_MAX_PARAMS 50000000

typedef struct rl_ctx {
    rl_backend_kind kind;
    rl_dtype act_dtype; /* RL_F32 on CPU; RL_BF16 or RL_F32 on CUDA (rl_ctx_set_precision) */
    int act_auto;       /* 1: the next rl_ctx_pick_act_dtype picks act_dtype from a model's size */
    int device;         /* CUDA device ordinal */
    int n_threads;      /* CPU: OpenMP threads (0 = OpenMP default) */
    int deterministic;  /* 1: every op gives each row a result that does not depend on the other
                           rows of its batch (batch-invariant kernels), and a product each output
                           element one that does not depend on the other columns of its call,
                           so the engine's sampling log-probs equal the training forward's bit
                           for bit; the CPU ops always are */
    void *cuda;         /* owned by backend/cuda: stream, cuBLASLt handle, workspace */
    rl_err err;         /* filled when an op or memory call fails */
} rl_ctx;

/* Creates a context. RL_BACKEND_CUDA fails with a clear message when rlc was built without
 * CUDA or no device is usable. */
int rl_ctx_create(rl_ctx *ctx, rl_backend_kind kind, int device, rl_err *err);
void rl_ctx_free(rl_ctx *ctx);
/* 1 if this build has CUDA and a device is visible. */
int rl_cuda_available(void);
/* CUDA devices visible (0 without CUDA in the build or on the machine). */
int rl_cuda_devices(void);
const char *rl_backend_name(const rl_ctx *ctx);

/* Sets the precision of a fresh context (before any model, activation or KV pool is allocated
 * on it). The CPU computes in fp32 only: RL_PRECISION_BF16 there fails with a message saying so;
 * auto and fp32 are accepted. On CUDA, bf16 and fp32 set act_dtype now; auto leaves it for
 * rl_ctx_pick_act_dtype. A context from rl_ctx_create is bf16 on CUDA, as if set to bf16. */
int rl_ctx_set_precision(rl_ctx *ctx, rl_precision precision, rl_err *err);
/* Called by the model code when it creates a model of n_params parameters, before it allocates
 * the working weights: under auto precision, act_dtype becomes RL_F32 when n_params <
 * RL_FP32_AUTO_MAX_PARAMS, else RL_BF16, and stays so (later calls change nothing). */
void rl_ctx_pick_act_dtype(rl_ctx *ctx, size_t n_params);
/* "fp32" or "bf16": what the ops compute in (for progress lines). */
const char *rl_ctx_precision_name(const rl_ctx *ctx);

typedef enum { RL_H2D, RL_D2H, RL_D2D } rl_copy_kind;

/* Backend memory. rl_alloc returns 256-byte aligned memory or NULL (message in ctx->err). */
void *rl_alloc(rl_ctx *ctx, size_t bytes);
void rl_free(rl_ctx *ctx, void *ptr);
int rl_memcpy(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind);
int rl_memzero(rl_ctx *ctx, void *ptr, size_t bytes);
/* Waits for all queued work (a no-op on the CPU). */
int rl_sync(rl_ctx *ctx);
/* Memory of the backend: the device's free and total bytes on CUDA, the machine's available
 * and total RAM on the CPU (MemAvailable / MemTotal: page cache counts as available). */
int rl_mem_info(rl_ctx *ctx, size_t *free_bytes, size_t *total_bytes);

/* Host memory for asynchronous copies: pinned on CUDA, plain on the CPU. */
void *rl_alloc_host(rl_ctx *ctx, size_t bytes);
void rl_free_host(rl_ctx *ctx, void *ptr);
/* Queues a copy without waiting for it (the CPU copies at once); the host side must be
 * rl_alloc_host memory and must not be touched until an event recorded after it completed. */
int rl_memcpy_async(rl_ctx *ctx, void *dst, const void *src, size_t bytes, rl_copy_kind kind);

/* A point in the context's queue of work the host can wait for (no-op on the CPU, where work
 * is done when a call returns; rl_event_create gives NULL there). */
typedef struct rl_event rl_event;
int rl_event_create(rl_ctx *ctx, rl_event **ev);
int rl_event_record(rl_ctx *ctx, rl_event *ev);
int rl_event_wait_host(rl_ctx *ctx, rl_event *ev);
void rl_event_free(rl_ctx *ctx, rl_event *ev);

/* A captured sequence of ops replayed as one launch (CUDA graphs). Between capture_begin and
 * capture_end ops are recorded, not run: no allocation, no synchronous copy, no host read of
 * backend data, and every pointer and size stays valid for every replay. The CPU has none:
 * rl_graph_supported gives 0 and the others fail (graph_free accepts NULL). */
typedef struct rl_graph rl_graph;
int rl_graph_supported(const rl_ctx *ctx);
int rl_graph_capture_begin(rl_ctx *ctx);
int rl_graph_capture_end(rl_ctx *ctx, rl_graph **out); /* instantiates the graph */
int rl_graph_launch(rl_ctx *ctx, rl_graph *g);
void rl_graph_free(rl_ctx *ctx, rl_graph *g);

/* The most rows for which the backend runs rl_rmsnorm_matmul_fwd and
 * rl_swiglu_matmul_residual_fwd as one pass over the weight (the norm or SwiGLU folded into a
 * few-row product; CUDA bf16: 16, gemv.cu and gemm_rows.cu). An inference forward of more rows
 * asks instead for each RMSNorm together with the product before it
 * (rl_matmul_residual_rmsnorm_fwd), which a backend can fold into that product's split-k sum.
 * The CPU folds nothing: 0. */
int rl_fold_rows(const rl_ctx *ctx);

/* fp32 host array <-> backend array of ctx->act_dtype (bf16 on CUDA), converting: for activations
 * and working weights. Buffers that are fp32 on every backend (log-probs, advantages, loss
 * gradients) go through rl_memcpy. */
int rl_upload_act(rl_ctx *ctx, void *dst, const float *src, size_t n);
int rl_download_act(rl_ctx *ctx, float *dst, const void *src, size_t n);

/* The one bridge from the backend's error to a caller's. Ops and the memory functions above
 * return 0, or -1 with the reason in ctx->err. A function that reports through its own
 * `rl_err *err` takes the reason over with
 *     RL_TRY_OP(ctx, err, rl_matmul_fwd(ctx, ...));    -- returns -1 from the function on failure
 * or, where it must clean up first, with `return rl_ctx_error(ctx, err);` (copies ctx->err into
 * *err, returns -1). Context goes in front with rl_err_prefix, as everywhere ("layer 3: "). */
int rl_ctx_error(rl_ctx *ctx, rl_err *err);
#define RL_TRY_OP(ctx, err, expr)                                                            \
    do {                                                                                     \
        if ((expr) != 0) return rl_ctx_error((ctx), (err));                                  \
    } while (0)

#endif
