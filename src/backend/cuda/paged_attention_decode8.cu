/* paged_attention_decode8.cu — the tensor-core split-KV kernel of rl_paged_attention_fwd for
 * decode steps: at most 8 packed (query, group head) rows per (sequence, kv head), head_dim 64
 * or 128, KV blocks of a multiple of 16 tokens (paged_attention.cuh has the rows, the splits
 * and the partial layout; longer row tiles go to paged_attention_decode.cu).
 *
 * A decode step's rows per kv head are few (Qwen3: 2), so the mma runs with the keys as M
 * and the rows as N (mma.sync m16n8k16): S^T = K Q^T takes D/16 mma per 16 keys where a
 * 16-row tile of queries took twice that, and O^T += V^T P^T as many, with a 16 x 8
 * accumulator per 16 output dims. Q^T stays in registers as B fragments; P^T is moved from the
 * S^T accumulator to B fragments with four shuffles.
 *
 * A block (W warps) owns one (sequence, row tile, kv head, split); warp w gathers keys
 * 16w .. 16w + 15 of every 16W keys, which lie in one KV block, into its own shared-memory
 * stages with cp.async, S deep, at fixed offsets from the block's base (one table entry per
 * 16 keys, read one step ahead so that no global load stands between a stage's wait and the
 * next copy). Each warp runs its own online softmax (exp2 domain); the W (m, l, O) are merged
 * in shared memory at the end and written (or written as the split's partial, merged by the
 * group's last block: pa_finish_split). The lengths and the first table entries are read
 * before the programmatic-launch wait (no kernel of a step writes them).
 */
#include "backend/cuda/mma.cuh"
#include "backend/cuda/paged_attention.cuh"

#define D8_KEYS 16 /* keys per warp per step: one mma M */
#define D8_ROWS 8  /* rows per block: one mma N */

template <int D, int W, int S>
struct d8_smem {
    bf16 kv[W][S][2][D8_KEYS * D]; /* per warp, per stage: K then V, swizzled 16 x D */
};

/* The pool offset of the first key of the 16-key tile at key0 (its KV block's entry blk),
 * kv head g, for this lane's first row and 16-byte piece (d8_copy's assignment). */
template <int D>
__device__ __forceinline__ long long d8_base(const pa_args &a, int blk, int key0, int g, int lane)
{
    constexpr int CH = D / 8;
    int r = lane / CH, ch = lane % CH;
    return (long long)blk * (long long)a.block_stride + ((long long)(key0 % a.block_size + r) * a.n_kv_heads + g) * D +
           ch * 8;
}

/* The tile's keys and values into stage buffers k/v: lane copies 16-byte piece lane % (D/8)
 * of rows lane / (D/8) + i * 32 / (D/8); rows at or past key_end are zero-filled. */
template <int D>
__device__ __forceinline__ void d8_copy(bf16 *ks, bf16 *vs, const pa_args &a, long long base, int key0, int key_end,
                                        int lane)
{
    constexpr int CH = D / 8, RPS = 32 / CH;
    int r = lane / CH, ch = lane % CH;
    long long row_step = (long long)RPS * a.n_kv_heads * D;
#pragma unroll
    for (int i = 0; i < D8_KEYS / RPS; i++) {
        int rr = r + i * RPS;
        bool valid = key0 + rr < key_end;
        size_t at = valid ? (size_t)(base + i * row_step) : 0;
        cp_async16(ks + swz<D>(rr, ch * 8), a.k + at, valid);
        cp_async16(vs + swz<D>(rr, ch * 8), a.v + at, valid);
    }
}

template <int D, int W, int S>
__global__ void __launch_bounds__(W * 32) paged_decode8_kernel(pa_args a)
{
    constexpr int THREADS = W * 32, STEP = W * D8_KEYS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    d8_smem<D, W, S> &sm = *(d8_smem<D, W, S> *)smem_raw;
    int s = blockIdx.x / a.n_qtiles, qt = blockIdx.x % a.n_qtiles, g = blockIdx.y, sp = blockIdx.z;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int qb = a.cu_q[s], len_q = a.cu_q[s + 1] - qb, len_k = a.seqlens_k[s];
    int n_rows = len_q * a.group, r0 = qt * D8_ROWS;
    if (r0 >= n_rows || n_rows > a.max_rows) return;
    int nr = min(D8_ROWS, n_rows - r0);
    if (len_k <= 0) {
        if (sp != 0) return;
        rl_pdl_begin();
        for (int idx = threadIdx.x; idx < nr * D; idx += THREADS)
            a.out[pa_out_row(a, qb, g, r0 + idx / D) + idx % D] = rl_f2b(0.0f);
        return;
    }
    int n_sp, tps;
    split_range(len_k, a.max_splits, a.min_tiles, &n_sp, &tps);
    if (sp >= n_sp) return;
    bool direct = a.part_o == NULL || n_sp == 1; /* one split: nothing to merge */
    int shift = len_k - len_q;
    int k_begin = sp * tps * PA_TK;
    int k_end = min(min(len_k, (sp + 1) * tps * PA_TK), shift + (r0 + nr - 1) / a.group + 1);
    int n_tiles = k_end > k_begin ? (k_end - k_begin + STEP - 1) / STEP : 0;
    const int32_t *table = a.tables + (size_t)s * a.max_blocks;
    int key_w = k_begin + warp * D8_KEYS; /* this warp's first key; tile t starts at key_w + t * STEP */
    /* the KV block of tiles 0 .. S - 1 (tile S - 1's is read ahead, as in the loop) */
    int blk[S];
#pragma unroll
    for (int st = 0; st < S; st++) {
        int key0 = key_w + st * STEP;
        blk[st] = st < n_tiles && key0 < k_end ? table[key0 / a.block_size] : 0;
    }
    rl_pdl_begin();

#pragma unroll
    for (int st = 0; st < S - 1; st++) {
        int key0 = key_w + st * STEP;
        if (st < n_tiles) d8_copy<D>(sm.kv[warp][st][0], sm.kv[warp][st][1], a, d8_base<D>(a, blk[st], key0, g, lane),
                                     key0, k_end, lane);
        cp_async_commit();
    }
    int blk_next = blk[S - 1];

    /* Q^T as B fragments: lane (gq, tq) holds row gq's dims kk*16 + 2tq, +1 and + 8, + 9 */
    int gq = lane >> 2, tq = lane & 3;
    uint32_t qf[D / 16][2];
    {
        const uint32_t *qrow =
            (const uint32_t *)(a.q + (gq < nr ? pa_out_row(a, qb, g, r0 + gq) : pa_out_row(a, qb, g, r0)));
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            qf[kk][0] = gq < nr ? qrow[kk * 8 + tq] : 0u;
            qf[kk][1] = gq < nr ? qrow[kk * 8 + tq + 4] : 0u;
        }
    }
    float o[D / 16][4];
#pragma unroll
    for (int i = 0; i < D / 16; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    /* this lane's rows 2tq, 2tq + 1: running max (the same in every lane of a row), its keys' sum */
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.0f, 0.0f};
    int lim[2];
#pragma unroll
    for (int j = 0; j < 2; j++) lim[j] = min(k_end, shift + (r0 + 2 * tq + j) / a.group + 1);
    /* P^T's B fragment of lane (gq, tq): row gq's keys 2tq, 2tq + 1 (+ 8) live in lanes 8tq + gq/2
     * and 8tq + 4 + gq/2, in half gq % 2 of their packed (row 2t', row 2t' + 1) pairs */
    int src_a = 8 * tq + (gq >> 1), src_b = src_a + 4;
    unsigned half_sel = (gq & 1) ? 0x7632u : 0x5410u;

    for (int t = 0; t < n_tiles; t++) {
        cp_async_wait<S - 2>();
        __syncwarp();
        int next = t + S - 1;
        if (next < n_tiles) {
            int key0 = key_w + next * STEP;
            d8_copy<D>(sm.kv[warp][next % S][0], sm.kv[warp][next % S][1], a, d8_base<D>(a, blk_next, key0, g, lane),
                       key0, k_end, lane);
            int key1 = key0 + STEP;
            if (next + 1 < n_tiles && key1 < k_end) blk_next = table[key1 / a.block_size];
        }
        cp_async_commit();
        const bf16 *kt = sm.kv[warp][t % S][0], *vt = sm.kv[warp][t % S][1];
        int key0 = key_w + t * STEP;
        /* S^T (16 keys x 8 rows) in two chains of D/32 mma */
        float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sc2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t af[4];
            ldmatrix_x4(af, kt + swz<D>((lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
            mma16816(kk & 1 ? sc2 : sc, af, qf[kk][0], qf[kk][1]);
        }
        float p[4];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            /* row 2tq + j: keys key0 + gq (sc[j]) and key0 + gq + 8 (sc[j + 2]) */
            float x0 = (sc[j] + sc2[j]) * a.scale_log2, x1 = (sc[j + 2] + sc2[j + 2]) * a.scale_log2;
            if (key0 + gq >= lim[j]) x0 = -INFINITY;
            if (key0 + gq + 8 >= lim[j]) x1 = -INFINITY;
            float mx = fmaxf(m_r[j], fmaxf(x0, x1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
            float base = mx == -INFINITY ? 0.0f : mx;
            float corr = exp2f(m_r[j] - base);
            m_r[j] = mx;
            p[j] = exp2f(x0 - base);
            p[j + 2] = exp2f(x1 - base);
            l_r[j] = l_r[j] * corr + p[j] + p[j + 2];
#pragma unroll
            for (int m = 0; m < D / 16; m++) {
                o[m][j] *= corr;
                o[m][j + 2] *= corr;
            }
        }
        uint32_t p01 = pack_bf16(p[0], p[1]), p23 = pack_bf16(p[2], p[3]);
        uint32_t xa01 = __shfl_sync(0xffffffffu, p01, src_a), xb01 = __shfl_sync(0xffffffffu, p01, src_b);
        uint32_t xa23 = __shfl_sync(0xffffffffu, p23, src_a), xb23 = __shfl_sync(0xffffffffu, p23, src_b);
        uint32_t b0 = __byte_perm(xa01, xb01, half_sel), b1 = __byte_perm(xa23, xb23, half_sel);

        /* O^T (D x 8 rows) += V^T P^T, one mma per 16 dims */
#pragma unroll
        for (int m = 0; m < D / 16; m++) {
            uint32_t af[4];
            ldmatrix_x4_trans(af, vt + swz<D>((lane & 7) + (lane >> 4) * 8, m * 16 + ((lane >> 3) & 1) * 8));
            mma16816(o[m], af, b0, b1);
        }
    }
    cp_async_wait<0>();
    __syncthreads();

    /* merge the warps: per row, m and l of each warp, then the weighted outputs */
    float *mo = (float *)sm.kv;          /* [W][8][D] */
    float *ml = mo + W * D8_ROWS * D;    /* [W][8][2] */
#pragma unroll
    for (int j = 0; j < 2; j++) {
        int row = 2 * tq + j;
        float l = l_r[j];
        l += __shfl_xor_sync(0xffffffffu, l, 4);
        l += __shfl_xor_sync(0xffffffffu, l, 8);
        l += __shfl_xor_sync(0xffffffffu, l, 16);
        if (gq == 0) {
            ml[(warp * D8_ROWS + row) * 2] = m_r[j];
            ml[(warp * D8_ROWS + row) * 2 + 1] = l;
        }
#pragma unroll
        for (int m = 0; m < D / 16; m++) {
            mo[(warp * D8_ROWS + row) * D + m * 16 + gq] = o[m][j];
            mo[(warp * D8_ROWS + row) * D + m * 16 + gq + 8] = o[m][j + 2];
        }
    }
    __syncthreads();
    pa_merge_warps<D, W, D8_ROWS>(a, mo, ml, qb, g, r0, nr, sp, n_sp, direct);
}

template <int D, int W, int S>
static int launch_d8(rl_ctx *ctx, const pa_args *a, dim3 grid)
{
    return pa_launch_decode(ctx, paged_decode8_kernel<D, W, S>, a, grid, W, sizeof(d8_smem<D, W, S>));
}

int rl_cuda_paged_decode8(rl_ctx *ctx, const pa_args *a, int n_seqs)
{
    dim3 grid((unsigned)(n_seqs * a->n_qtiles), (unsigned)a->n_kv_heads, (unsigned)a->max_splits);
    /* many groups (pa_many_groups): 2-warp blocks (4 per SM at head_dim 128: 64 sequences x 8
     * kv heads in one wave); fewer: 4 warps each */
    int many = pa_many_groups(ctx, (long)grid.x * grid.y);
    if (a->head_dim == 64) return many ? launch_d8<64, 2, 3>(ctx, a, grid) : launch_d8<64, 4, 3>(ctx, a, grid);
    return many ? launch_d8<128, 2, 3>(ctx, a, grid) : launch_d8<128, 4, 3>(ctx, a, grid);
}
