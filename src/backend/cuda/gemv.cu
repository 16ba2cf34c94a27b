/* gemv.cu — products of at most GEMV_MAX_M rows (a decode step of a few sequences), and the
 * fused forms of ops.h that fold the op before a product into it: rl_rmsnorm_matmul_fwd
 * (RMSNorm, then the product) and rl_swiglu_matmul_residual_fwd (SwiGLU, then the residual
 * product). matmul.cu sends its forward products of at most GEMV_MAX_M rows here, and lm_head.cu
 * its few-row logits (rl_cuda_gemv_f32: the plain product written in fp32).
 *
 * Such a product only reads its weight (a few MB) once, so its time is the time to stream the
 * weight, plus the launch and the ramp. The idea: keep the whole weight in flight at once.
 *  - A block (256 threads) owns `rows` consecutive weight rows; the 256 / rows threads of one row
 *    split its 16-byte pieces (thread t takes pieces t, t + 256 / rows, ...). rows is chosen on
 *    the host so that a thread issues at most GEMV_LOADS loads and the grid still has at least
 *    one block per multiprocessor (o_proj, down: 4 rows per block, 64 threads per row; q|k|v,
 *    gate|up: 16 rows, 16 threads per row). Every load of a round is issued before the first is
 *    used; for the model's shapes one round covers the whole weight.
 *  - The first round's weight loads are issued BEFORE the programmatic-dependent-launch wait:
 *    the weights are not written by any kernel of a decode step (nor by anything still running
 *    when a step starts), so they stream in while the previous kernel finishes; only the input
 *    rows wait for it.
 *    (The norm weight of the RMSNorm mode is fetched there too.)
 *  - After the wait the block stages its input rows in shared memory once, transformed as the
 *    mode says: plain; RMSNorm (each warp w < m computes row w's rstd with the same lanes, order
 *    and rounding as rmsnorm.cu's warp-per-row kernel, so xn is the bf16 value rl_rmsnorm_fwd
 *    writes); SwiGLU (silu(g) * u rounded to bf16, swiglu.cu's expression). Block 0 also writes
 *    the staged rows (and rstd) out: the op's xn / act outputs.
 *  - Sums in fp32, reduced over the row's threads by shuffles (and shared memory when a row has
 *    more than one warp); bias and residual added in fp32, one bf16 rounding.
 * More rows than GEMV_MAX_M go to gemm_rows.cu (tensor cores, the same folds). Shapes neither
 * takes (k not a multiple of 8, misaligned rows, staged rows over GEMV_SMEM_MAX, more than
 * gemm_rows.cu's rows) go to cuBLASLt, or for the fused ops to the two ops. */
#include "backend/cuda/rows.cuh"

#define GEMV_MAX_M 8
#define GEMV_THREADS 256
#define GEMV_LOADS 8                /* 16-byte weight loads per thread per round */
#define GEMV_SMEM_MAX (96 * 1024)   /* staged input rows, bytes */

enum { X_PLAIN = RL_ROWS_PLAIN, X_RMSNORM = RL_ROWS_RMSNORM, X_SWIGLU = RL_ROWS_SWIGLU };

typedef rl_rows_args gemv_args;

__device__ __forceinline__ uint4 gv_pack(const float f[8])
{
    uint4 u;
    __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
    for (int j = 0; j < 4; j++) h[j] = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
    return u;
}

/* One round of a thread's weight pieces c0, c0 + tpr, ... (zeros past the row or the end). */
__device__ __forceinline__ void gv_load(uint4 wv[GEMV_LOADS], const uint4 *wr, int c0, int tpr, int chunks, bool ok)
{
#pragma unroll
    for (int u = 0; u < GEMV_LOADS; u++) {
        int c = c0 + u * tpr;
        wv[u] = ok && c < chunks ? __ldcs(wr + c) : make_uint4(0, 0, 0, 0);
    }
}

/* RMSNorm: the norm weight's pieces threadIdx.x + GEMV_THREADS * i, fetched before the wait. */
#define GEMV_NORM_REGS 2

/* The m input rows, transformed by MODE, into xs [M][chunks] (and out through block 0).
 * RMSNorm: the raw rows first, then warp w < M sums row w's squares from shared memory with
 * rmsnorm.cu's lane order, then the rows are normalised in place. */
template <int M, int MODE>
__device__ __forceinline__ void gv_stage(const gemv_args &a, uint4 *xs, int chunks,
                                         const uint4 nw[GEMV_NORM_REGS])
{
    __shared__ float rstd_s[M];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    bool writer = blockIdx.x == 0 && a.x_out != NULL;
    for (int idx = threadIdx.x; idx < M * chunks; idx += GEMV_THREADS) {
        int r = idx / chunks, c = idx - r * chunks;
        uint4 xu = ((const uint4 *)(a.x + (size_t)r * a.x_stride))[c];
        if (MODE == X_SWIGLU) {
            uint4 uu = ((const uint4 *)(a.up + (size_t)r * a.x_stride))[c];
            float g[8], u[8];
            rl_unpack_bf16x8(xu, g);
            rl_unpack_bf16x8(uu, u);
#pragma unroll
            for (int j = 0; j < 8; j++) g[j] = g[j] * (1.0f / (1.0f + expf(-g[j]))) * u[j];
            xu = gv_pack(g);
            if (writer) ((uint4 *)a.x_out)[idx] = xu;
        }
        xs[idx] = xu;
    }
    __syncthreads();
    if (MODE != X_RMSNORM) return;
    if (warp < M) {
        float ss = 0.0f;
        for (int c = lane; c < chunks; c += 32) {
            float v[8];
            rl_unpack_bf16x8(xs[warp * chunks + c], v);
#pragma unroll
            for (int j = 0; j < 8; j++) ss += v[j] * v[j];
        }
        ss = rl_warp_sum(ss);
        float r = rsqrtf(ss / a.k + a.eps);
        if (lane == 0) {
            rstd_s[warp] = r;
            if (writer) a.rstd_out[warp] = r;
        }
    }
    __syncthreads();
    for (int i = 0, c = threadIdx.x; c < chunks; i++, c += GEMV_THREADS) {
        float w[8];
        uint4 wu = nw[GEMV_NORM_REGS - 1];
#pragma unroll
        for (int q = 0; q < GEMV_NORM_REGS - 1; q++)
            if (i == q) wu = nw[q];
        if (i >= GEMV_NORM_REGS) wu = ((const uint4 *)a.norm_weight)[c];
        rl_unpack_bf16x8(wu, w);
#pragma unroll
        for (int r = 0; r < M; r++) {
            float v[8];
            rl_unpack_bf16x8(xs[r * chunks + c], v);
            float rr = rstd_s[r];
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] = v[j] * rr * w[j];
            uint4 xu = gv_pack(v);
            xs[r * chunks + c] = xu;
            if (writer) ((uint4 *)a.x_out)[r * chunks + c] = xu;
        }
    }
    __syncthreads();
}

template <int M, int MODE>
__global__ void __launch_bounds__(GEMV_THREADS) gemv_kernel(gemv_args a)
{
    extern __shared__ __align__(16) unsigned char gv_smem[];
    __shared__ float red[GEMV_THREADS / 32][M];
    uint4 *xs = (uint4 *)gv_smem;
    int chunks = a.k >> 3, tpr = GEMV_THREADS / a.rows;
    int t = threadIdx.x % tpr, j = blockIdx.x * a.rows + threadIdx.x / tpr;
    bool ok = j < a.n;
    const uint4 *wr = (const uint4 *)(a.weight + (size_t)(ok ? j : 0) * a.k);
    uint4 wv[GEMV_LOADS];
    gv_load(wv, wr, t, tpr, chunks, ok);
    uint4 nw[GEMV_NORM_REGS];
#pragma unroll
    for (int i = 0; i < GEMV_NORM_REGS; i++) {
        int c = threadIdx.x + i * GEMV_THREADS;
        nw[i] = MODE == X_RMSNORM && c < chunks ? ((const uint4 *)a.norm_weight)[c] : make_uint4(0, 0, 0, 0);
    }
    rl_pdl_begin();
    gv_stage<M, MODE>(a, xs, chunks, nw);

    float acc[M];
#pragma unroll
    for (int r = 0; r < M; r++) acc[r] = 0.0f;
    for (int c0 = t;;) {
#pragma unroll
        for (int u = 0; u < GEMV_LOADS; u++) {
            int c = c0 + u * tpr;
            if (c >= chunks) break;
            float wf[8];
            rl_unpack_bf16x8(wv[u], wf);
#pragma unroll
            for (int r = 0; r < M; r++) {
                float xf[8];
                rl_unpack_bf16x8(xs[r * chunks + c], xf);
#pragma unroll
                for (int e = 0; e < 8; e++) acc[r] = fmaf(wf[e], xf[e], acc[r]);
            }
        }
        c0 += tpr * GEMV_LOADS;
        if (c0 >= chunks) break;
        gv_load(wv, wr, c0, tpr, chunks, ok);
    }

    /* the row's threads: tpr <= 32 are aligned lanes of one warp, else whole warps */
    int width = tpr < 32 ? tpr : 32, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int r = 0; r < M; r++)
        for (int o = width >> 1; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
    if (tpr > 32) {
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < M; r++) red[warp][r] = acc[r];
        __syncthreads();
        if (t == 0)
#pragma unroll
            for (int r = 0; r < M; r++) {
                float s = 0.0f;
                for (int w = 0; w < tpr / 32; w++) s += red[warp + w][r];
                acc[r] = s;
            }
    }
    if (t != 0 || !ok) return;
    if (a.out_f32) {
#pragma unroll
        for (int r = 0; r < M; r++) a.out_f32[(size_t)r * a.n + j] = acc[r];
        return;
    }
    float b = a.bias ? rl_b2f(a.bias[j]) : 0.0f;
#pragma unroll
    for (int r = 0; r < M; r++) {
        float y = acc[r] + b;
        if (a.residual) y += rl_b2f(a.residual[(size_t)r * a.n + j]);
        a.out[(size_t)r * a.n + j] = rl_f2b(y);
    }
}

template <int MODE>
static cudaError_t gemv_launch_mode(int m, dim3 grid, size_t smem, cudaStream_t st, const gemv_args &a)
{
    dim3 block(GEMV_THREADS);
    switch (m) {
    case 1: return rl_launch_pdl(gemv_kernel<1, MODE>, grid, block, smem, st, a);
    case 2: return rl_launch_pdl(gemv_kernel<2, MODE>, grid, block, smem, st, a);
    case 3: return rl_launch_pdl(gemv_kernel<3, MODE>, grid, block, smem, st, a);
    case 4: return rl_launch_pdl(gemv_kernel<4, MODE>, grid, block, smem, st, a);
    case 5: return rl_launch_pdl(gemv_kernel<5, MODE>, grid, block, smem, st, a);
    case 6: return rl_launch_pdl(gemv_kernel<6, MODE>, grid, block, smem, st, a);
    case 7: return rl_launch_pdl(gemv_kernel<7, MODE>, grid, block, smem, st, a);
    default: return rl_launch_pdl(gemv_kernel<8, MODE>, grid, block, smem, st, a);
    }
}

template <int MODE>
static cudaError_t gemv_allow_smem(int m, int smem)
{
    cudaFuncAttribute at = cudaFuncAttributeMaxDynamicSharedMemorySize;
    switch (m) {
    case 1: return cudaFuncSetAttribute(gemv_kernel<1, MODE>, at, smem);
    case 2: return cudaFuncSetAttribute(gemv_kernel<2, MODE>, at, smem);
    case 3: return cudaFuncSetAttribute(gemv_kernel<3, MODE>, at, smem);
    case 4: return cudaFuncSetAttribute(gemv_kernel<4, MODE>, at, smem);
    case 5: return cudaFuncSetAttribute(gemv_kernel<5, MODE>, at, smem);
    case 6: return cudaFuncSetAttribute(gemv_kernel<6, MODE>, at, smem);
    case 7: return cudaFuncSetAttribute(gemv_kernel<7, MODE>, at, smem);
    default: return cudaFuncSetAttribute(gemv_kernel<8, MODE>, at, smem);
    }
}

/* Weight rows per block: doubled while half as many threads per row still issue at most
 * GEMV_LOADS loads each and the grid keeps at least one block per multiprocessor. */
static int gemv_rows(int n, int chunks, int n_sms)
{
    int rows = 1;
    while (rows < 32) {
        int r2 = rows * 2, tpr = GEMV_THREADS / r2;
        if ((chunks + tpr - 1) / tpr > GEMV_LOADS || (n + r2 - 1) / r2 < n_sms) break;
        rows = r2;
    }
    return rows;
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Runs the kernel when the shape allows it: *ran = 1, else 0 (nothing launched). */
static int gemv_run(rl_ctx *ctx, int mode, gemv_args a, int m, int *ran)
{
    *ran = 0;
    size_t smem = (size_t)m * a.k * sizeof(bf16);
    /* bf16 only: the fp32 mode (tiny models) takes the two ops and cuBLASLt */
    if (rl_cuda_f32(ctx)) return 0;
    if (m > GEMV_MAX_M) return rl_cuda_gemm_rows(ctx, mode, a, m, ran);
    if (a.k % 8 || a.x_stride % 8 || smem > GEMV_SMEM_MAX) return 0;
    if (!aligned16(a.x) || !aligned16(a.weight) || (a.up && !aligned16(a.up)) ||
        (a.norm_weight && !aligned16(a.norm_weight)) || (a.x_out && !aligned16(a.x_out)))
        return 0;
    rl_cuda_state *st = rl_cuda_st(ctx);
    a.rows = gemv_rows(a.n, a.k / 8, st->n_sms > 0 ? st->n_sms : 1);
    dim3 grid((unsigned)((a.n + a.rows - 1) / a.rows));
    cudaError_t e;
    /* the 48 KiB a block gets without opting in counts the static arrays too (red, rstd_s) */
    if (smem + sizeof(float) * (GEMV_THREADS / 32 + 1) * GEMV_MAX_M > 48 * 1024) {
        e = mode == X_RMSNORM  ? gemv_allow_smem<X_RMSNORM>(m, (int)smem)
            : mode == X_SWIGLU ? gemv_allow_smem<X_SWIGLU>(m, (int)smem)
                               : gemv_allow_smem<X_PLAIN>(m, (int)smem);
        CUDA_CHECK(e);
    }
    e = mode == X_RMSNORM  ? gemv_launch_mode<X_RMSNORM>(m, grid, smem, st->stream, a)
        : mode == X_SWIGLU ? gemv_launch_mode<X_SWIGLU>(m, grid, smem, st->stream, a)
                           : gemv_launch_mode<X_PLAIN>(m, grid, smem, st->stream, a);
    CUDA_CHECK(e);
    LAUNCH_CHECK();
    *ran = 1;
    return 0;
}

int rl_cuda_gemv(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight, const void *bias,
                 int m, int n, int k, int *ran)
{
    gemv_args a = {};
    a.out = (bf16 *)out;
    a.weight = (const bf16 *)weight;
    a.bias = (const bf16 *)bias;
    a.residual = (const bf16 *)residual;
    a.x = (const bf16 *)in;
    a.x_stride = k;
    a.n = n;
    a.k = k;
    return gemv_run(ctx, X_PLAIN, a, m, ran);
}

int rl_cuda_gemv_f32(rl_ctx *ctx, float *out, const void *in, const void *weight, int m, int n, int k, int *ran)
{
    *ran = 0;
    if (m > GEMV_MAX_M) return 0;
    gemv_args a = {};
    a.out_f32 = out;
    a.weight = (const bf16 *)weight;
    a.x = (const bf16 *)in;
    a.x_stride = k;
    a.n = n;
    a.k = k;
    return gemv_run(ctx, X_PLAIN, a, m, ran);
}

extern "C" int rl_cuda_rmsnorm_matmul_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *x,
                                          const void *norm_weight, float eps, const void *weight, const void *bias,
                                          int m, int n, int k)
{
    if (m == 0) return 0;
    gemv_args a = {};
    a.out = (bf16 *)out;
    a.weight = (const bf16 *)weight;
    a.bias = (const bf16 *)bias;
    a.x = (const bf16 *)x;
    a.x_stride = k;
    a.norm_weight = (const bf16 *)norm_weight;
    a.eps = eps;
    a.x_out = (bf16 *)xn;
    a.rstd_out = rstd;
    a.n = n;
    a.k = k;
    int ran = 0; /* deterministic mode: the unfused ops, batch-invariant */
    if (!ctx->deterministic && gemv_run(ctx, X_RMSNORM, a, m, &ran)) return -1;
    if (ran) return 0;
    if (rl_cuda_rmsnorm_fwd(ctx, xn, rstd, x, norm_weight, m, k, eps)) return -1;
    return rl_cuda_matmul_fwd(ctx, out, xn, weight, bias, m, n, k, 0);
}

extern "C" int rl_cuda_swiglu_matmul_residual_fwd(rl_ctx *ctx, void *out, void *act, const void *residual,
                                                  const void *gate, const void *up, int in_stride, const void *weight,
                                                  int m, int n, int k)
{
    if (m == 0) return 0;
    gemv_args a = {};
    a.out = (bf16 *)out;
    a.weight = (const bf16 *)weight;
    a.residual = (const bf16 *)residual;
    a.x = (const bf16 *)gate;
    a.up = (const bf16 *)up;
    a.x_stride = in_stride;
    a.x_out = (bf16 *)act;
    a.n = n;
    a.k = k;
    int ran = 0; /* deterministic mode: the unfused ops, batch-invariant */
    if (!ctx->deterministic && gemv_run(ctx, X_SWIGLU, a, m, &ran)) return -1;
    if (ran) return 0;
    if (rl_cuda_swiglu_fwd(ctx, act, gate, up, m, k, in_stride)) return -1;
    return rl_cuda_matmul_residual_fwd(ctx, out, residual, act, weight, m, n, k);
}
