/* matmul_small_m.cu — forward products of 9 to SMALL_M_MAX rows (a decode step of a batch of
 * sequences): out[m, n] = in[m, k] . weight[n, k] (+ bias[n]) (+ residual[m, n]), bf16 operands,
 * fp32 accumulation, on tensor cores (mma.sync m16n8k16, mma.cuh).
 *
 * Such a product reads the whole weight for a few rows: it is bound by the weight's bytes, and
 * what matters is that every SM has enough of them in flight. A block (4 warps) owns a 64-row x
 * 32-column output tile and one range of the inner dimension (split-K): it streams 64-wide
 * slices of the input rows and of its 32 weight rows into shared memory with cp.async, STAGES
 * deep; warp w multiplies rows 16w .. 16w + 15 (warps past the last row skip the arithmetic).
 * The number of splits is chosen so that the grid has about two blocks per SM (a 64-row
 * product with 1024 outputs has 32 tiles; without splits it would fill a quarter of the GPU).
 *
 * Split-K keeps the partial products in fp32 (scratch, [tile][split][64 x 32]); the last block
 * of a tile to finish (a counter per tile, counted up with atomics and reset by that block, as
 * the split-KV attention does: paged_attention.cuh) adds the other splits' partials to its own
 * registers in split order (so the result does not depend on which block finished last),
 * adds bias and residual and rounds once to bf16. Without splits the block writes directly.
 * residual may be out itself (each element is read, then written, by the same thread).
 *
 * Assumes k a multiple of 8 and in and weight 16-byte aligned (16-byte cp.async rows); the
 * launcher says 0 (not run) otherwise, and matmul.cu takes cuBLASLt. */
#include "backend/cuda/matmul_small_m.cuh"
#include "backend/cuda/mma.cuh"

#define SMM_BM 64
#ifndef SMM_BN
#define SMM_BN 32
#endif
#define SMM_BK 64
#ifndef SMM_STAGES
#define SMM_STAGES 8
#endif
#define SMM_THREADS 128
#define SMM_MIN_KTILES 4 /* a split takes at least this many 64-wide slices of k */

struct smm_args {
    bf16 *out;
    const bf16 *in, *weight, *bias, *residual;
    int m, n, k;
    int k_tiles, tiles_per_split, n_splits;
    float *part;        /* [m_tiles * n_tiles][n_splits][SMM_BM * SMM_BN]; NULL without splits */
    unsigned *counters; /* one per tile, zero between launches */
};

struct smm_smem {
    bf16 a[SMM_STAGES][SMM_BM * SMM_BK];
    bf16 w[SMM_STAGES][SMM_BN * SMM_BK];
};

/* Slice kt of the input rows m0.. and weight rows n0.. into stage buffers (swizzled rows of
 * SMM_BK); rows past m or n and columns past k are zero-filled. */
__device__ __forceinline__ void smm_load(bf16 *as, bf16 *ws, const smm_args &p, int m0, int n0, int kt)
{
    constexpr int CH = SMM_BK / 8;
    int k0 = kt * SMM_BK;
#pragma unroll
    for (int idx = threadIdx.x; idx < SMM_BM * CH; idx += SMM_THREADS) {
        int r = idx / CH, ch = idx % CH, col = k0 + ch * 8;
        bool valid = m0 + r < p.m && col < p.k;
        const bf16 *src = valid ? p.in + (size_t)(m0 + r) * p.k + col : p.in;
        cp_async16(as + swz<SMM_BK>(r, ch * 8), src, valid);
    }
#pragma unroll
    for (int idx = threadIdx.x; idx < SMM_BN * CH; idx += SMM_THREADS) {
        int r = idx / CH, ch = idx % CH, col = k0 + ch * 8;
        bool valid = n0 + r < p.n && col < p.k;
        const bf16 *src = valid ? p.weight + (size_t)(n0 + r) * p.k + col : p.weight;
        cp_async16(ws + swz<SMM_BK>(r, ch * 8), src, valid);
    }
}

/* Element (row, col) of the output, (bias and residual added) rounded once. */
__device__ __forceinline__ void smm_store(const smm_args &p, int row, int col, float y)
{
    if (row >= p.m || col >= p.n) return;
    size_t at = (size_t)row * p.n + col;
    if (p.bias) y += rl_b2f(p.bias[col]);
    if (p.residual) y += rl_b2f(p.residual[at]);
    p.out[at] = rl_f2b(y);
}

__global__ void __launch_bounds__(SMM_THREADS) matmul_small_m_kernel(smm_args p)
{
    rl_pdl_begin();
    extern __shared__ __align__(128) unsigned char smem_raw[];
    smm_smem &sm = *(smm_smem *)smem_raw;
    int m0 = blockIdx.x * SMM_BM, n0 = blockIdx.y * SMM_BN, sp = blockIdx.z;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gq = lane >> 2, tq = lane & 3;
    int kt0 = sp * p.tiles_per_split, kt1 = min(p.k_tiles, kt0 + p.tiles_per_split);
    int n_kt = kt1 - kt0;
    bool busy = m0 + warp * 16 < p.m; /* this warp has rows */

#pragma unroll
    for (int st = 0; st < SMM_STAGES - 1; st++) {
        if (st < n_kt) smm_load(sm.a[st], sm.w[st], p, m0, n0, kt0 + st);
        cp_async_commit();
    }
    float acc[SMM_BN / 8][4];
#pragma unroll
    for (int i = 0; i < SMM_BN / 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    for (int t = 0; t < n_kt; t++) {
        cp_async_wait<SMM_STAGES - 2>();
        __syncthreads(); /* stage t landed for every thread; stage t - 1 is free again */
        int next = t + SMM_STAGES - 1;
        if (next < n_kt) smm_load(sm.a[next % SMM_STAGES], sm.w[next % SMM_STAGES], p, m0, n0, kt0 + next);
        cp_async_commit();
        if (busy) mma_a_smem_tile_t<SMM_BK, SMM_BN / 8>(acc, sm.a[t % SMM_STAGES], warp * 16, sm.w[t % SMM_STAGES]);
    }
    cp_async_wait<0>();

    if (!p.part) {
        if (busy)
#pragma unroll
            for (int nt = 0; nt < SMM_BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    smm_store(p, m0 + warp * 16 + gq + (e >> 1) * 8, n0 + nt * 8 + tq * 2 + (e & 1), acc[nt][e]);
        return;
    }

    /* split-K: publish this split's partial, then the tile's last block sums them */
    size_t tile = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
    float *base = p.part + tile * p.n_splits * (SMM_BM * SMM_BN);
    if (busy)
#pragma unroll
        for (int nt = 0; nt < SMM_BN / 8; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = warp * 16 + gq + h * 8, c = nt * 8 + tq * 2;
                *(float2 *)(base + (size_t)sp * (SMM_BM * SMM_BN) + r * SMM_BN + c) =
                    make_float2(acc[nt][h * 2], acc[nt][h * 2 + 1]);
            }
    __shared__ int sh_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned done = atomicAdd(p.counters + tile, 1u);
        sh_last = done == (unsigned)p.n_splits - 1;
        if (sh_last) p.counters[tile] = 0;
    }
    __syncthreads();
    if (!sh_last || !busy) return;
    __threadfence();
    /* the sum in split order, whichever block is last (the others' partials bypass L1: __ldcg) */
    float sum[SMM_BN / 8][4];
#pragma unroll
    for (int i = 0; i < SMM_BN / 8; i++) sum[i][0] = sum[i][1] = sum[i][2] = sum[i][3] = 0.0f;
#pragma unroll 4
    for (int s = 0; s < p.n_splits; s++) {
        const float *ps = base + (size_t)s * (SMM_BM * SMM_BN);
#pragma unroll
        for (int nt = 0; nt < SMM_BN / 8; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = warp * 16 + gq + h * 8, c = nt * 8 + tq * 2;
                float2 v = s == sp ? make_float2(acc[nt][h * 2], acc[nt][h * 2 + 1])
                                   : __ldcg((const float2 *)(ps + r * SMM_BN + c));
                sum[nt][h * 2] += v.x;
                sum[nt][h * 2 + 1] += v.y;
            }
    }
#pragma unroll
    for (int nt = 0; nt < SMM_BN / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            smm_store(p, m0 + warp * 16 + gq + (e >> 1) * 8, n0 + nt * 8 + tq * 2 + (e & 1), sum[nt][e]);
}

int rl_cuda_matmul_small_m(rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight,
                           const void *bias, int m, int n, int k, int *ran)
{
    *ran = 0;
#ifdef SMM_OFF
    return 0;
#endif
    if (m > SMALL_M_MAX || k % 8 || (((uintptr_t)in | (uintptr_t)weight) & 15)) return 0;
    rl_cuda_state *st = rl_cuda_st(ctx);
    smm_args p = {};
    p.out = (bf16 *)out;
    p.in = (const bf16 *)in;
    p.weight = (const bf16 *)weight;
    p.bias = (const bf16 *)bias;
    p.residual = (const bf16 *)residual;
    p.m = m;
    p.n = n;
    p.k = k;
    p.k_tiles = (k + SMM_BK - 1) / SMM_BK;
    int m_tiles = (m + SMM_BM - 1) / SMM_BM, n_tiles = (n + SMM_BN - 1) / SMM_BN;
    long tiles = (long)m_tiles * n_tiles;
    /* at most two blocks per SM (what fits at once: one wave), each split at least
     * SMM_MIN_KTILES slices long */
    long target = 2L * st->n_sms;
    long splits = target / tiles;
    long by_k = p.k_tiles / SMM_MIN_KTILES;
    if (splits > by_k) splits = by_k;
    if (tiles > RL_CUDA_SPLIT_COUNTERS) splits = 1; /* no counter for every tile */
    if (splits < 1) splits = 1;
    p.tiles_per_split = (int)((p.k_tiles + splits - 1) / splits);
    p.n_splits = (p.k_tiles + p.tiles_per_split - 1) / p.tiles_per_split;
    if (p.n_splits > 1) {
        p.part = (float *)rl_cuda_scratch(ctx, (size_t)tiles * p.n_splits * SMM_BM * SMM_BN * sizeof(float));
        if (!p.part) return -1;
        p.counters = st->split_counters;
    }
    size_t smem = sizeof(smm_smem);
    CUDA_CHECK(cudaFuncSetAttribute(matmul_small_m_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((unsigned)m_tiles, (unsigned)n_tiles, (unsigned)p.n_splits);
    CUDA_CHECK(rl_launch_pdl(matmul_small_m_kernel, grid, dim3(SMM_THREADS), smem, st->stream, p));
    LAUNCH_CHECK();
    *ran = 1;
    return 0;
}
