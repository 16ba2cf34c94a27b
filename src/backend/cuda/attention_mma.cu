/* attention_mma.cu — tensor-core flash attention forward for head_dim 64 and 128 (bf16,
 * mma.sync m16n8k16 with fp32 accumulation, ldmatrix from XOR-swizzled shared memory).
 *
 * FlashAttention-2 forward (Dao 2023): a block of 8 warps owns 128 query rows of one
 * (sequence, head), each warp 16 rows (8 warps share each key/value tile: half the tile loads
 * per FLOP of 4 warps; measured 12-17% faster than 4 warps on the H100). Key/value tiles of 64 rows stream through shared memory
 * with cp.async, double-buffered (the next tile loads while this one is used). Per tile:
 * S = Q K^T on tensor cores (Q fragments stay in registers), causal / length mask only on
 * tiles that cross the diagonal or the end, online softmax in the exp2 domain (scale folded
 * with log2 e), then O += P V with P re-packed from the S accumulators straight into A
 * fragments (the m16n8k16 accumulator and A layouts line up, no shared-memory round trip).
 * Rows that see no key get out = 0, lse = -inf. Semantics are attention.cu's (ops.h).
 * Deterministic mode's paged attention runs this kernel over the block pool (rl_kv_paged): a
 * row's result depends only on its key tiles (64 from key 0) and its mask, not on the block's
 * other rows, its warp count or its first query position. A training row may see more key
 * tiles than the same row in a decode step (its block's last row sets the loop), but a tile
 * fully masked for a row leaves that row's (m, l, O) bit-unchanged: the max stays m, corr =
 * exp2(0) = 1, every p = exp2(-inf) = 0, and P V adds exact zeros. A decode step packs a GQA
 * group: one warp per (kv head, sequence) whose 16 rows are the group's query heads for each of
 * the sequence's few queries (PACK), so each key/value tile is read once per group instead of
 * once per query head; every row still runs its own chain (mma rows are independent). */
#include "backend/cuda/mma.cuh"

#define FWD_WARPS 8
#define BN 64

/* Key/value rows [r0, r0 + BN) of sequence s (one kv head: base) into a swizzled tile, zero
 * past n_valid: dense tensors row by row from the sequence's first key, the pool through the
 * block table. */
template <int D, int NTHREADS>
__device__ __forceinline__ void load_kv_tile(bf16 *tile, const bf16 *base, const rl_kv_dense &src, int s, int r0,
                                             int n_valid)
{
    load_tile_async<D, BN, NTHREADS>(tile, base + src.at(s, 0), r0, n_valid, src.row);
}

template <int D, int NTHREADS>
__device__ __forceinline__ void load_kv_tile(bf16 *tile, const bf16 *base, const rl_kv_paged &src, int s, int r0,
                                             int n_valid)
{
    constexpr int CHUNKS = D / 8;
    for (int idx = threadIdx.x; idx < BN * CHUNKS; idx += NTHREADS) {
        int r = idx / CHUNKS, ch = idx % CHUNKS;
        bool valid = r0 + r < n_valid;
        const bf16 *g = base + (valid ? src.at(s, r0 + r) : 0) + ch * 8;
        cp_async16(tile + swz<D>(r, ch * 8), g, valid);
    }
}

/* The block's query rows: tile row r is query qi(r) of the sequence, head head(r). Plain:
 * queries row0 .. row0 + BM - 1 of head h. Packed (a GQA group of G heads, h the kv head): query
 * r / G, head h G + r % G, for r < len_q G. */
template <bool PACK>
struct fwd_rows {
    int h, row0, group, n_rows;
    __device__ int qi(int r) const { return PACK ? r / group : row0 + r; }
    __device__ int head(int r) const { return PACK ? h * group + r % group : h; }
    __device__ bool valid(int r) const { return r < n_rows; }
};

/* WARPS warps of 16 query rows each (training: FWD_WARPS; a decode step's rows: 1, packed); a
 * row's arithmetic does not depend on WARPS, PACK or the key source KV. */
template <int D, int WARPS, bool PACK, typename KV>
__global__ void __launch_bounds__(WARPS * 32) attn_fwd_mma_kernel(bf16 *out, float *lse, const bf16 *q, const bf16 *k,
                                                                  const bf16 *v, const int32_t *cu_q, KV src,
                                                                  int n_heads, int n_kv_heads, float scale_log2,
                                                                  int causal)
{
    constexpr int BM = 16 * WARPS, FWD_THREADS = WARPS * 32;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *qs = (bf16 *)smem_raw;
    bf16 *ks = qs + BM * D; /* [2][BN * D] */
    bf16 *vs = ks + 2 * BN * D;
    int s = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int qb = cu_q[s], len_q = cu_q[s + 1] - qb, group = n_heads / n_kv_heads;
    /* Last query tiles first, over all heads and sequences (the tile index is the slowest grid
     * dimension): under the causal mask they carry the most keys, so the tail is short. */
    int row0 = (gridDim.z - 1 - blockIdx.z) * BM;
    if (row0 >= len_q) return;
    fwd_rows<PACK> rows = {(int)blockIdx.x, row0, group, PACK ? len_q * group : len_q - row0};
    int len_k = src.len(s);
    int hk = PACK ? rows.h : rows.h / group;
    size_t q_stride = (size_t)n_heads * D;
    const bf16 *k0 = k + hk * D, *v0 = v + hk * D;

    /* Keys visible to the block's last row bound the loop; below the first row's bound no mask. */
    int last_row = PACK ? len_q - 1 : min(row0 + BM, len_q) - 1;
    int shift = len_k - len_q; /* query i sees keys j <= shift + i when causal */
    int keys_end = causal ? min(len_k, max(0, shift + last_row + 1)) : len_k;
    int n_tiles = (keys_end + BN - 1) / BN;
    int unmasked_end = causal ? min(len_k, max(0, shift + rows.qi(0) + 1)) : len_k;

    for (int idx = threadIdx.x; idx < BM * (D / 8); idx += FWD_THREADS) {
        int r = idx / (D / 8), ch = idx % (D / 8);
        bool ok = rows.valid(r);
        const bf16 *g = q + (ok ? (size_t)(qb + rows.qi(r)) * q_stride + rows.head(r) * D : 0) + ch * 8;
        cp_async16(qs + swz<D>(r, ch * 8), g, ok);
    }
    if (n_tiles > 0) {
        load_kv_tile<D, FWD_THREADS>(ks, k0, src, s, 0, len_k);
        load_kv_tile<D, FWD_THREADS>(vs, v0, src, s, 0, len_k);
    }
    cp_async_commit();

    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};
    uint32_t qf[D / 16][4];
    int g = lane >> 2, tq = lane & 3;
    int row_a = warp * 16 + g; /* this thread's tile rows: row_a and row_a + 8 */

    for (int j = 0; j < n_tiles; j++) {
        int buf = j & 1;
        if (j + 1 < n_tiles) {
            load_kv_tile<D, FWD_THREADS>(ks + (buf ^ 1) * BN * D, k0, src, s, (j + 1) * BN, len_k);
            load_kv_tile<D, FWD_THREADS>(vs + (buf ^ 1) * BN * D, v0, src, s, (j + 1) * BN, len_k);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (j == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = kk * 16 + (lane >> 4) * 8;
                ldmatrix_x4(qf[kk], qs + swz<D>(r, c));
            }
        }
        const bf16 *kt = ks + buf * BN * D, *vt = vs + buf * BN * D;
        float sc[BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
            for (int np = 0; np < BN / 16; np++) {
                uint32_t b[4];
                int key = np * 16 + (lane & 7) + ((lane >> 4) << 3), c = kk * 16 + ((lane >> 3) & 1) * 8;
                ldmatrix_x4(b, kt + swz<D>(key, c));
                mma16816(sc[2 * np], qf[kk], b[0], b[1]);
                mma16816(sc[2 * np + 1], qf[kk], b[2], b[3]);
            }
        }
        int key0 = j * BN;
        bool need_mask = key0 + BN > unmasked_end;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int limit = causal ? min(len_k, shift + rows.qi(row_a + half * 8) + 1) : len_k;
            float mx = m_r[half];
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float x = sc[nt][half * 2 + e] * scale_log2;
                    if (need_mask && key0 + nt * 8 + tq * 2 + e >= limit) x = -INFINITY;
                    sc[nt][half * 2 + e] = x;
                    mx = fmaxf(mx, x);
                }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            float base = mx == -INFINITY ? 0.0f : mx;
            float corr = exp2f(m_r[half] - base);
            m_r[half] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float p = exp2f(sc[nt][half * 2 + e] - base);
                    sc[nt][half * 2 + e] = p;
                    sum += p;
                }
            l_r[half] = l_r[half] * corr + sum;
#pragma unroll
            for (int dt = 0; dt < D / 8; dt++) {
                o[dt][half * 2] *= corr;
                o[dt][half * 2 + 1] *= corr;
            }
        }
#pragma unroll
        for (int kp = 0; kp < BN / 16; kp++) {
            uint32_t a[4] = {pack_bf16(sc[2 * kp][0], sc[2 * kp][1]), pack_bf16(sc[2 * kp][2], sc[2 * kp][3]),
                             pack_bf16(sc[2 * kp + 1][0], sc[2 * kp + 1][1]),
                             pack_bf16(sc[2 * kp + 1][2], sc[2 * kp + 1][3])};
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t b[4];
                int key = kp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = dp * 16 + (lane >> 4) * 8;
                ldmatrix_x4_trans(b, vt + swz<D>(key, c));
                mma16816(o[2 * dp], a, b[0], b[1]);
                mma16816(o[2 * dp + 1], a, b[2], b[3]);
            }
        }
        __syncthreads();
    }
    if (n_tiles == 0) cp_async_wait<0>();

#pragma unroll
    for (int half = 0; half < 2; half++) {
        int r = row_a + half * 8, row = rows.qi(r), h = rows.head(r);
        float l = l_r[half];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        if (!rows.valid(r)) continue;
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        bf16 *orow = out + (size_t)(qb + row) * q_stride + h * D;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            __nv_bfloat162 val = __floats2bfloat162_rn(o[dt][half * 2] * inv, o[dt][half * 2 + 1] * inv);
            *(__nv_bfloat162 *)(orow + dt * 8 + tq * 2) = val;
        }
        if (lse && tq == 0)
            lse[(size_t)(qb + row) * n_heads + h] = l > 0.0f ? (m_r[half] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

template <int D, int WARPS, bool PACK = false, typename KV>
static int launch_fwd(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v,
                      const int32_t *cu_q, KV src, int n_seqs, int max_seqlen_q, int n_heads, int n_kv_heads,
                      float scale, int causal)
{
    constexpr int BM = 16 * WARPS;
    dim3 grid(PACK ? n_kv_heads : n_heads, n_seqs, PACK ? 1 : (max_seqlen_q + BM - 1) / BM);
    size_t smem = (size_t)(BM + 4 * BN) * D * sizeof(bf16);
    CUDA_CHECK(cudaFuncSetAttribute(attn_fwd_mma_kernel<D, WARPS, PACK, KV>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    attn_fwd_mma_kernel<D, WARPS, PACK, KV><<<grid, WARPS * 32, smem, rl_cuda_st(ctx)->stream>>>(
        (bf16 *)out, lse, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v, cu_q, src, n_heads, n_kv_heads,
        scale * 1.4426950408889634f, causal);
    LAUNCH_CHECK();
    return 0;
}

/* Returns 1 when the tensor-core path ran, 0 when the shape needs the general path. */
int rl_cuda_attention_fwd_mma(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v,
                              const int32_t *cu_q, const int32_t *cu_k, const int32_t *used_k, int n_seqs,
                              int max_seqlen_q, int n_heads, int n_kv_heads, int head_dim, float scale, int causal,
                              const rl_kv_paged *paged, int *ran)
{
    *ran = 0;
    uintptr_t align = (uintptr_t)out | (uintptr_t)q | (uintptr_t)k | (uintptr_t)v;
    if ((head_dim != 64 && head_dim != 128) || (align & 15)) return 0;
    *ran = 1;
    if (paged) {
        /* A decode step's few rows per sequence: one warp a block, a GQA group's heads packed
         * when they fit its 16 rows; the same rows' arithmetic. */
        int pack = max_seqlen_q * (n_heads / n_kv_heads) <= 16, one = max_seqlen_q <= 16;
#define PAGED_FWD(D)                                                                                                   \
    (pack  ? launch_fwd<D, 1, true>(ctx, out, lse, q, k, v, cu_q, *paged, n_seqs, max_seqlen_q, n_heads, n_kv_heads,     \
                                    scale, causal)                                                                     \
     : one ? launch_fwd<D, 1>(ctx, out, lse, q, k, v, cu_q, *paged, n_seqs, max_seqlen_q, n_heads, n_kv_heads, scale,  \
                              causal)                                                                                  \
           : launch_fwd<D, FWD_WARPS>(ctx, out, lse, q, k, v, cu_q, *paged, n_seqs, max_seqlen_q, n_heads, n_kv_heads, \
                                      scale, causal))
        int rc = head_dim == 64 ? PAGED_FWD(64) : PAGED_FWD(128);
#undef PAGED_FWD
        return rc;
    }
    rl_kv_dense src = {cu_k, used_k, (size_t)n_kv_heads * head_dim};
    if (head_dim == 64)
        return launch_fwd<64, FWD_WARPS>(ctx, out, lse, q, k, v, cu_q, src, n_seqs, max_seqlen_q, n_heads, n_kv_heads,
                                         scale, causal);
    return launch_fwd<128, FWD_WARPS>(ctx, out, lse, q, k, v, cu_q, src, n_seqs, max_seqlen_q, n_heads, n_kv_heads,
                                      scale, causal);
}
