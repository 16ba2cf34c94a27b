/* paged_attention_prefill.cu — the tensor-core part of rl_paged_attention_fwd: chunks of more
 * than `small_rows` packed rows at head_dim 64 and 128 (prefill and chunked prefill against
 * cached blocks). paged_attention.cu has the op's entry point and the split-KV kernel for the
 * rest.
 *
 * attention_mma.cu's FlashAttention-2 forward (8 warps x 16 rows, 64-key tiles double-buffered
 * with cp.async into XOR-swizzled shared memory, mma.sync m16n8k16 with the online softmax in
 * the exp2 domain and P re-packed from the accumulators) with two changes: the 128 rows of a
 * block are packed (query, head of the GQA group) pairs of one kv head (row r = query r / group,
 * head kv_head * group + r % group), so each key tile serves all the group's heads; and key /
 * value rows are gathered through the block table (key j in block table[j / block_size], row
 * j % block_size). Query i of a sequence sees keys j <= len_k - len_q + i. A sequence with
 * seqlens_k 0 gets zeros. Row tiles run last-first (they carry the most keys). */
#include "backend/cuda/mma.cuh"

#define PF_WARPS 8
#define PF_THREADS (PF_WARPS * 32)
#define PF_BM (16 * PF_WARPS)
#define PF_BN 64

struct pf_args {
    bf16 *out;
    const bf16 *q, *k, *v;
    size_t block_stride;
    int block_size, max_blocks;
    const int32_t *tables, *cu_q, *seqlens_k;
    int n_heads, n_kv_heads, group, min_rows;
    float scale_log2;
};

/* Keys [key0, key0 + PF_BN) of one kv head into a swizzled tile; rows at or past n_valid are
 * zero-filled. head_off: the kv head's offset in a token row. */
template <int D>
__device__ __forceinline__ void load_paged_tile(bf16 *tile, const bf16 *plane, const pf_args &a,
                                                const int32_t *table, size_t head_off, int key0, int n_valid)
{
    constexpr int CH = D / 8;
    size_t row = (size_t)a.n_kv_heads * D;
    for (int idx = threadIdx.x; idx < PF_BN * CH; idx += PF_THREADS) {
        int r = idx / CH, ch = idx % CH, key = key0 + r;
        bool valid = key < n_valid;
        const bf16 *src = plane;
        if (valid)
            src = plane + (size_t)table[key / a.block_size] * a.block_stride + (size_t)(key % a.block_size) * row +
                  head_off + ch * 8;
        cp_async16(tile + swz<D>(r, ch * 8), src, valid);
    }
}

/* Packed rows [row0, row0 + PF_BM) of the sequence's queries for kv head g; rows at or past
 * n_rows are zero-filled. */
template <int D>
__device__ __forceinline__ void load_q_tile(bf16 *tile, const pf_args &a, int qb, int g, int row0, int n_rows)
{
    constexpr int CH = D / 8;
    for (int idx = threadIdx.x; idx < PF_BM * CH; idx += PF_THREADS) {
        int r = idx / CH, ch = idx % CH, pr = row0 + r;
        bool valid = pr < n_rows;
        const bf16 *src = a.q;
        if (valid) src = a.q + ((size_t)(qb + pr / a.group) * a.n_heads + g * a.group + pr % a.group) * D + ch * 8;
        cp_async16(tile + swz<D>(r, ch * 8), src, valid);
    }
}

template <int D>
__global__ void __launch_bounds__(PF_THREADS) paged_prefill_mma_kernel(pf_args a)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *qs = (bf16 *)smem_raw;
    bf16 *ks = qs + PF_BM * D; /* [2][PF_BN * D] */
    bf16 *vs = ks + 2 * PF_BN * D;
    int g = blockIdx.y, s = blockIdx.z, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int qb = a.cu_q[s], len_q = a.cu_q[s + 1] - qb, n_rows = len_q * a.group;
    int row0 = (gridDim.x - 1 - blockIdx.x) * PF_BM;
    if (row0 >= n_rows || n_rows <= a.min_rows) return;
    int len_k = a.seqlens_k[s];
    size_t head_off = (size_t)g * D;
    const int32_t *table = a.tables + (size_t)s * a.max_blocks;

    int shift = len_k - len_q; /* query i sees keys j <= shift + i */
    int last_row = min(row0 + PF_BM, n_rows) - 1;
    int keys_end = len_k > 0 ? min(len_k, max(0, shift + last_row / a.group + 1)) : 0;
    int n_tiles = (keys_end + PF_BN - 1) / PF_BN;
    int unmasked_end = len_k > 0 ? min(len_k, max(0, shift + row0 / a.group + 1)) : 0;

    load_q_tile<D>(qs, a, qb, g, row0, n_rows);
    if (n_tiles > 0) {
        load_paged_tile<D>(ks, a.k, a, table, head_off, 0, len_k);
        load_paged_tile<D>(vs, a.v, a, table, head_off, 0, len_k);
    }
    cp_async_commit();

    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};
    uint32_t qf[D / 16][4];
    int gq = lane >> 2, tq = lane & 3;
    int row_a = row0 + warp * 16 + gq; /* this thread's packed rows: row_a and row_a + 8 */

    for (int j = 0; j < n_tiles; j++) {
        int buf = j & 1;
        if (j + 1 < n_tiles) {
            load_paged_tile<D>(ks + (buf ^ 1) * PF_BN * D, a.k, a, table, head_off, (j + 1) * PF_BN, len_k);
            load_paged_tile<D>(vs + (buf ^ 1) * PF_BN * D, a.v, a, table, head_off, (j + 1) * PF_BN, len_k);
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
        const bf16 *kt = ks + buf * PF_BN * D, *vt = vs + buf * PF_BN * D;
        float sc[PF_BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < PF_BN / 8; nt++) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
        mma_a_regs_tile_t<D, PF_BN / 8>(sc, qf, kt);
        int key0 = j * PF_BN;
        bool need_mask = key0 + PF_BN > unmasked_end;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int limit = min(len_k, shift + (row_a + half * 8) / a.group + 1);
            float mx = m_r[half];
#pragma unroll
            for (int nt = 0; nt < PF_BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float x = sc[nt][half * 2 + e] * a.scale_log2;
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
            for (int nt = 0; nt < PF_BN / 8; nt++)
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
        mma_p_tile<D, PF_BN / 8>(o, sc, vt);
        __syncthreads();
    }
    if (n_tiles == 0) cp_async_wait<0>();

#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = row_a + half * 8;
        float l = l_r[half];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        if (row >= n_rows) continue;
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        bf16 *orow = a.out + ((size_t)(qb + row / a.group) * a.n_heads + g * a.group + row % a.group) * D;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            __nv_bfloat162 val = __floats2bfloat162_rn(o[dt][half * 2] * inv, o[dt][half * 2 + 1] * inv);
            *(__nv_bfloat162 *)(orow + dt * 8 + tq * 2) = val;
        }
    }
}

int rl_cuda_paged_prefill_mma(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv, const int32_t *cu_q,
                              const int32_t *seqlens_k, int n_seqs, int max_seqlen_q, int n_heads, int n_kv_heads,
                              int head_dim, float scale, int min_rows)
{
    pf_args a;
    a.out = (bf16 *)out;
    a.q = (const bf16 *)q;
    a.k = (const bf16 *)kv->k;
    a.v = (const bf16 *)kv->v;
    a.block_stride = kv->block_stride;
    a.block_size = kv->block_size;
    a.max_blocks = kv->max_blocks;
    a.tables = kv->block_tables;
    a.cu_q = cu_q;
    a.seqlens_k = seqlens_k;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.group = n_heads / n_kv_heads;
    a.min_rows = min_rows;
    a.scale_log2 = scale * 1.4426950408889634f;
    long tiles = ((long)max_seqlen_q * a.group + PF_BM - 1) / PF_BM;
    dim3 grid((unsigned)tiles, (unsigned)n_kv_heads, (unsigned)n_seqs);
    size_t smem = (size_t)(PF_BM + 4 * PF_BN) * head_dim * sizeof(bf16);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    if (head_dim == 64) {
        CUDA_CHECK(cudaFuncSetAttribute(paged_prefill_mma_kernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
        paged_prefill_mma_kernel<64><<<grid, PF_THREADS, smem, st>>>(a);
    } else {
        CUDA_CHECK(cudaFuncSetAttribute(paged_prefill_mma_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
        paged_prefill_mma_kernel<128><<<grid, PF_THREADS, smem, st>>>(a);
    }
    LAUNCH_CHECK();
    return 0;
}
