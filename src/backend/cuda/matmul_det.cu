/* matmul_det.cu — the forward products of deterministic mode (ctx->deterministic, backend/ctx.h):
 * out[m, n] = alpha * in[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]), with ONE kernel
 * configuration whatever m is, so a row's bits never depend on how many rows share its call
 * (cuBLASLt picks tiles and split-K by shape, gemv.cu serves a few rows: neither is
 * batch-invariant).
 *
 * Each output is summed over k in one fixed order, in one thread's fp32 accumulator (no split-K,
 * no reduction across blocks); m only changes how many blocks run:
 *  - tensor cores (bf16, k a multiple of 8, 16-byte aligned operands): blocks of 4 warps own
 *    64 rows x 64 columns; k walks in steps of 64 through swizzled shared-memory tiles
 *    (cp.async, double-buffered), each step 4 mma.sync m16n8k16 per output in k order. Rows
 *    and columns past the end are zero-filled and not written.
 *  - CUDA cores (the fp32 mode, other shapes): 16 x 16 outputs a block, one per thread, k in
 *    order through 16-wide shared tiles.
 * The epilogue is the same for every row: v = alpha * acc, + bias, + residual (fp32), one
 * rounding to the output type. About 2-4x slower than cuBLASLt at training shapes and than
 * gemv.cu at decode shapes (docs/benchmarks.md). */
#include "backend/cuda/mma.cuh"

#define DT_M 64
#define DT_N 64
#define DT_K 64
#define DT_WARPS 4
#define DT_THREADS (DT_WARPS * 32)
#define ST 16 /* CUDA-core kernel: outputs per block side and k per shared tile */

/* Rows [r0, r0 + 64) x k-columns [k0, k0 + 64) of a [rows x k] bf16 matrix into a swizzled tile;
 * rows past n_rows and columns past k are zero (k is a multiple of 8). */
__device__ __forceinline__ void dt_load(bf16 *tile, const bf16 *src, int r0, int n_rows, int k0, int k)
{
    constexpr int CHUNKS = DT_K / 8;
    for (int idx = threadIdx.x; idx < DT_M * CHUNKS; idx += DT_THREADS) {
        int r = idx / CHUNKS, ch = idx % CHUNKS;
        bool valid = r0 + r < n_rows && k0 + ch * 8 < k;
        const bf16 *g = src + (valid ? (size_t)(r0 + r) * k + k0 + ch * 8 : 0);
        cp_async16(tile + swz<DT_K>(r, ch * 8), g, valid);
    }
}

template <typename TO>
__device__ __forceinline__ float dt_epilogue(float acc, float alpha, const bf16 *bias, const TO *residual, int r,
                                             int c, int n)
{
    float v = alpha * acc;
    if (bias) v += rl_tof(bias[c]);
    if (residual) v += rl_tof(residual[(size_t)r * n + c]);
    return v;
}

template <typename TO>
__global__ void __launch_bounds__(DT_THREADS) gemm_det_mma_kernel(TO *out, const TO *residual, const bf16 *in,
                                                                  const bf16 *w, const bf16 *bias, int m, int n,
                                                                  int k, float alpha)
{
    __shared__ __align__(128) bf16 as[2][DT_M * DT_K];
    __shared__ __align__(128) bf16 bs[2][DT_N * DT_K];
    int n0 = blockIdx.x * DT_N, m0 = blockIdx.y * DT_M;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float c[DT_N / 8][4];
#pragma unroll
    for (int i = 0; i < DT_N / 8; i++) c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.0f;
    int n_steps = (k + DT_K - 1) / DT_K;
    dt_load(as[0], in, m0, m, 0, k);
    dt_load(bs[0], w, n0, n, 0, k);
    cp_async_commit();
    for (int s = 0; s < n_steps; s++) {
        int buf = s & 1;
        if (s + 1 < n_steps) {
            dt_load(as[buf ^ 1], in, m0, m, (s + 1) * DT_K, k);
            dt_load(bs[buf ^ 1], w, n0, n, (s + 1) * DT_K, k);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        mma_a_smem_tile_t<DT_K, DT_N / 8>(c, as[buf], warp * 16, bs[buf]);
        __syncthreads();
    }
    int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int nt = 0; nt < DT_N / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int r = m0 + warp * 16 + g + (e >> 1) * 8, col = n0 + nt * 8 + tq * 2 + (e & 1);
            if (r < m && col < n) out[(size_t)r * n + col] = rl_fromf<TO>(dt_epilogue(c[nt][e], alpha, bias, residual, r, col, n));
        }
}

template <typename T, typename TO>
__global__ void gemm_det_simt_kernel(TO *out, const TO *residual, const T *in, const T *w, const T *bias, int m,
                                     int n, int k, float alpha)
{
    __shared__ float a_s[ST][ST + 1], b_s[ST][ST + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * ST + ty, col = blockIdx.x * ST + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += ST) {
        int ar = blockIdx.y * ST + ty, br = blockIdx.x * ST + ty;
        a_s[ty][tx] = ar < m && k0 + tx < k ? rl_tof(in[(size_t)ar * k + k0 + tx]) : 0.0f;
        b_s[ty][tx] = br < n && k0 + tx < k ? rl_tof(w[(size_t)br * k + k0 + tx]) : 0.0f;
        __syncthreads();
        for (int j = 0; j < ST; j++) acc = fmaf(a_s[ty][j], b_s[tx][j], acc);
        __syncthreads();
    }
    if (r >= m || col >= n) return;
    float v = alpha * acc;
    if (bias) v += rl_tof(bias[col]);
    if (residual) v += rl_tof(residual[(size_t)r * n + col]);
    out[(size_t)r * n + col] = rl_fromf<TO>(v);
}

template <typename T, typename TO>
static int gemm_det(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight, const void *bias,
                    int m, int n, int k, float alpha)
{
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    uintptr_t align = (uintptr_t)in | (uintptr_t)weight;
    if (sizeof(T) == 2 && k % 8 == 0 && (align & 15) == 0) {
        dim3 grid((n + DT_N - 1) / DT_N, (m + DT_M - 1) / DT_M);
        gemm_det_mma_kernel<TO><<<grid, DT_THREADS, 0, st>>>((TO *)out, (const TO *)residual, (const bf16 *)in,
                                                             (const bf16 *)weight, (const bf16 *)bias, m, n, k, alpha);
    } else {
        dim3 grid((n + ST - 1) / ST, (m + ST - 1) / ST);
        gemm_det_simt_kernel<T, TO><<<grid, dim3(ST, ST), 0, st>>>((TO *)out, (const TO *)residual, (const T *)in,
                                                                   (const T *)weight, (const T *)bias, m, n, k, alpha);
    }
    LAUNCH_CHECK();
    return 0;
}

int rl_cuda_gemm_det(rl_ctx *ctx, void *out, int out_f32, const void *residual, const void *in, const void *weight,
                     const void *bias, int m, int n, int k, float alpha)
{
    if (m == 0 || n == 0) return 0;
    if (rl_cuda_f32(ctx)) return gemm_det<float, float>(ctx, out, residual, in, weight, bias, m, n, k, alpha);
    if (out_f32) return gemm_det<bf16, float>(ctx, out, residual, in, weight, bias, m, n, k, alpha);
    return gemm_det<bf16, bf16>(ctx, out, residual, in, weight, bias, m, n, k, alpha);
}
