/* paged_attention.cuh — what the split-KV kernels of the paged attention share
 * (paged_attention.cu: the op's entry point, the CUDA-core kernel and the combine;
 * paged_attention_decode.cu: the tensor-core kernel): their arguments, the split of a
 * sequence's keys into ranges (from its length, on the device), and the row layout.
 *
 * Rows: packed rows r of (sequence, kv head) are query r / group, head kv_head * group +
 * r % group. A split-KV block owns (sequence, row tile, kv head, split); without splits it
 * writes its rows, with splits it writes the unnormalised output and (m, l) of each row (exp2
 * domain) to partial slot ((sequence * n_qtiles + row tile) * n_kv_heads + kv head) *
 * row_tile + row, and the last block of the group to finish merges the group's splits
 * (pa_finish_split: a counter per group, counted up with atomics and reset by that last
 * block, so it is zero again for the next launch or graph replay):
 *     out = sum_s 2^(m_s - m) o_s / sum_s 2^(m_s - m) l_s,  m = max_s m_s. */
#ifndef RL_BACKEND_CUDA_PAGED_ATTENTION_CUH
#define RL_BACKEND_CUDA_PAGED_ATTENTION_CUH

#include "backend/cuda/common.cuh"

#define PA_TK 64          /* keys per tile: the unit splits are made of */
#define PA_MIN_TILES 2    /* a split takes at least this many tiles */
#define PA_LONG_TILES 8   /* ... and this many where the groups fill the GPU (pa_many_groups) */
#define PA_MAX_SPLITS 64
#define PA_SMALL_ROWS 16  /* rows a split-KV block holds; longer chunks go to the prefill kernel */

/* T: the act dtype of q, out and the pool (bf16; float in the fp32 mode, CUDA-core kernel only). */
template <typename T>
struct pa_args_t {
    T *out;
    const T *q, *k, *v;
    size_t block_stride;
    int block_size, max_blocks;
    const int32_t *tables, *cu_q, *seqlens_k;
    int n_heads, n_kv_heads, head_dim, group;
    int n_qtiles, row_tile, max_splits, max_rows; /* sequences with more packed rows are not these kernels' */
    int min_tiles; /* tiles a split takes at least (PA_MIN_TILES or PA_LONG_TILES) */
    float scale_log2;
    float *part_o, *part_ml; /* [max_splits][n_slots][head_dim], [max_splits][n_slots][2]; NULL: no splits */
    int n_slots;
    unsigned *counters; /* one per (sequence, row tile, kv head), zero between launches */
};
typedef pa_args_t<bf16> pa_args;

/* Two or more (sequence, row tile, kv head) groups per SM (a decode step of 33+ sequences of
 * Qwen3-0.6B's 8 kv heads): the groups fill the GPU without splits, so only long sequences are
 * split (PA_LONG_TILES tiles a split at least: the splits' merge costs more than it spreads at
 * a few hundred keys), and the tensor-core kernel runs 2-warp blocks (4 per SM: one wave for 64
 * sequences). Fewer groups (batch 1): splits of PA_MIN_TILES tiles, 4-warp blocks. */
static inline int pa_many_groups(rl_ctx *ctx, long groups) { return groups >= 2L * rl_cuda_st(ctx)->n_sms; }

/* Launches a tensor-core decode kernel of `warps` warps and smem bytes of dynamic shared memory
 * under programmatic dependent launch (the two decode kernels' launcher). */
template <typename Args>
static int pa_launch_decode(rl_ctx *ctx, void (*kernel)(Args), const Args *a, dim3 grid, int warps, size_t smem)
{
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_CHECK(rl_launch_pdl(kernel, grid, dim3(warps * 32), smem, rl_cuda_st(ctx)->stream, *a));
    LAUNCH_CHECK();
    return 0;
}

/* The splits of a sequence with len_k keys: n_splits ranges of tiles_per_split tiles (each at
 * least min_tiles, as far as max_splits allows). */
__device__ __forceinline__ void split_range(int len_k, int max_splits, int min_tiles, int *n_splits,
                                            int *tiles_per_split)
{
    int n_tiles = (len_k + PA_TK - 1) / PA_TK;
    if (n_tiles <= 0) {
        *n_splits = 0;
        *tiles_per_split = 0;
        return;
    }
    int want = min(max_splits, (n_tiles + min_tiles - 1) / min_tiles);
    int tps = (n_tiles + want - 1) / want;
    *n_splits = (n_tiles + tps - 1) / tps;
    *tiles_per_split = tps;
}

/* Output row of packed row r of sequence s (query qb + r / group, head g * group + r % group). */
template <typename T>
__device__ __forceinline__ size_t pa_out_row(const pa_args_t<T> &a, int qb, int g, int r)
{
    return ((size_t)(qb + r / a.group) * a.n_heads + g * a.group + r % a.group) * a.head_dim;
}

/* Called by the whole block after it wrote its partials (rows r0 .. r0 + nr of the group with
 * n_sp splits): the group's last block to finish merges every split of these rows into out. */
template <typename T>
__device__ __forceinline__ void pa_finish_split(const pa_args_t<T> &a, int qb, int g, int r0, int nr, int n_sp)
{
    __shared__ float sh_m[PA_SMALL_ROWS], sh_l[PA_SMALL_ROWS];
    __shared__ int sh_last;
    size_t group = (size_t)blockIdx.x * a.n_kv_heads + g;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned done = atomicAdd(a.counters + group, 1u);
        sh_last = done == (unsigned)n_sp - 1;
        if (sh_last) a.counters[group] = 0;
    }
    __syncthreads();
    if (!sh_last) return;
    __threadfence();
    /* the other blocks' partials bypass L1 (__ldcg): it is not coherent across SMs */
    if ((int)threadIdx.x < nr) {
        size_t slot = group * a.row_tile + threadIdx.x;
        float m = -INFINITY, l = 0.0f;
        for (int sp = 0; sp < n_sp; sp++) m = fmaxf(m, __ldcg(a.part_ml + ((size_t)sp * a.n_slots + slot) * 2));
        if (m != -INFINITY)
            for (int sp = 0; sp < n_sp; sp++) {
                const float *ml = a.part_ml + ((size_t)sp * a.n_slots + slot) * 2;
                l += exp2f(__ldcg(ml) - m) * __ldcg(ml + 1);
            }
        sh_m[threadIdx.x] = m;
        sh_l[threadIdx.x] = l;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < nr * a.head_dim; idx += blockDim.x) {
        int rr = idx / a.head_dim, d = idx % a.head_dim;
        size_t slot = group * a.row_tile + rr;
        float m = sh_m[rr], l = sh_l[rr], o = 0.0f;
        if (l > 0.0f) {
            for (int sp = 0; sp < n_sp; sp++)
                o += exp2f(__ldcg(a.part_ml + ((size_t)sp * a.n_slots + slot) * 2) - m) *
                     __ldcg(a.part_o + ((size_t)sp * a.n_slots + slot) * a.head_dim + d);
            o /= l;
        }
        a.out[pa_out_row(a, qb, g, r0 + rr) + d] = rl_fromf<T>(o);
    }
}

/* The end of a tensor-core split-KV block of W warps and row tile RT: each warp's (m, l) of
 * row r at ml[(w * RT + r) * 2] and unnormalised output at mo[(w * RT + r) * D + d] (shared
 * memory, written and synchronised by the caller) merged row by row, then written (direct:
 * one split) or left as split sp's partial and merged by the group's last block. */
template <int D, int W, int RT>
__device__ __forceinline__ void pa_merge_warps(const pa_args &a, const float *mo, const float *ml, int qb, int g,
                                               int r0, int nr, int sp, int n_sp, bool direct)
{
    for (int idx = threadIdx.x; idx < nr * D; idx += W * 32) {
        int row = idx / D, d = idx % D;
        float m = -INFINITY;
#pragma unroll
        for (int w = 0; w < W; w++) m = fmaxf(m, ml[(w * RT + row) * 2]);
        float l = 0.0f, acc = 0.0f;
        if (m != -INFINITY)
#pragma unroll
            for (int w = 0; w < W; w++) {
                float wt = exp2f(ml[(w * RT + row) * 2] - m);
                l += wt * ml[(w * RT + row) * 2 + 1];
                acc += wt * mo[(w * RT + row) * D + d];
            }
        if (direct) {
            a.out[pa_out_row(a, qb, g, r0 + row) + d] = rl_f2b(l > 0.0f ? acc / l : 0.0f);
        } else {
            size_t slot = ((size_t)blockIdx.x * a.n_kv_heads + g) * RT + row;
            a.part_o[((size_t)sp * a.n_slots + slot) * D + d] = acc;
            if (d == 0) {
                a.part_ml[((size_t)sp * a.n_slots + slot) * 2] = m;
                a.part_ml[((size_t)sp * a.n_slots + slot) * 2 + 1] = l;
            }
        }
    }
    if (!direct) pa_finish_split(a, qb, g, r0, nr, n_sp);
}

/* paged_attention_decode.cu: the tensor-core split-KV kernel (head_dim 64 or 128, row tile 16)
 * over the grid (n_seqs * n_qtiles, n_kv_heads, max_splits). */
int rl_cuda_paged_decode_mma(rl_ctx *ctx, const pa_args *a, int n_seqs);

/* paged_attention_decode8.cu: the tensor-core split-KV kernel for at most 8 rows (row tile 8;
 * head_dim 64 or 128, KV blocks of a multiple of 16 tokens), the keys as the mma's M. */
int rl_cuda_paged_decode8(rl_ctx *ctx, const pa_args *a, int n_seqs);

#endif
