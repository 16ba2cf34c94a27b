/* common.cuh — what every CUDA kernel file shares: the backend state behind ctx->cuda, error
 * checks that name file and line, bf16 helpers and the act-dtype templates (bf16 or fp32,
 * ctx.h), warp/block reductions and a scratch buffer.
 *
 * Errors: CUDA_CHECK / CUBLAS_CHECK wrap every runtime or cuBLASLt call and LAUNCH_CHECK
 * follows every kernel launch; on failure they write "<file>:<line>: <call>: <reason>" into
 * ctx->err and return -1 from the enclosing launcher (which therefore must return int and
 * have a variable `ctx`); a launcher's callee that failed has its message in ctx->err already,
 * so the launcher just returns -1. Kernels never allocate; launchers take scratch from
 * rl_cuda_scratch, which grows one device buffer and keeps it (callers use it only inside one
 * op). */
#ifndef RL_BACKEND_CUDA_COMMON_CUH
#define RL_BACKEND_CUDA_COMMON_CUH

extern "C" {
#include "core/error.h"
#include "core/dtype.h"
}
#include "backend/cuda/cuda_ops.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

typedef struct rl_cuda_matmul_plan rl_cuda_matmul_plan; /* matmul.cu */

/* What ctx->cuda points to. */
typedef struct rl_cuda_state {
    cudaStream_t stream;
    int n_sms; /* multiprocessors of the device (grid sizing) */
    cublasLtHandle_t lt;
    void *workspace; /* cuBLASLt workspace */
    size_t workspace_bytes;
    void *scratch; /* grown by rl_cuda_scratch, freed with the context */
    size_t scratch_bytes;
    void **retired; /* earlier scratch buffers a live graph may still read (freed with the last graph) */
    int n_retired;
    int live_graphs; /* instantiated graphs not yet freed */
    double *reduce; /* small device buffer for reductions copied to the host */
    double *reduce_host; /* pinned host mirror of reduce */
    unsigned *split_counters; /* RL_CUDA_SPLIT_COUNTERS zeros between launches (split-KV attention) */
    rl_cuda_matmul_plan *plans; /* cache of cuBLASLt descriptors and algorithms per shape */
    int n_plans;
    struct { int key[4], plan[5]; } rows_plans[32]; /* gemm_rows.cu's tiling per (mode, m, n, k) */
    int n_rows_plans;
} rl_cuda_state;

#define RL_CUDA_REDUCE_SLOTS 4096 /* doubles in rl_cuda_state.reduce */
#define RL_CUDA_SPLIT_COUNTERS 65536

static inline rl_cuda_state *rl_cuda_st(rl_ctx *ctx) { return (rl_cuda_state *)ctx->cuda; }

#define CUDA_CHECK(expr)                                                                     \
    do {                                                                                     \
        cudaError_t rl_e_ = (expr);                                                          \
        if (rl_e_ != cudaSuccess)                                                            \
            return rl_err_set(&ctx->err, "%s:%d: %s: %s", __FILE__, __LINE__, #expr,         \
                              cudaGetErrorString(rl_e_));                                    \
    } while (0)

#define CUBLAS_CHECK(expr)                                                                   \
    do {                                                                                     \
        cublasStatus_t rl_s_ = (expr);                                                       \
        if (rl_s_ != CUBLAS_STATUS_SUCCESS)                                                  \
            return rl_err_set(&ctx->err, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__,  \
                              #expr, (int)rl_s_);                                            \
    } while (0)

#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

/* A launcher's check of a limit of its own kernels (e.g. the largest head_dim), written as
 * backend/ops.c writes its rules: "<what> <value> <problem>" (ops.c puts "rl_<op>: " in front).
 * The rules of the ops' contract are checked once, in ops.c, before any launcher runs. */
#define ARG_CHECK(cond, ...)                                                                 \
    do {                                                                                     \
        if (!(cond)) return rl_err_set(&ctx->err, __VA_ARGS__);                              \
    } while (0)

static inline unsigned rl_cuda_blocks(size_t n, unsigned threads, unsigned cap)
{
    size_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    return b > cap ? cap : (unsigned)b;
}

/* A device buffer of at least `bytes`, valid until the next call (not thread-safe; one op).
 * Inside a graph capture it cannot grow (the op fails with a message saying so): run the
 * captured ops once un-captured first. A buffer that a live graph was captured with stays
 * allocated until the last graph is freed. */
void *rl_cuda_scratch(rl_ctx *ctx, size_t bytes);

/* Programmatic dependent launch (sm_90; CUDA graphs keep it as a programmatic edge): a kernel
 * launched with rl_launch_pdl may be scheduled while the kernel before it in the stream is
 * still finishing, so its launch and block set-up overlap that kernel's tail instead of
 * following it (a decode step is hundreds of short kernels, and these gaps were a large part of
 * it). Such a kernel calls rl_pdl_begin() before it touches global memory: the wait returns
 * once the previous kernel has completed and its writes are visible (so nothing changes in
 * what it reads or when it writes), and the trigger lets the next kernel start setting up. In a
 * kernel launched plainly both are no-ops. */
__device__ __forceinline__ void rl_pdl_begin()
{
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

template <typename... Params, typename... Args>
static inline cudaError_t rl_launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                        cudaStream_t stream, Args... args)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

__device__ __forceinline__ float rl_b2f(bf16 x) { return __bfloat162float(x); }

/* 8 bf16 packed in 16 bytes (one vector load) as fp32. */
__device__ __forceinline__ void rl_unpack_bf16x8(uint4 u, float f[8])
{
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float2 t = __bfloat1622float2(h[j]);
        f[2 * j] = t.x;
        f[2 * j + 1] = t.y;
    }
}
__device__ __forceinline__ bf16 rl_f2b(float x) { return __float2bfloat16_rn(x); }

/* Activation storage of either dtype (ctx->act_dtype: bf16, or fp32 in the fp32 compute mode of
 * small models, ctx.h): kernels templated over the element type T read with rl_tof and write
 * with rl_fromf<T>, so one kernel body serves both. */
__device__ __forceinline__ float rl_tof(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float rl_tof(float x) { return x; }
template <typename T> __device__ __forceinline__ T rl_fromf(float x);
template <> __device__ __forceinline__ bf16 rl_fromf<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ float rl_fromf<float>(float x) { return x; }

/* 1 when the context's activations are fp32 (the launchers' choice of kernel instance). */
static inline int rl_cuda_f32(const rl_ctx *ctx) { return ctx->act_dtype == RL_F32; }
/* The cuBLASLt type of the activations and working weights. */
static inline cudaDataType_t rl_cuda_act_type(const rl_ctx *ctx) { return rl_cuda_f32(ctx) ? CUDA_R_32F : CUDA_R_16BF; }

/* A launcher written once as a template over the element type T (bf16 or float), called with
 * the instance of the context's act dtype: RL_ACT_CALL(ctx, launch, (ctx, ...)). */
#define RL_ACT_CALL(ctx, fn, args) (rl_cuda_f32(ctx) ? fn<float> args : fn<bf16> args)

__device__ __forceinline__ float rl_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float rl_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ double rl_warp_sum_d(double v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Block-wide sum / max; every thread gets the result. blockDim.x a multiple of 32, <= 1024.
 * Uses 32 floats of shared memory; safe to call repeatedly (synchronises before reuse). */
__device__ __forceinline__ float rl_block_sum(float v)
{
    __shared__ float part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = rl_warp_sum(v);
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < n_warps ? part[lane] : 0.0f;
    return rl_warp_sum(v);
}

__device__ __forceinline__ float rl_block_max(float v)
{
    __shared__ float part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = rl_warp_max(v);
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < n_warps ? part[lane] : -INFINITY;
    return rl_warp_max(v);
}

__device__ __forceinline__ double rl_block_sum_d(double v)
{
    __shared__ double part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = rl_warp_sum_d(v);
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < n_warps ? part[lane] : 0.0;
    return rl_warp_sum_d(v);
}

/* elementwise.cu: out[c] += sum over p of partials[p * n + c], p = 0 .. n_parts - 1, in a fixed
 * order (the same bits every run): how the backward's weight and bias gradients combine the
 * per-block partial sums that used to go through float atomics. */
int rl_cuda_add_partials(rl_ctx *ctx, float *out, const float *partials, int n_parts, int n);

/* Internal gemm used by matmul.cu, lm_head.cu: column-major cuBLASLt call
 * D[rows x cols] = alpha * op(A) op(B) + beta * C (D in d_type, A/B in the context's act dtype,
 * fp32 compute: CUBLAS_COMPUTE_32F, no TF32), with C the matrix at c (NULL: D itself; same layout
 * as D), optional bias of the act dtype over rows (epilogue). Plans are cached per shape. */
int rl_cuda_gemm(rl_ctx *ctx, int trans_a, int trans_b, int rows, int cols, int inner, float alpha,
                 const void *a, int lda, const void *b, int ldb, float beta, const void *c, void *d,
                 int ldd, cudaDataType_t d_type, const void *bias);
void rl_cuda_gemm_plans_free(rl_cuda_state *st);
/* rmsnorm.cu: out[m, n] = residual + the sum of `splits` fp32 partial products part[s][m, n]
 * (rounded once), then xn, rstd = RMSNorm of out as stored (bf16; out may be residual). For
 * n a multiple of 4 up to 4096 (rl_cuda_rmsnorm_sum_takes) and splits up to
 * RL_CUDA_SUM_MAX_SPLITS. */
#define RL_CUDA_SUM_MAX_SPLITS 8
int rl_cuda_rmsnorm_sum_takes(int n);
int rl_cuda_rmsnorm_sum_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *residual, const float *part,
                            int splits, const void *norm_weight, int m, int n, float eps);
/* gemv.cu: out[m, n] = in[m, k] weight[n, k]^T (+ bias) (+ residual, may be out) for the few-row
 * products its kernels take (m <= 8; 9..16 through gemm_rows.cu); sets *ran = 0 (and does
 * nothing) for other shapes. */
int rl_cuda_gemv(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight, const void *bias,
                 int m, int n, int k, int *ran);
/* The same product with fp32 out (the few-row lm_head's logits), m <= 8; *ran as above. */
int rl_cuda_gemv_f32(rl_ctx *ctx, float *out, const void *in, const void *weight, int m, int n, int k, int *ran);

/* matmul_det.cu: deterministic mode's batch-invariant forward product, row-major
 * out[m, n] = alpha * in[m, k] weight[n, k]^T (+ bias[n]) (+ residual[m, n]; may be out), one
 * kernel configuration for every m. out (and residual) fp32 when out_f32, else the act dtype. */
int rl_cuda_gemm_det(rl_ctx *ctx, void *out, int out_f32, const void *residual, const void *in, const void *weight,
                     const void *bias, int m, int n, int k, float alpha);

/* Where the keys and values of sequence s live, for the attention forwards (attention.cu,
 * attention_mma.cu), as element offsets of key j's row (all kv heads, row = n_kv_heads *
 * head_dim elements) from the tensor's start. Dense: token-major tensors packed by cu_k (used_k:
 * the keys used, NULL: all). Paged: the engine's block pool (rl_paged_kv: key j in block
 * tables[s * max_blocks + j / block_size], row j % block_size), seqlens_k keys. The kernels are
 * templates over these, so the engine's deterministic attention runs the training forward's
 * arithmetic, not a copy of it. */
struct rl_kv_dense {
    const int32_t *cu_k, *used_k;
    size_t row;
    __device__ __forceinline__ int len(int s) const { return used_k ? used_k[s] : cu_k[s + 1] - cu_k[s]; }
    __device__ __forceinline__ size_t at(int s, int j) const { return (size_t)(cu_k[s] + j) * row; }
};
struct rl_kv_paged {
    const int32_t *tables, *seqlens_k;
    int max_blocks, block_size;
    size_t block_stride, row;
    __device__ __forceinline__ int len(int s) const { return seqlens_k[s]; }
    __device__ __forceinline__ size_t at(int s, int j) const
    {
        return (size_t)tables[(size_t)s * max_blocks + j / block_size] * block_stride + (size_t)(j % block_size) * row;
    }
};
/* attention.cu: deterministic mode's paged attention (rl_paged_attention_fwd's contract): the
 * training forward's kernels (tensor-core or general, chosen as rl_attention_fwd chooses them)
 * over the pool, so each query row gets the training forward's bits. */
int rl_cuda_attention_fwd_paged(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv, const int32_t *cu_q,
                                const int32_t *seqlens_k, int n_seqs, int max_seqlen_q, int n_heads, int n_kv_heads,
                                int head_dim, float scale);
/* attention_mma.cu: the tensor-core forward for head_dim 64/128; sets *ran = 0 (and does
 * nothing) for shapes it does not take. paged (NULL: dense q/k/v by cu_k, used_k) reads the
 * keys and values from the pool instead (lse may then be NULL). */
int rl_cuda_attention_fwd_mma(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v,
                              const int32_t *cu_q, const int32_t *cu_k, const int32_t *used_k, int n_seqs,
                              int max_seqlen_q, int n_heads, int n_kv_heads, int head_dim, float scale, int causal,
                              const rl_kv_paged *paged, int *ran);
/* paged_attention_prefill.cu: the tensor-core part of the paged attention for head_dim 64/128,
 * over the sequences with more than min_rows packed (query, group head) rows. */
int rl_cuda_paged_prefill_mma(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv, const int32_t *cu_q,
                              const int32_t *seqlens_k, int n_seqs, int max_seqlen_q, int n_heads, int n_kv_heads,
                              int head_dim, float scale, int min_rows);
/* attention_mma_bwd.cu: the tensor-core backward for head_dim 64/128 (dsum = dout . out), for
 * rl_attention_bwd's shapes (ops.h). */
struct attn_bwd_shape {
    const int32_t *cu_q, *cu_k; /* device */
    int n_seqs, max_seqlen_q, max_seqlen_k, n_heads, n_kv_heads, head_dim;
    float scale;
    int causal;
};
int rl_cuda_attention_bwd_mma(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const float *lse,
                              const float *dsum, const void *q, const void *k, const void *v,
                              const attn_bwd_shape *sh, int *ran);

#endif
