/* matmul_det.cu — the forward products of deterministic mode (ctx->deterministic, backend/ctx.h):
 * out[m, n] = alpha * in[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]), with ONE chain of
 * operations per output whatever m is (the tile shape follows m, that chain does not), so a
 * row's bits never depend on how many rows share its call
 * (cuBLASLt picks tiles and split-K by shape, gemv.cu serves a few rows: neither is
 * batch-invariant).
 *
 * Each output is summed over k in one fixed order, in one thread's fp32 accumulator (no split-K,
 * no reduction across blocks):
 *  - tensor cores (bf16, k a multiple of 8, 16-byte aligned operands): blocks of 4 warps own
 *    64 rows x 64 columns (many rows) or 64 x 16 (few rows: 4x the blocks, 8 pipeline stages);
 *    k walks in steps of 64 through swizzled shared-memory tiles (cp.async), each step 4
 *    mma.sync m16n8k16 per output in k order, so both tile shapes give the same bits (below).
 *    Rows and columns past the end are zero-filled and not written.
 *  - CUDA cores (the fp32 mode, other shapes): 16 x 16 outputs a block, one per thread, k in
 *    order through 16-wide shared tiles.
 * The epilogue is the same for every row: v = alpha * acc, + bias, + residual (fp32), one
 * rounding to the output type. Slower than cuBLASLt at training shapes and than gemv.cu at
 * decode shapes (docs/benchmarks.md). */
#include "backend/cuda/mma.cuh"

#define DT_K 64 /* k per pipeline stage: every configuration walks k in these steps, 4 mma each */
#define DT_WARPS 4
#define DT_THREADS (DT_WARPS * 32)
#define ST 16 /* CUDA-core kernel: outputs per block side and k per shared tile */

/* Tensor-core configurations: a block of 4 warps owns 64 rows x 8*NT columns, STAGES k-steps
 * in flight. Only the grid and the pipeline differ: every output is the same chain of
 * m16n8k16 mma.sync into one fp32 accumulator, k in steps of 16 from 0 (zero-filled past k up
 * to the next multiple of 64), and an mma's output element depends only on its own row of A and
 * column of B, so the bits of a row are the same in every configuration (test_deterministic
 * checks it: calls of 1-64 rows take the narrow one, 1000 rows the wide one).
 *  - wide (NT 8, 64 columns, 3 stages, 48 KiB): many rows (training, prefill, the lm_head);
 *  - narrow (NT 2, 16 columns, 8 stages, 80 KiB): few rows (decode), where the wide tiles gave
 *    n/64 blocks (16-48 on 132 SMs) with one k-step in flight: 4x the blocks, 7 steps in
 *    flight each. */
template <int NT, int STAGES> struct dt_cfg {
    static constexpr int BN = 8 * NT;
    static constexpr int STAGE = (64 + BN) * DT_K; /* bf16 elements of one stage: A tile, then B tile */
    static constexpr size_t SMEM = (size_t)STAGES * STAGE * sizeof(bf16);
};

/* Rows [r0, r0 + ROWS) x k-columns [k0, k0 + 64) of a [rows x k] bf16 matrix into a swizzled
 * tile; rows past n_rows and columns past k are zero (k is a multiple of 8). */
template <int ROWS>
__device__ __forceinline__ void dt_load(bf16 *tile, const bf16 *src, int r0, int n_rows, int k0, int k)
{
    constexpr int CHUNKS = DT_K / 8;
    for (int idx = threadIdx.x; idx < ROWS * CHUNKS; idx += DT_THREADS) {
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

/* Step s of the k walk into stage buffer s % STAGES (nothing past the last step). */
template <int NT, int STAGES>
__device__ __forceinline__ void dt_stage(bf16 *smem, const bf16 *in, const bf16 *w, int m0, int m, int n0, int n,
                                         int k, int s, int n_steps)
{
    using C = dt_cfg<NT, STAGES>;
    if (s < n_steps) {
        bf16 *a = smem + (size_t)(s % STAGES) * C::STAGE;
        dt_load<64>(a, in, m0, m, s * DT_K, k);
        dt_load<C::BN>(a + 64 * DT_K, w, n0, n, s * DT_K, k);
    }
    cp_async_commit(); /* an empty group past the end keeps the wait counts uniform */
}

template <typename TO, int NT, int STAGES>
__global__ void __launch_bounds__(DT_THREADS) gemm_det_mma_kernel(TO *out, const TO *residual, const bf16 *in,
                                                                  const bf16 *w, const bf16 *bias, int m, int n,
                                                                  int k, float alpha)
{
    using C = dt_cfg<NT, STAGES>;
    extern __shared__ __align__(128) unsigned char dt_smem[];
    bf16 *smem = (bf16 *)dt_smem;
    int n0 = blockIdx.x * C::BN, m0 = blockIdx.y * 64;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float c[NT][4];
#pragma unroll
    for (int i = 0; i < NT; i++) c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.0f;
    int n_steps = (k + DT_K - 1) / DT_K;
    for (int s = 0; s < STAGES - 1; s++) dt_stage<NT, STAGES>(smem, in, w, m0, m, n0, n, k, s, n_steps);
    for (int s = 0; s < n_steps; s++) {
        cp_async_wait<STAGES - 2>(); /* step s has landed */
        __syncthreads();             /* ... for every thread, and step s - 1's buffer is free */
        dt_stage<NT, STAGES>(smem, in, w, m0, m, n0, n, k, s + STAGES - 1, n_steps);
        const bf16 *a = smem + (size_t)(s % STAGES) * C::STAGE;
        mma_a_smem_tile_t<DT_K, NT>(c, a, warp * 16, a + 64 * DT_K);
    }
    int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int r = m0 + warp * 16 + g + (e >> 1) * 8, col = n0 + nt * 8 + tq * 2 + (e & 1);
            if (r < m && col < n) out[(size_t)r * n + col] = rl_fromf<TO>(dt_epilogue(c[nt][e], alpha, bias, residual, r, col, n));
        }
}

template <typename TO, int NT, int STAGES>
static cudaError_t gemm_det_mma(cudaStream_t st, TO *out, const TO *residual, const bf16 *in, const bf16 *w,
                                const bf16 *bias, int m, int n, int k, float alpha)
{
    using C = dt_cfg<NT, STAGES>;
    cudaError_t e = cudaFuncSetAttribute(gemm_det_mma_kernel<TO, NT, STAGES>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM);
    if (e != cudaSuccess) return e;
    dim3 grid((n + C::BN - 1) / C::BN, (m + 63) / 64);
    gemm_det_mma_kernel<TO, NT, STAGES><<<grid, DT_THREADS, C::SMEM, st>>>(out, residual, in, w, bias, m, n, k, alpha);
    return cudaSuccess;
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
        /* the wide tiles while they give two blocks per multiprocessor, else the narrow ones */
        int n_sms = rl_cuda_st(ctx)->n_sms > 0 ? rl_cuda_st(ctx)->n_sms : 132;
        long wide_blocks = (long)((m + 63) / 64) * ((n + 63) / 64);
        cudaError_t e = wide_blocks >= 2L * n_sms
                            ? gemm_det_mma<TO, 8, 3>(st, (TO *)out, (const TO *)residual, (const bf16 *)in,
                                                     (const bf16 *)weight, (const bf16 *)bias, m, n, k, alpha)
                            : gemm_det_mma<TO, 2, 8>(st, (TO *)out, (const TO *)residual, (const bf16 *)in,
                                                     (const bf16 *)weight, (const bf16 *)bias, m, n, k, alpha);
        CUDA_CHECK(e);
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
