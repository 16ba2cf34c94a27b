/* paged_attention_decode.cu — the tensor-core split-KV kernel of rl_paged_attention_fwd for
 * head_dim 64 and 128: chunks of up to 16 packed (query, group head) rows (paged_attention.cuh
 * has the rows, the splits and the partial layout). Decode steps of at most 8 rows over KV
 * blocks of a multiple of 16 tokens go to paged_attention_decode8.cu instead.
 *
 * Decode reads each cached key and value once and does almost no arithmetic per byte, so what
 * matters is keeping enough loads in flight with few instructions. A block (W warps: 2 where
 * the groups fill the GPU, pa_many_groups, so that 4 blocks fit an SM and a 64-sequence decode
 * step runs in one wave; else 4, as at batch 1) owns one (sequence, row tile, kv head, split); each
 * warp is an independent flash-decoding worker over its share of the split's keys (keys
 * 16w .. 16w + 15 of every 16W keys): it gathers its 16 keys and values through the block
 * table into its own shared-memory stages with cp.async, S deep (3), and runs S = Q K^T and
 * O += P V on tensor cores (mma.sync m16n8k16, the 16 rows of the tile as M; Q fragments stay
 * in registers), with its own online softmax in the exp2 domain. No barrier between warps until
 * the end, where the W (m, l, O) are merged in shared
 * memory (out = sum_w 2^(m_w - m) O_w / sum_w 2^(m_w - m) l_w) and written (or written as the
 * split's partial, merged by the group's last block: pa_finish_split). Lane l of a warp looks up the block of key l (l < 16), and the row bases
 * are passed around by shuffles, so each tile costs one table read per key. The lengths and
 * the first tiles' table reads come before the programmatic-launch wait (no kernel of a step
 * writes them), so that q and the keys are requested as soon as the wait returns. */
#include "backend/cuda/mma.cuh"
#include "backend/cuda/paged_attention.cuh"

#define DEC_KEYS 16 /* keys per warp per step */

/* W warps, S stages per warp */
template <int D, int W, int S>
struct dec_smem {
    bf16 q[16 * D];
    bf16 kv[W][S][2][DEC_KEYS * D]; /* per warp, per stage: K then V */
};

/* Where lane l < 16's key key0 + l starts in the pool (-1: at or past key_end, zero-filled). */
template <int D>
__device__ __forceinline__ long long dec_offset(const pa_args &a, const int32_t *table, int g, int key0, int key_end,
                                                int lane)
{
    int key = key0 + (lane & 15);
    if (lane >= 16 || key >= key_end) return -1;
    return (long long)table[key / a.block_size] * (long long)a.block_stride +
           ((long long)(key % a.block_size) * a.n_kv_heads + g) * D;
}

/* Warp w's keys into stage buffers k/v (swizzled 16 x D) from the row offsets lanes 0..15 hold
 * (dec_offset); each lane copies 16-byte pieces of 32 / (D / 8) rows per step. */
template <int D>
__device__ __forceinline__ void dec_copy(bf16 *ks, bf16 *vs, const pa_args &a, long long off, int lane)
{
    constexpr int CH = D / 8, ROWS_PER_STEP = 32 / CH;
    int ch = lane % CH, sub = lane / CH;
#pragma unroll
    for (int r0 = 0; r0 < DEC_KEYS; r0 += ROWS_PER_STEP) {
        int r = r0 + sub;
        long long o = __shfl_sync(0xffffffffu, off, r);
        bool valid = o >= 0;
        size_t at = valid ? (size_t)o + ch * 8 : 0;
        cp_async16(ks + swz<D>(r, ch * 8), a.k + at, valid);
        cp_async16(vs + swz<D>(r, ch * 8), a.v + at, valid);
    }
}

/* Warp w's keys [key0, key0 + 16) into stage buffers k/v; keys at or past key_end are
 * zero-filled. Lane l < 16 finds key key0 + l's row, then the rows are copied. */
template <int D>
__device__ __forceinline__ void dec_load(bf16 *ks, bf16 *vs, const pa_args &a, const int32_t *table, int g,
                                         int key0, int key_end, int lane)
{
    dec_copy<D>(ks, vs, a, dec_offset<D>(a, table, g, key0, key_end, lane), lane);
}

template <int D, int W, int S>
__global__ void __launch_bounds__(W * 32) paged_decode_mma_kernel(pa_args a)
{
    constexpr int DEC_WARPS = W, DEC_THREADS = W * 32, DEC_STAGES = S, STEP = W * DEC_KEYS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    dec_smem<D, W, S> &sm = *(dec_smem<D, W, S> *)smem_raw;
    int s = blockIdx.x / a.n_qtiles, qt = blockIdx.x % a.n_qtiles, g = blockIdx.y, sp = blockIdx.z;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* Before the wait on the previous kernel (which writes q and this step's keys and values):
     * the lengths and block tables (the decode state, advanced at the end of the previous step,
     * or uploaded before the step; no kernel of a step writes them), so the split's range and
     * its first tiles' key rows are known when the wait returns. Blocks without work leave here. */
    int qb = a.cu_q[s], len_q = a.cu_q[s + 1] - qb, len_k = a.seqlens_k[s];
    int n_rows = len_q * a.group, r0 = qt * 16;
    if (r0 >= n_rows || n_rows > a.max_rows) return;
    int nr = min(16, n_rows - r0);
    if (len_k <= 0) {
        if (sp != 0) return;
        rl_pdl_begin();
        for (int idx = threadIdx.x; idx < nr * D; idx += DEC_THREADS)
            a.out[pa_out_row(a, qb, g, r0 + idx / D) + idx % D] = rl_f2b(0.0f);
        return;
    }
    int n_sp, tps;
    split_range(len_k, a.max_splits, a.min_tiles, &n_sp, &tps);
    if (sp >= n_sp) return;
    /* a sequence whose keys fit one split writes its rows: nothing to merge */
    bool direct = a.part_o == NULL || n_sp == 1;
    int shift = len_k - len_q;
    int k_begin = sp * tps * PA_TK;
    int k_end = min(min(len_k, (sp + 1) * tps * PA_TK), shift + (r0 + nr - 1) / a.group + 1);
    int n_tiles = k_end > k_begin ? (k_end - k_begin + STEP - 1) / STEP : 0; /* steps of W x 16 keys */
    const int32_t *table = a.tables + (size_t)s * a.max_blocks;
    long long first_off[DEC_STAGES - 1];
#pragma unroll
    for (int st = 0; st < DEC_STAGES - 1; st++)
        first_off[st] = st < n_tiles ? dec_offset<D>(a, table, g, k_begin + st * STEP + warp * DEC_KEYS, k_end, lane)
                                     : -1;
    rl_pdl_begin();

    /* Q: 16 packed rows (zero past nr), loaded by the whole block once */
    constexpr int CH = D / 8;
    for (int idx = threadIdx.x; idx < 16 * CH; idx += DEC_THREADS) {
        int r = idx / CH, ch = idx % CH;
        bool valid = r < nr;
        const bf16 *src = valid ? a.q + pa_out_row(a, qb, g, r0 + r) + ch * 8 : a.q;
        cp_async16(sm.q + swz<D>(r, ch * 8), src, valid);
    }
    cp_async_commit();

    /* this warp's pipeline over its keys of tiles 0 .. n_tiles: the first stages are in flight
     * with Q (its group completes first) */
#pragma unroll
    for (int st = 0; st < DEC_STAGES - 1; st++) {
        if (st < n_tiles) dec_copy<D>(sm.kv[warp][st][0], sm.kv[warp][st][1], a, first_off[st], lane);
        cp_async_commit();
    }
    cp_async_wait<DEC_STAGES - 1>();
    __syncthreads();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        int r = (lane & 7) + ((lane >> 3) & 1) * 8, c = kk * 16 + (lane >> 4) * 8;
        ldmatrix_x4(qf[kk], sm.q + swz<D>(r, c));
    }
    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};
    int gq = lane >> 2, tq = lane & 3;
    int lim[2];
#pragma unroll
    for (int half = 0; half < 2; half++) lim[half] = min(k_end, shift + (r0 + gq + half * 8) / a.group + 1);

    for (int t = 0; t < n_tiles; t++) {
        cp_async_wait<DEC_STAGES - 2>();
        __syncwarp();
        int next = t + DEC_STAGES - 1;
        if (next < n_tiles) {
            int st = next % DEC_STAGES;
            dec_load<D>(sm.kv[warp][st][0], sm.kv[warp][st][1], a, table, g, k_begin + next * STEP + warp * DEC_KEYS,
                        k_end, lane);
        }
        cp_async_commit();
        const bf16 *kt = sm.kv[warp][t % DEC_STAGES][0], *vt = sm.kv[warp][t % DEC_STAGES][1];
        float sc[2][4];
#pragma unroll
        for (int nt = 0; nt < 2; nt++) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
        mma_a_regs_tile_t<D, 2>(sc, qf, kt);
        int key0 = k_begin + t * STEP + warp * DEC_KEYS;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            float mx = m_r[half];
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float x = sc[nt][half * 2 + e] * a.scale_log2;
                    if (key0 + nt * 8 + tq * 2 + e >= lim[half]) x = -INFINITY;
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
            for (int nt = 0; nt < 2; nt++)
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
        mma_p_tile<D, 2>(o, sc, vt);
    }
    cp_async_wait<0>();
    __syncthreads();

    /* merge the warps: per row, m and l of each warp, then the weighted outputs */
    float *mo = (float *)sm.kv;                     /* [DEC_WARPS][16][D] */
    float *ml = mo + DEC_WARPS * 16 * D;            /* [DEC_WARPS][16][2] */
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = gq + half * 8;
        float l = l_r[half];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        if (tq == 0) {
            ml[(warp * 16 + row) * 2] = m_r[half];
            ml[(warp * 16 + row) * 2 + 1] = l;
        }
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            mo[(warp * 16 + row) * D + dt * 8 + tq * 2] = o[dt][half * 2];
            mo[(warp * 16 + row) * D + dt * 8 + tq * 2 + 1] = o[dt][half * 2 + 1];
        }
    }
    __syncthreads();
    pa_merge_warps<D, DEC_WARPS, 16>(a, mo, ml, qb, g, r0, nr, sp, n_sp, direct);
}

template <int D, int W, int S>
static int launch_dec(rl_ctx *ctx, const pa_args *a, dim3 grid)
{
    return pa_launch_decode(ctx, paged_decode_mma_kernel<D, W, S>, a, grid, W, sizeof(dec_smem<D, W, S>));
}

int rl_cuda_paged_decode_mma(rl_ctx *ctx, const pa_args *a, int n_seqs)
{
    dim3 grid((unsigned)(n_seqs * a->n_qtiles), (unsigned)a->n_kv_heads, (unsigned)a->max_splits);
    /* many groups: 2-warp blocks (52 KB at head_dim 128, 4 per SM: 64 sequences x 8 kv heads
     * in one wave); fewer (batch 1): 4 warps each */
    int many = pa_many_groups(ctx, (long)grid.x * grid.y);
    if (a->head_dim == 64) return many ? launch_dec<64, 2, 3>(ctx, a, grid) : launch_dec<64, 4, 3>(ctx, a, grid);
    return many ? launch_dec<128, 2, 3>(ctx, a, grid) : launch_dec<128, 4, 3>(ctx, a, grid);
}
