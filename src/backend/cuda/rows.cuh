/* rows.cuh — what the few-row forward products share (gemv.cu: at most 8 rows on CUDA cores;
 * gemm_rows.cu: 9..16 rows on tensor cores): the op before the product that they fold in, and
 * their arguments. The input rows are used as they are (RL_ROWS_PLAIN), RMSNorm-ed with
 * norm_weight (RL_ROWS_RMSNORM: the op's xn and rstd written to x_out / rstd_out), or made
 * SwiGLU(x, up) (RL_ROWS_SWIGLU: act written to x_out). */
#ifndef RL_BACKEND_CUDA_ROWS_CUH
#define RL_BACKEND_CUDA_ROWS_CUH

#include "backend/cuda/common.cuh"

enum { RL_ROWS_PLAIN, RL_ROWS_RMSNORM, RL_ROWS_SWIGLU };

typedef struct rl_rows_args {
    bf16 *out;                    /* [m, n] */
    float *out_f32;               /* gemv.cu: [m, n] in fp32 instead of out (no bias, no residual) */
    const bf16 *weight;           /* [n, k] */
    const bf16 *bias, *residual;  /* [n], [m, n]; may be NULL; residual may be out */
    const bf16 *x, *up;           /* input rows x_stride apart (SwiGLU: x is the gate) */
    int x_stride;
    const bf16 *norm_weight;      /* RMSNorm [k] */
    float eps;
    bf16 *x_out;                  /* [m, k]: xn or act (may be NULL) */
    float *rstd_out;              /* RMSNorm [m] */
    int n, k;
    int rows;                     /* gemv.cu: weight rows per block */
    int kc;                       /* gemm_rows.cu: k per split (a multiple of 64) */
} rl_rows_args;

/* gemm_rows.cu: out = the product for 9..16 rows; sets *ran = 0 (and does nothing) for shapes
 * it does not take. */
int rl_cuda_gemm_rows(rl_ctx *ctx, int mode, rl_rows_args a, int m, int *ran);

#endif
