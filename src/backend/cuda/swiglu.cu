/* swiglu.cu — out = silu(gate) * up and its backward, with gate/up rows in_stride apart.
 *
 * silu(g) = g * s, s = sigmoid(g);  d out/d gate = up * s * (1 + g * (1 - s)),
 * d out/d up = g * s. One thread per output element (grid-stride), fp32 math. */
#include "backend/cuda/common.cuh"

__global__ void swiglu_fwd_kernel(bf16 *out, const bf16 *gate, const bf16 *up, int n_rows, int dim,
                                  int in_stride)
{
    size_t n = (size_t)n_rows * dim;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t row = idx / dim, col = idx % dim, in = row * in_stride + col;
        float g = rl_b2f(gate[in]);
        float s = 1.0f / (1.0f + expf(-g));
        out[idx] = rl_f2b(g * s * rl_b2f(up[in]));
    }
}

__global__ void swiglu_bwd_kernel(bf16 *dgate, bf16 *dup, const bf16 *dout, const bf16 *gate,
                                  const bf16 *up, int n_rows, int dim, int in_stride)
{
    size_t n = (size_t)n_rows * dim;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t row = idx / dim, col = idx % dim, in = row * in_stride + col;
        float g = rl_b2f(gate[in]), u = rl_b2f(up[in]), d = rl_b2f(dout[idx]);
        float s = 1.0f / (1.0f + expf(-g));
        dgate[in] = rl_f2b(d * u * s * (1.0f + g * (1.0f - s)));
        dup[in] = rl_f2b(d * g * s);
    }
}

extern "C" int rl_cuda_swiglu_fwd(rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows,
                                  int dim, int in_stride)
{
    ARG_CHECK(n_rows >= 0 && dim > 0 && in_stride >= dim,
              "rl_cuda_swiglu_fwd: bad shape n_rows=%d dim=%d in_stride=%d", n_rows, dim, in_stride);
    size_t n = (size_t)n_rows * dim;
    if (n == 0) return 0;
    swiglu_fwd_kernel<<<rl_cuda_blocks(n, 256, 65535), 256, 0, rl_cuda_st(ctx)->stream>>>(
        (bf16 *)out, (const bf16 *)gate, (const bf16 *)up, n_rows, dim, in_stride);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_swiglu_bwd(rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate,
                                  const void *up, int n_rows, int dim, int in_stride)
{
    ARG_CHECK(n_rows >= 0 && dim > 0 && in_stride >= dim,
              "rl_cuda_swiglu_bwd: bad shape n_rows=%d dim=%d in_stride=%d", n_rows, dim, in_stride);
    size_t n = (size_t)n_rows * dim;
    if (n == 0) return 0;
    swiglu_bwd_kernel<<<rl_cuda_blocks(n, 256, 65535), 256, 0, rl_cuda_st(ctx)->stream>>>(
        (bf16 *)dgate, (bf16 *)dup, (const bf16 *)dout, (const bf16 *)gate, (const bf16 *)up, n_rows, dim,
        in_stride);
    LAUNCH_CHECK();
    return 0;
}
