/* cpu_internal.h — helpers shared by the files of the CPU backend (not part of its interface):
 * the OpenMP thread count a context asks for, and the packed, cache-blocked fp32 matrix product
 * that matmul.c, attention.c and lm_head.c build on. (Argument checks are backend/ops.c's.) */
#ifndef RL_BACKEND_CPU_INTERNAL_H
#define RL_BACKEND_CPU_INTERNAL_H

#include <omp.h>
#include <stddef.h>

#include "backend/ctx.h"

/* Threads for a loop over `work` units (elements touched, or multiply-adds / 32): 1 below
 * CPU_MIN_PARALLEL_WORK, where a parallel region costs more than it saves (and far more when
 * other processes hold the cores: threads then wait a whole time slice at its barrier);
 * otherwise ctx->n_threads, or the OpenMP default when that is 0. */
enum { CPU_MIN_PARALLEL_WORK = 1 << 15 };

static inline int cpu_threads(const rl_ctx *ctx, double work)
{
    if (work < CPU_MIN_PARALLEL_WORK) return 1;
    return ctx->n_threads > 0 ? ctx->n_threads : omp_get_max_threads();
}

/* C[M, N] (+)= A[M, K] B[K, N], where A(i, p) = a[i * a_rs + p * a_cs] and B(p, j) =
 * b[p * b_rs + j * b_cs]: the strides let one routine serve x W^T, dY W and dY^T X without
 * transposing anything in memory. C is row-major with leading dimension ldc; accumulate = 0
 * overwrites it. Returns -1 only when its packing buffers cannot be allocated (message in err). */
typedef struct cpu_gemm_args {
    int m, n, k;
    const float *a;
    ptrdiff_t a_rs, a_cs;
    const float *b;
    ptrdiff_t b_rs, b_cs;
    float *c;
    ptrdiff_t ldc;
    int accumulate;
} cpu_gemm_args;

/* Parallel over tiles of C with n_threads OpenMP threads. */
int cpu_gemm(const cpu_gemm_args *g, int n_threads, rl_err *err);
/* The same on the calling thread only, with caller-provided packing buffers of
 * cpu_gemm_scratch_floats() floats (for use inside a parallel region). */
size_t cpu_gemm_scratch_floats(void);
void cpu_gemm_serial(const cpu_gemm_args *g, float *scratch);

/* Attention of TQ (or fewer) consecutive queries of one head against one kv head's keys, the
 * forward's inner step (attention.c), shared by the varlen and the paged attention: queries
 * i0 .. i0 + tq of a sequence with len_q queries and len_k keys (causal: bottom-right
 * aligned). q, k, v, out are row-strided views; lse (may be NULL) gets one value per query,
 * lse_stride apart. p: CPU_ATTENTION_TILE_FLOATS(len_k) floats; gemm_scratch:
 * cpu_gemm_scratch_floats(). */
enum { CPU_ATTENTION_TQ = 64 };
#define CPU_ATTENTION_TILE_FLOATS(max_len_k) ((size_t)CPU_ATTENTION_TQ * ((max_len_k) > 0 ? (size_t)(max_len_k) : 1))
typedef struct cpu_attention_tile_args {
    const float *q, *k, *v;
    float *out, *lse;
    ptrdiff_t q_row, kv_row, out_row, lse_stride;
    int i0, tq, len_q, len_k, head_dim;
    float scale;
    int causal;
} cpu_attention_tile_args;
void cpu_attention_tile(const cpu_attention_tile_args *t, float *p, float *gemm_scratch);

#endif
