/* swiglu.cu — out = silu(gate) * up and its backward, with gate/up rows in_stride apart.
 *
 * silu(g) = g * s, s = sigmoid(g);  d out/d gate = up * s * (1 + g * (1 - s)),
 * d out/d up = g * s. fp32 math. Fast path (dim and in_stride multiples of 8, 16-byte aligned
 * tensors, fewer than 2^31 chunks: the models' MLPs): one thread per 8 elements with 16-byte
 * loads and stores and 32-bit index arithmetic (bf16 only); otherwise, and in the fp32 mode,
 * one thread per element (templated over the act dtype). */
#include "backend/cuda/common.cuh"

typedef struct bf16x8 {
    __nv_bfloat162 h[4];
} bf16x8;

__device__ __forceinline__ float silu_sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void swiglu_fwd_vec_kernel(uint4 *out, const uint4 *gate, const uint4 *up, unsigned n_chunks,
                                      unsigned row_chunks, unsigned stride_chunks)
{
    rl_pdl_begin();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n_chunks; i += gridDim.x * blockDim.x) {
        unsigned row = i / row_chunks, in = row * stride_chunks + (i - row * row_chunks);
        uint4 gu = gate[in], uu = up[in], ou;
        const __nv_bfloat162 *g2 = (const __nv_bfloat162 *)&gu, *u2 = (const __nv_bfloat162 *)&uu;
        __nv_bfloat162 *o2 = (__nv_bfloat162 *)&ou;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 g = __bfloat1622float2(g2[j]), u = __bfloat1622float2(u2[j]);
            o2[j] = __floats2bfloat162_rn(g.x * silu_sigmoid(g.x) * u.x, g.y * silu_sigmoid(g.y) * u.y);
        }
        out[i] = ou;
    }
}

__global__ void swiglu_bwd_vec_kernel(uint4 *dgate, uint4 *dup, const uint4 *dout, const uint4 *gate,
                                      const uint4 *up, unsigned n_chunks, unsigned row_chunks,
                                      unsigned stride_chunks)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n_chunks; i += gridDim.x * blockDim.x) {
        unsigned row = i / row_chunks, in = row * stride_chunks + (i - row * row_chunks);
        uint4 gu = gate[in], uu = up[in], du = dout[i], dgu, duu;
        const __nv_bfloat162 *g2 = (const __nv_bfloat162 *)&gu, *u2 = (const __nv_bfloat162 *)&uu;
        const __nv_bfloat162 *d2 = (const __nv_bfloat162 *)&du;
        __nv_bfloat162 *dg2 = (__nv_bfloat162 *)&dgu, *du2 = (__nv_bfloat162 *)&duu;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 g = __bfloat1622float2(g2[j]), u = __bfloat1622float2(u2[j]), d = __bfloat1622float2(d2[j]);
            float sx = silu_sigmoid(g.x), sy = silu_sigmoid(g.y);
            dg2[j] = __floats2bfloat162_rn(d.x * u.x * sx * (1.0f + g.x * (1.0f - sx)),
                                           d.y * u.y * sy * (1.0f + g.y * (1.0f - sy)));
            du2[j] = __floats2bfloat162_rn(d.x * g.x * sx, d.y * g.y * sy);
        }
        dgate[in] = dgu;
        dup[in] = duu;
    }
}

/* 1 when the 8-wide path applies. */
static int vec_ok(size_t n, int dim, int in_stride, const void *a, const void *b, const void *c, const void *d,
                  const void *e)
{
    if (dim % 8 || in_stride % 8 || n / 8 + (size_t)in_stride >= 0x7fffffffu) return 0;
    if ((size_t)(n / dim) * (size_t)in_stride / 8 >= 0x7fffffffu) return 0;
    return !(((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d | (uintptr_t)e) & 15);
}

template <typename T>
__global__ void swiglu_fwd_kernel(T *out, const T *gate, const T *up, int n_rows, int dim, int in_stride)
{
    size_t n = (size_t)n_rows * dim;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t row = idx / dim, col = idx % dim, in = row * in_stride + col;
        float g = rl_tof(gate[in]);
        float s = 1.0f / (1.0f + expf(-g));
        out[idx] = rl_fromf<T>(g * s * rl_tof(up[in]));
    }
}

template <typename T>
__global__ void swiglu_bwd_kernel(T *dgate, T *dup, const T *dout, const T *gate, const T *up, int n_rows, int dim,
                                  int in_stride)
{
    size_t n = (size_t)n_rows * dim;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        size_t row = idx / dim, col = idx % dim, in = row * in_stride + col;
        float g = rl_tof(gate[in]), u = rl_tof(up[in]), d = rl_tof(dout[idx]);
        float s = 1.0f / (1.0f + expf(-g));
        dgate[in] = rl_fromf<T>(d * u * s * (1.0f + g * (1.0f - s)));
        dup[in] = rl_fromf<T>(d * g * s);
    }
}

extern "C" int rl_cuda_swiglu_fwd(rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows,
                                  int dim, int in_stride)
{
    size_t n = (size_t)n_rows * dim;
    if (n == 0) return 0;
    if (!rl_cuda_f32(ctx) && vec_ok(n, dim, in_stride, out, gate, up, up, up)) {
        unsigned chunks = (unsigned)(n / 8);
        CUDA_CHECK(rl_launch_pdl(swiglu_fwd_vec_kernel, dim3(rl_cuda_blocks(chunks, 256, 65535)), dim3(256), 0,
                                 rl_cuda_st(ctx)->stream, (uint4 *)out, (const uint4 *)gate, (const uint4 *)up, chunks,
                                 (unsigned)dim / 8, (unsigned)in_stride / 8));
        LAUNCH_CHECK();
        return 0;
    }
    unsigned blocks = rl_cuda_blocks(n, 256, 65535);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    if (rl_cuda_f32(ctx))
        swiglu_fwd_kernel<float><<<blocks, 256, 0, st>>>((float *)out, (const float *)gate, (const float *)up, n_rows,
                                                         dim, in_stride);
    else
        swiglu_fwd_kernel<bf16><<<blocks, 256, 0, st>>>((bf16 *)out, (const bf16 *)gate, (const bf16 *)up, n_rows,
                                                        dim, in_stride);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_swiglu_bwd(rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate,
                                  const void *up, int n_rows, int dim, int in_stride)
{
    size_t n = (size_t)n_rows * dim;
    if (n == 0) return 0;
    if (!rl_cuda_f32(ctx) && vec_ok(n, dim, in_stride, dgate, dup, dout, gate, up)) {
        unsigned chunks = (unsigned)(n / 8);
        swiglu_bwd_vec_kernel<<<rl_cuda_blocks(chunks, 256, 65535), 256, 0, rl_cuda_st(ctx)->stream>>>(
            (uint4 *)dgate, (uint4 *)dup, (const uint4 *)dout, (const uint4 *)gate, (const uint4 *)up, chunks,
            (unsigned)dim / 8, (unsigned)in_stride / 8);
        LAUNCH_CHECK();
        return 0;
    }
    unsigned blocks = rl_cuda_blocks(n, 256, 65535);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    if (rl_cuda_f32(ctx))
        swiglu_bwd_kernel<float><<<blocks, 256, 0, st>>>((float *)dgate, (float *)dup, (const float *)dout,
                                                         (const float *)gate, (const float *)up, n_rows, dim,
                                                         in_stride);
    else
        swiglu_bwd_kernel<bf16><<<blocks, 256, 0, st>>>((bf16 *)dgate, (bf16 *)dup, (const bf16 *)dout,
                                                        (const bf16 *)gate, (const bf16 *)up, n_rows, dim, in_stride);
    LAUNCH_CHECK();
    return 0;
}
