/* matmul_small_m.cuh — the tensor-core product for forward products of 9 to SMALL_M_MAX rows
 * (matmul_small_m.cu), which matmul.cu's forward entry points try before cuBLASLt. */
#ifndef RL_BACKEND_CUDA_MATMUL_SMALL_M_CUH
#define RL_BACKEND_CUDA_MATMUL_SMALL_M_CUH

#include "backend/cuda/common.cuh"

#define SMALL_M_MAX 256

/* out[m, n] = in[m, k] . weight[n, k]^T (+ bias) (+ residual; may be out) in bf16 with fp32
 * accumulation. *ran = 1 when it ran, 0 when the shape or alignment is not its (m above
 * SMALL_M_MAX, k not a multiple of 8, in or weight not 16-byte aligned). -1 on a CUDA error. */
int rl_cuda_matmul_small_m(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight,
                           const void *bias, int m, int n, int k, int *ran);

#endif
