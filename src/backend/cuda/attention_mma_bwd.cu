/* attention_mma_bwd.cu — tensor-core flash attention backward for head_dim 64 and 128 (training
 * layout: queries by cu_q, key slabs by cu_k from row 0, causal bottom-right, no seqused_k), bf16
 * mma.sync with fp32 accumulation.
 *
 * FlashAttention-2 backward (Dao 2023) split in two kernels so that nothing is accumulated
 * with atomics (deterministic, and no fp32 dq buffer): with P = exp(scale q.k - lse)
 * recomputed from the forward's lse and D_i = dout_i . out_i (attention.cu's dot kernel),
 *  - dq kernel, a block of 4 warps per 64 query rows (16 per warp), streaming key/value tiles:
 *    S = Q K^T, dP = dO V^T, dS = P (dP - D), dq += dS K;
 *  - dk/dv kernel, a block per 64 keys (16 per warp) and kv head, streaming query tiles (64
 *    rows at head_dim 128, 32 at 64) of every query head in the GQA group: S^T = K Q^T,
 *    dP^T = V dO^T, dS^T = P^T (dP^T - D), dv += P^T dO, dk += dS^T Q, so the sum over the
 *    group stays in registers.
 * This recomputes S and dP once more than the atomic form (7 products instead of 5). Tiles are
 * double-buffered with cp.async; P and dS are rounded to bf16 as the products' A operands. */
#include "backend/cuda/mma.cuh"

#define LOG2E 1.4426950408889634f

/* dq kernel: WARPS warps, QB = 16 * WARPS query rows per block, KB key rows per tile. */
template <int D, int WARPS, int KB>
__global__ void __launch_bounds__(32 * WARPS) attn_bwd_dq_mma_kernel(bf16 *dq, const bf16 *dout, const float *lse,
                                                                      const float *dsum, const bf16 *q, const bf16 *k,
                                                                      const bf16 *v, const int32_t *cu,
                                                                      const int32_t *cu_k, int n_heads, int n_kv_heads,
                                                                      float scale, int causal)
{
    constexpr int QB = 16 * WARPS, BWD_THREADS = 32 * WARPS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *qs = (bf16 *)smem_raw, *dos = qs + QB * D, *ks = dos + QB * D, *vs = ks + 2 * KB * D;
    int h = blockIdx.x, s = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* Last query tiles first, over all heads and sequences: under the causal mask they see the
     * most keys. */
    int base = cu[s], len = cu[s + 1] - base, row0 = (gridDim.z - 1 - blockIdx.z) * QB;
    if (row0 >= len) return;
    int kbase = cu_k[s], len_k = cu_k[s + 1] - kbase, shift = len_k - len; /* query i sees keys <= shift + i */
    int hk = h / (n_heads / n_kv_heads);
    size_t q_stride = (size_t)n_heads * D, kv_stride = (size_t)n_kv_heads * D;
    const bf16 *q0 = q + (size_t)base * q_stride + h * D, *do0 = dout + (size_t)base * q_stride + h * D;
    const bf16 *k0 = k + (size_t)kbase * kv_stride + hk * D, *v0 = v + (size_t)kbase * kv_stride + hk * D;
    int keys_end = causal ? min(len_k, max(0, shift + row0 + QB)) : len_k;
    int n_tiles = (keys_end + KB - 1) / KB;

    load_tile_async<D, QB, BWD_THREADS>(qs, q0, row0, len, q_stride);
    load_tile_async<D, QB, BWD_THREADS>(dos, do0, row0, len, q_stride);
    load_tile_async<D, KB, BWD_THREADS>(ks, k0, 0, len_k, kv_stride);
    load_tile_async<D, KB, BWD_THREADS>(vs, v0, 0, len_k, kv_stride);
    cp_async_commit();

    int g = lane >> 2, tq = lane & 3, row_a = row0 + warp * 16 + g;
    float lse2[2], dd[2];
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = row_a + half * 8;
        size_t r = (size_t)(base + row) * n_heads + h;
        lse2[half] = row < len ? lse[r] * LOG2E : 0.0f;
        dd[half] = row < len ? dsum[r] : 0.0f;
    }
    float acc[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    uint32_t qf[D / 16][4];
    float sl2 = scale * LOG2E;

    for (int j = 0; j < n_tiles; j++) {
        int buf = j & 1;
        if (j + 1 < n_tiles) {
            load_tile_async<D, KB, BWD_THREADS>(ks + (buf ^ 1) * KB * D, k0, (j + 1) * KB, len_k, kv_stride);
            load_tile_async<D, KB, BWD_THREADS>(vs + (buf ^ 1) * KB * D, v0, (j + 1) * KB, len_k, kv_stride);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (j == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                ldmatrix_x4(qf[kk], qs + swz<D>(warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
        }
        const bf16 *kt = ks + buf * KB * D, *vt = vs + buf * KB * D;
        float sc[KB / 8][4], dp[KB / 8][4];
#pragma unroll
        for (int nt = 0; nt < KB / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[nt][e] = dp[nt][e] = 0.0f;
        mma_a_regs_tile_t<D, KB / 8>(sc, qf, kt);
        mma_a_smem_tile_t<D, KB / 8>(dp, dos, warp * 16, vt);
#pragma unroll
        for (int nt = 0; nt < KB / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int half = e >> 1, row = row_a + half * 8, key = j * KB + nt * 8 + tq * 2 + (e & 1);
                bool valid = row < len && key < len_k && (!causal || key <= shift + row);
                float p = valid ? exp2f(sc[nt][e] * sl2 - lse2[half]) : 0.0f;
                sc[nt][e] = p * (dp[nt][e] - dd[half]);
            }
        mma_p_tile<D, KB / 8>(acc, sc, kt);
        __syncthreads();
    }
    cp_async_wait<0>(); /* no tile at all when the block's queries see no key */
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = row_a + half * 8;
        if (row >= len) continue;
        bf16 *drow = dq + (size_t)(base + row) * q_stride + h * D;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++)
            *(__nv_bfloat162 *)(drow + dt * 8 + tq * 2) =
                __floats2bfloat162_rn(acc[dt][half * 2] * scale, acc[dt][half * 2 + 1] * scale);
    }
}

/* dk/dv kernel: WARPS warps, KBLK = 16 * WARPS key rows per block, QT query rows per tile. */
template <int D, int WARPS, int QT>
__global__ void __launch_bounds__(32 * WARPS) attn_bwd_dkv_mma_kernel(bf16 *dk, bf16 *dv, const bf16 *dout,
                                                                       const float *lse, const float *dsum,
                                                                       const bf16 *q, const bf16 *k, const bf16 *v,
                                                                       const int32_t *cu, const int32_t *cu_k,
                                                                       int n_heads, int n_kv_heads, float scale,
                                                                       int causal)
{
    constexpr int KBLK = 16 * WARPS, BWD_THREADS = 32 * WARPS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *ks = (bf16 *)smem_raw, *vs = ks + KBLK * D, *qs = vs + KBLK * D, *dos = qs + 2 * QT * D;
    float *lse2s = (float *)(dos + 2 * QT * D), *dds = lse2s + 2 * QT;
    /* First key tiles first, over all heads and sequences: the most queries see them. */
    int hk = blockIdx.x, s = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int base = cu[s], len = cu[s + 1] - base, key0 = blockIdx.z * KBLK;
    int kbase = cu_k[s], len_k = cu_k[s + 1] - kbase, shift = len_k - len; /* query i sees keys <= shift + i */
    if (key0 >= len_k) return;
    int group = n_heads / n_kv_heads;
    size_t q_stride = (size_t)n_heads * D, kv_stride = (size_t)n_kv_heads * D;
    const bf16 *k0 = k + (size_t)kbase * kv_stride + hk * D, *v0 = v + (size_t)kbase * kv_stride + hk * D;
    int q_start = causal ? min(len, max(0, key0 - shift)) : 0; /* earlier queries see none of these keys */
    int n_qt = (len - q_start + QT - 1) / QT, n_iter = group * n_qt;

    /* Iteration it covers query head hk * group + it / n_qt, rows q_start + (it % n_qt) * QT. */
    auto load_q = [&](int it, int buf) {
        int h = hk * group + it / n_qt, r0 = q_start + (it % n_qt) * QT;
        const bf16 *q0 = q + (size_t)base * q_stride + h * D, *do0 = dout + (size_t)base * q_stride + h * D;
        load_tile_async<D, QT, BWD_THREADS>(qs + buf * QT * D, q0, r0, len, q_stride);
        load_tile_async<D, QT, BWD_THREADS>(dos + buf * QT * D, do0, r0, len, q_stride);
        if (threadIdx.x < QT) {
            int row = r0 + threadIdx.x;
            size_t r = (size_t)(base + row) * n_heads + h;
            lse2s[buf * QT + threadIdx.x] = row < len ? lse[r] * LOG2E : 0.0f;
            dds[buf * QT + threadIdx.x] = row < len ? dsum[r] : 0.0f;
        }
    };
    load_tile_async<D, KBLK, BWD_THREADS>(ks, k0, key0, len_k, kv_stride);
    load_tile_async<D, KBLK, BWD_THREADS>(vs, v0, key0, len_k, kv_stride);
    if (n_iter > 0) load_q(0, 0);
    cp_async_commit();

    int g = lane >> 2, tq = lane & 3, key_a = key0 + warp * 16 + g;
    float dk_acc[D / 8][4], dv_acc[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk_acc[i][e] = dv_acc[i][e] = 0.0f;
    float sl2 = scale * LOG2E;

    for (int it = 0; it < n_iter; it++) {
        int buf = it & 1;
        if (it + 1 < n_iter) {
            load_q(it + 1, buf ^ 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const bf16 *qt_ = qs + buf * QT * D, *dot_ = dos + buf * QT * D;
        const float *l2 = lse2s + buf * QT, *ddv = dds + buf * QT;
        int r0 = q_start + (it % n_qt) * QT;
        float st[QT / 8][4], dpt[QT / 8][4];
#pragma unroll
        for (int nt = 0; nt < QT / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) st[nt][e] = dpt[nt][e] = 0.0f;
        mma_a_smem_tile_t<D, QT / 8>(st, ks, warp * 16, qt_);
        mma_a_smem_tile_t<D, QT / 8>(dpt, vs, warp * 16, dot_);
#pragma unroll
        for (int nt = 0; nt < QT / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int qi = nt * 8 + tq * 2 + (e & 1), query = r0 + qi, key = key_a + (e >> 1) * 8;
                bool valid = query < len && key < len_k && (!causal || shift + query >= key);
                float p = valid ? exp2f(st[nt][e] * sl2 - l2[qi]) : 0.0f;
                st[nt][e] = p;
                dpt[nt][e] = p * (dpt[nt][e] - ddv[qi]);
            }
        mma_p_tile<D, QT / 8>(dv_acc, st, dot_);
        mma_p_tile<D, QT / 8>(dk_acc, dpt, qt_);
        __syncthreads();
    }
    cp_async_wait<0>(); /* no query tile at all when the sequence has no query */
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int key = key_a + half * 8;
        if (key >= len_k) continue;
        size_t off = (size_t)(kbase + key) * kv_stride + hk * D;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            *(__nv_bfloat162 *)(dk + off + dt * 8 + tq * 2) =
                __floats2bfloat162_rn(dk_acc[dt][half * 2] * scale, dk_acc[dt][half * 2 + 1] * scale);
            *(__nv_bfloat162 *)(dv + off + dt * 8 + tq * 2) =
                __floats2bfloat162_rn(dv_acc[dt][half * 2], dv_acc[dt][half * 2 + 1]);
        }
    }
}

template <int D, int WARPS, int KB>
static int launch_dq(rl_ctx *ctx, void *dq, const void *dout, const float *lse, const float *dsum, const void *q,
                     const void *k, const void *v, const attn_bwd_shape &sh)
{
    constexpr int QB = 16 * WARPS;
    size_t smem = (size_t)(2 * QB + 4 * KB) * D * sizeof(bf16);
    CUDA_CHECK(cudaFuncSetAttribute(attn_bwd_dq_mma_kernel<D, WARPS, KB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    dim3 grid(sh.n_heads, sh.n_seqs, (sh.max_seqlen_q + QB - 1) / QB);
    attn_bwd_dq_mma_kernel<D, WARPS, KB><<<grid, 32 * WARPS, smem, rl_cuda_st(ctx)->stream>>>(
        (bf16 *)dq, (const bf16 *)dout, lse, dsum, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v, sh.cu_q, sh.cu_k,
        sh.n_heads, sh.n_kv_heads, sh.scale, sh.causal);
    LAUNCH_CHECK();
    return 0;
}

template <int D, int WARPS, int QT>
static int launch_dkv(rl_ctx *ctx, void *dk, void *dv, const void *dout, const float *lse, const float *dsum,
                      const void *q, const void *k, const void *v, const attn_bwd_shape &sh)
{
    constexpr int KBLK = 16 * WARPS;
    size_t smem = (size_t)(2 * KBLK + 4 * QT) * D * sizeof(bf16) + 4 * QT * sizeof(float);
    CUDA_CHECK(cudaFuncSetAttribute(attn_bwd_dkv_mma_kernel<D, WARPS, QT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    dim3 grid(sh.n_kv_heads, sh.n_seqs, (sh.max_seqlen_k + KBLK - 1) / KBLK);
    attn_bwd_dkv_mma_kernel<D, WARPS, QT><<<grid, 32 * WARPS, smem, rl_cuda_st(ctx)->stream>>>(
        (bf16 *)dk, (bf16 *)dv, (const bf16 *)dout, lse, dsum, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
        sh.cu_q, sh.cu_k, sh.n_heads, sh.n_kv_heads, sh.scale, sh.causal);
    LAUNCH_CHECK();
    return 0;
}

/* Tile sizes from a sweep on the H100 (docs/benchmarks.md, 2026-11-23): 8 warps for either
 * kernel and 32-key dq tiles were slower at both head dims; 64-query dk/dv tiles gained 6% at
 * head_dim 128 (1 x 8192) despite a few spilled registers, and lost 3% at 64. */
template <int D>
static int launch_bwd(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const float *lse, const float *dsum,
                      const void *q, const void *k, const void *v, const attn_bwd_shape &sh)
{
    if (launch_dq<D, 4, 64>(ctx, dq, dout, lse, dsum, q, k, v, sh)) return -1;
    return launch_dkv<D, 4, D == 128 ? 64 : 32>(ctx, dk, dv, dout, lse, dsum, q, k, v, sh);
}

int rl_cuda_attention_bwd_mma(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const float *lse,
                              const float *dsum, const void *q, const void *k, const void *v,
                              const attn_bwd_shape *sh, int *ran)
{
    *ran = 0;
    uintptr_t align = (uintptr_t)dq | (uintptr_t)dk | (uintptr_t)dv | (uintptr_t)dout | (uintptr_t)q |
                      (uintptr_t)k | (uintptr_t)v;
    if ((sh->head_dim != 64 && sh->head_dim != 128) || (align & 15)) return 0;
    int rc = sh->head_dim == 64 ? launch_bwd<64>(ctx, dq, dk, dv, dout, lse, dsum, q, k, v, *sh)
                                : launch_bwd<128>(ctx, dq, dk, dv, dout, lse, dsum, q, k, v, *sh);
    *ran = rc == 0;
    return rc;
}
