/* attention.cu — exact softmax attention over packed variable-length sequences (flash
 * attention's varlen semantics, ops.h): causal bottom-right, GQA, seqused_k, lse saved.
 *
 * Tiled with an online softmax (Dao et al. 2022, FlashAttention; Milakov & Gimelshein 2018):
 * nothing of size [len_q x len_k] is ever stored. This file is the general path, for any
 * head_dim up to 256, on CUDA cores in fp32:
 *  - forward: a block holds ROWS query rows of one (sequence, head), one warp per row. Key and
 *    value tiles of 32 rows are staged in shared memory (fp32, rows padded by one word so that
 *    lane j reading row j hits distinct banks); lane j scores key j, the warp updates the
 *    running max / denominator, then every lane accumulates its head_dim/32 output columns.
 *  - backward (FlashAttention-2 order, no atomics, deterministic): D_i = dout_i . out_i first;
 *    dq by query rows like the forward (P recomputed from lse); dk, dv by key rows, one warp
 *    per (key, kv head), looping over every query head of the GQA group and over query tiles,
 *    so the sum over heads happens in registers.
 * A query that sees no key gets out = 0 and lse = -inf (as the CPU reference). For head_dim
 * 64/128 the forward and backward run on tensor cores (attention_mma.cu, attention_mma_bwd.cu);
 * this file serves the other head dims and the fp32 mode (kernels templated over the act dtype
 * T: bf16, or fp32 for small models), and computes D for both backward paths. */
#include "backend/cuda/common.cuh"

#define ROWS 8 /* query (or key) rows per block: one warp each */
#define TILE 32

struct attn_shape {
    const int32_t *cu_q, *cu_k, *used_k;
    int n_heads, n_kv_heads, head_dim;
    float scale;
    int causal;
};

/* Number of keys query i (0-based in its sequence) sees. */
__device__ __forceinline__ int attn_visible(int i, int len_q, int len_k, int causal)
{
    if (!causal) return len_k;
    int n = len_k - len_q + i + 1;
    return n < 0 ? 0 : (n > len_k ? len_k : n);
}

/* Stages rows [r0, r0 + TILE) of a [*, n_kv, head_dim] tensor (act dtype T) (head hk) as fp32, zero
 * past n_valid; row stride head_dim + 1 in shared memory. */
template <typename T>
__device__ __forceinline__ void load_tile(float *dst, const T *src, int r0, int n_valid, int row_elems,
                                          int head_dim)
{
    int pitch = head_dim + 1;
    for (int idx = threadIdx.x; idx < TILE * head_dim; idx += blockDim.x) {
        int r = idx / head_dim, d = idx % head_dim;
        dst[r * pitch + d] = r0 + r < n_valid ? rl_tof(src[(size_t)(r0 + r) * row_elems + d]) : 0.0f;
    }
}

/* The same for key rows of sequence s from a key source (common.cuh: dense or paged); base is
 * the tensor at kv head hk. */
template <typename T>
__device__ __forceinline__ void load_kv_tile(float *dst, const T *base, const rl_kv_dense &src, int s, int r0,
                                             int n_valid, int head_dim)
{
    load_tile(dst, base + src.at(s, 0), r0, n_valid, (int)src.row, head_dim);
}

template <typename T>
__device__ __forceinline__ void load_kv_tile(float *dst, const T *base, const rl_kv_paged &src, int s, int r0,
                                             int n_valid, int head_dim)
{
    int pitch = head_dim + 1;
    for (int idx = threadIdx.x; idx < TILE * head_dim; idx += blockDim.x) {
        int r = idx / head_dim, d = idx % head_dim;
        dst[r * pitch + d] = r0 + r < n_valid ? rl_tof(base[src.at(s, r0 + r) + d]) : 0.0f;
    }
}

/* The forward over keys from src (dense for training, the pool in deterministic mode): a row's
 * arithmetic does not depend on where its keys come from. */
template <typename T, int DPL, typename KV>
__global__ void attn_fwd_kernel(T *out, float *lse, const T *q, const T *k, const T *v, attn_shape sh, KV src)
{
    extern __shared__ float smem[];
    int s = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int qb = sh.cu_q[s], len_q = sh.cu_q[s + 1] - qb;
    int row0 = blockIdx.x * ROWS;
    if (row0 >= len_q) return;
    int len_k = src.len(s);
    int D = sh.head_dim, pitch = D + 1, hk = h / (sh.n_heads / sh.n_kv_heads);
    float *ks = smem, *vs = ks + TILE * pitch, *qs = vs + TILE * pitch + warp * D;
    int i = row0 + warp;
    bool active = i < len_q;
    int n_keys = active ? attn_visible(i, len_q, len_k, sh.causal) : 0;
    int block_keys = attn_visible(min(row0 + ROWS, len_q) - 1, len_q, len_k, sh.causal);
    size_t qrow = ((size_t)(qb + (active ? i : row0)) * sh.n_heads + h) * D;
    for (int d = lane; d < D; d += 32) qs[d] = rl_tof(q[qrow + d]) * sh.scale;
    float m = -INFINITY, l = 0.0f, acc[DPL];
#pragma unroll
    for (int c = 0; c < DPL; c++) acc[c] = 0.0f;
    const T *k0 = k + hk * D, *v0 = v + hk * D;
    for (int t0 = 0; t0 < block_keys; t0 += TILE) {
        __syncthreads();
        load_kv_tile(ks, k0, src, s, t0, block_keys, D);
        load_kv_tile(vs, v0, src, s, t0, block_keys, D);
        __syncthreads();
        if (t0 >= n_keys) continue;
        float sc = -INFINITY;
        if (t0 + lane < n_keys) {
            const float *kr = ks + lane * pitch;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += qs[d] * kr[d];
            sc = dot;
        }
        float m_new = fmaxf(m, rl_warp_max(sc));
        float p = t0 + lane < n_keys ? __expf(sc - m_new) : 0.0f;
        float corr = __expf(m - m_new);
        l = l * corr + rl_warp_sum(p);
        m = m_new;
#pragma unroll
        for (int c = 0; c < DPL; c++) acc[c] *= corr;
        int n_here = min(TILE, n_keys - t0);
        for (int jj = 0; jj < n_here; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            const float *vr = vs + jj * pitch;
#pragma unroll
            for (int c = 0; c < DPL; c++) {
                int d = lane + 32 * c;
                if (d < D) acc[c] += pj * vr[d];
            }
        }
    }
    if (!active) return;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int c = 0; c < DPL; c++) {
        int d = lane + 32 * c;
        if (d < D) out[qrow + d] = rl_fromf<T>(acc[c] * inv);
    }
    if (lse && lane == 0) lse[(size_t)(qb + i) * sh.n_heads + h] = l > 0.0f ? m + logf(l) : -INFINITY;
}

/* Dsum[t, h] = dout . out, one warp per (t, h); the grid covers an upper bound and the token
 * count comes from cu_seqlens on the device (no host round trip). */
template <typename T>
__global__ void attn_bwd_dot_kernel(float *dsum, const T *dout, const T *out, const int32_t *cu, int n_seqs,
                                    int n_heads, int D)
{
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= (size_t)cu[n_seqs] * n_heads) return;
    int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int d = lane; d < D; d += 32) acc += rl_tof(dout[row * D + d]) * rl_tof(out[row * D + d]);
    acc = rl_warp_sum(acc);
    if (lane == 0) dsum[row] = acc;
}

template <typename T, int DPL>
__global__ void attn_bwd_dq_kernel(T *dq, const T *dout, const float *lse, const float *dsum, const T *q,
                                   const T *k, const T *v, attn_shape sh)
{
    extern __shared__ float smem[];
    int s = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int base = sh.cu_q[s], len = sh.cu_q[s + 1] - base, kbase = sh.cu_k[s], len_k = sh.cu_k[s + 1] - kbase;
    int row0 = blockIdx.x * ROWS;
    if (row0 >= len) return;
    int D = sh.head_dim, pitch = D + 1, hk = h / (sh.n_heads / sh.n_kv_heads);
    float *ks = smem, *vs = ks + TILE * pitch, *qs = vs + TILE * pitch + warp * 2 * D, *ds_ = qs + D;
    int i = row0 + warp;
    bool active = i < len;
    int n_keys = active ? attn_visible(i, len, len_k, sh.causal) : 0;
    int block_keys = attn_visible(min(row0 + ROWS, len) - 1, len, len_k, sh.causal);
    size_t row = (size_t)(base + (active ? i : row0)) * sh.n_heads + h;
    for (int d = lane; d < D; d += 32) {
        qs[d] = rl_tof(q[row * D + d]);
        ds_[d] = rl_tof(dout[row * D + d]);
    }
    float l = lse[row], di = dsum[row], acc[DPL];
#pragma unroll
    for (int c = 0; c < DPL; c++) acc[c] = 0.0f;
    int kv_row = sh.n_kv_heads * D;
    const T *k0 = k + (size_t)kbase * kv_row + hk * D, *v0 = v + (size_t)kbase * kv_row + hk * D;
    for (int t0 = 0; t0 < block_keys; t0 += TILE) {
        __syncthreads();
        load_tile(ks, k0, t0, block_keys, kv_row, D);
        load_tile(vs, v0, t0, block_keys, kv_row, D);
        __syncthreads();
        if (t0 >= n_keys) continue;
        float dsv = 0.0f;
        if (t0 + lane < n_keys) {
            const float *kr = ks + lane * pitch, *vr = vs + lane * pitch;
            float dot = 0.0f, dp = 0.0f;
            for (int d = 0; d < D; d++) {
                dot += qs[d] * kr[d];
                dp += ds_[d] * vr[d];
            }
            float p = __expf(dot * sh.scale - l);
            dsv = p * (dp - di);
        }
        int n_here = min(TILE, n_keys - t0);
        for (int jj = 0; jj < n_here; jj++) {
            float g = __shfl_sync(0xffffffffu, dsv, jj);
            const float *kr = ks + jj * pitch;
#pragma unroll
            for (int c = 0; c < DPL; c++) {
                int d = lane + 32 * c;
                if (d < D) acc[c] += g * kr[d];
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int c = 0; c < DPL; c++) {
        int d = lane + 32 * c;
        if (d < D) dq[row * D + d] = rl_fromf<T>(acc[c] * sh.scale);
    }
}

template <typename T, int DPL>
__global__ void attn_bwd_dkv_kernel(T *dk, T *dv, const T *dout, const float *lse, const float *dsum,
                                    const T *q, const T *k, const T *v, attn_shape sh)
{
    extern __shared__ float smem[];
    int s = blockIdx.z, hk = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int base = sh.cu_q[s], len = sh.cu_q[s + 1] - base, kbase = sh.cu_k[s], len_k = sh.cu_k[s + 1] - kbase;
    int row0 = blockIdx.x * ROWS;
    if (row0 >= len_k) return;
    int D = sh.head_dim, pitch = D + 1, group = sh.n_heads / sh.n_kv_heads;
    float *qt = smem, *dot_ = qt + TILE * pitch, *lt = dot_ + TILE * pitch, *dt = lt + TILE;
    float *kr = dt + TILE + warp * 2 * D, *vr = kr + D;
    int j = row0 + warp;
    bool active = j < len_k;
    int kv_row = sh.n_kv_heads * D;
    size_t krow = (size_t)(kbase + (active ? j : row0)) * kv_row + hk * D;
    for (int d = lane; d < D; d += 32) {
        kr[d] = rl_tof(k[krow + d]);
        vr[d] = rl_tof(v[krow + d]);
    }
    /* Key j is seen by queries i >= j - shift (causal, bottom-right); the block's first key is row0. */
    int shift = len_k - len;
    int first_q = sh.causal ? max(0, row0 - shift) : 0;
    int my_first = sh.causal ? max(0, j - shift) : 0;
    float dk_acc[DPL], dv_acc[DPL];
#pragma unroll
    for (int c = 0; c < DPL; c++) dk_acc[c] = dv_acc[c] = 0.0f;
    int q_row = sh.n_heads * D;
    for (int h = hk * group; h < (hk + 1) * group; h++) {
        const T *q0 = q + (size_t)base * q_row + h * D, *do0 = dout + (size_t)base * q_row + h * D;
        for (int t0 = first_q; t0 < len; t0 += TILE) {
            __syncthreads();
            load_tile(qt, q0, t0, len, q_row, D);
            load_tile(dot_, do0, t0, len, q_row, D);
            if (threadIdx.x < TILE) {
                int ii = t0 + threadIdx.x;
                size_t r = (size_t)(base + ii) * sh.n_heads + h;
                lt[threadIdx.x] = ii < len ? lse[r] : 0.0f;
                dt[threadIdx.x] = ii < len ? dsum[r] : 0.0f;
            }
            __syncthreads();
            if (!active) continue;
            int ii = t0 + lane;
            float p = 0.0f, dsv = 0.0f;
            if (ii < len && ii >= my_first) {
                const float *qr = qt + lane * pitch, *dr = dot_ + lane * pitch;
                float dot = 0.0f, dp = 0.0f;
                for (int d = 0; d < D; d++) {
                    dot += qr[d] * kr[d];
                    dp += dr[d] * vr[d];
                }
                p = __expf(dot * sh.scale - lt[lane]);
                dsv = p * (dp - dt[lane]);
            }
            int n_here = min(TILE, len - t0);
            for (int jj = 0; jj < n_here; jj++) {
                float pj = __shfl_sync(0xffffffffu, p, jj), gj = __shfl_sync(0xffffffffu, dsv, jj);
                const float *qr = qt + jj * pitch, *dr = dot_ + jj * pitch;
#pragma unroll
                for (int c = 0; c < DPL; c++) {
                    int d = lane + 32 * c;
                    if (d < D) {
                        dv_acc[c] += pj * dr[d];
                        dk_acc[c] += gj * qr[d];
                    }
                }
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int c = 0; c < DPL; c++) {
        int d = lane + 32 * c;
        if (d < D) {
            dk[krow + d] = rl_fromf<T>(dk_acc[c] * sh.scale);
            dv[krow + d] = rl_fromf<T>(dv_acc[c]);
        }
    }
}

/* These kernels' own limit: a warp holds a query row in registers, DPL = head_dim / 32 <= 8
 * values per lane (DISPATCH_DPL below). */
#define MAX_HEAD_DIM 256

template <typename K>
static int launch_prep(rl_ctx *ctx, K kernel, size_t smem)
{
    if (smem > 48 * 1024) CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return 0;
}

#define DISPATCH_DPL(head_dim, ...)                                                          \
    do {                                                                                     \
        if ((head_dim) <= 32) { const int DPL_ = 1; __VA_ARGS__ }                            \
        else if ((head_dim) <= 64) { const int DPL_ = 2; __VA_ARGS__ }                       \
        else if ((head_dim) <= 128) { const int DPL_ = 4; __VA_ARGS__ }                      \
        else { const int DPL_ = 8; __VA_ARGS__ }                                             \
    } while (0)

template <typename T, typename KV>
static int attn_fwd(rl_ctx *ctx, dim3 grid, size_t smem, void *out, float *lse, const void *q, const void *k,
                    const void *v, attn_shape sh, KV src)
{
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    DISPATCH_DPL(sh.head_dim, {
        if (launch_prep(ctx, attn_fwd_kernel<T, DPL_, KV>, smem)) return -1;
        attn_fwd_kernel<T, DPL_, KV><<<grid, ROWS * 32, smem, st>>>((T *)out, lse, (const T *)q, (const T *)k,
                                                                    (const T *)v, sh, src);
    });
    LAUNCH_CHECK();
    return 0;
}

/* dq, dk, dv on CUDA cores, D (dsum) already computed. */
template <typename T>
static int attn_bwd_grads(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const float *lse,
                          const float *dsum, const void *q, const void *k, const void *v, int n_seqs, int max_seqlen_q,
                          int max_seqlen_k, attn_shape sh)
{
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    int head_dim = sh.head_dim;
    dim3 grid_q((max_seqlen_q + ROWS - 1) / ROWS, sh.n_heads, n_seqs);
    dim3 grid_k((max_seqlen_k + ROWS - 1) / ROWS, sh.n_kv_heads, n_seqs);
    size_t smem_q = (2 * TILE * (head_dim + 1) + ROWS * 2 * head_dim) * sizeof(float);
    size_t smem_k = (2 * TILE * (head_dim + 1) + 2 * TILE + ROWS * 2 * head_dim) * sizeof(float);
    DISPATCH_DPL(head_dim, {
        if (launch_prep(ctx, attn_bwd_dq_kernel<T, DPL_>, smem_q)) return -1;
        attn_bwd_dq_kernel<T, DPL_><<<grid_q, ROWS * 32, smem_q, st>>>((T *)dq, (const T *)dout, lse, dsum,
                                                                       (const T *)q, (const T *)k, (const T *)v, sh);
        CUDA_CHECK(cudaGetLastError());
        if (launch_prep(ctx, attn_bwd_dkv_kernel<T, DPL_>, smem_k)) return -1;
        attn_bwd_dkv_kernel<T, DPL_><<<grid_k, ROWS * 32, smem_k, st>>>((T *)dk, (T *)dv, (const T *)dout, lse,
                                                                        dsum, (const T *)q, (const T *)k,
                                                                        (const T *)v, sh);
    });
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_attention_fwd(rl_ctx *ctx, void *out, float *lse, const void *q, const void *k,
                                     const void *v, const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k,
                                     const int32_t *seqused_k, int n_seqs, int max_seqlen_q, int max_seqlen_k,
                                     int n_heads, int n_kv_heads, int head_dim, float scale, int causal)
{
    ARG_CHECK(head_dim <= MAX_HEAD_DIM, "head_dim %d is more than %d, the most the CUDA attention takes", head_dim,
              MAX_HEAD_DIM);
    if (n_seqs == 0 || max_seqlen_q <= 0) return 0;
    int ran = 0;
    if (!rl_cuda_f32(ctx) && rl_cuda_attention_fwd_mma(ctx, out, lse, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k,
                                                       n_seqs, max_seqlen_q, n_heads, n_kv_heads, head_dim, scale,
                                                       causal, NULL, &ran))
        return -1;
    if (ran) return 0;
    attn_shape sh = {cu_seqlens_q, cu_seqlens_k, seqused_k, n_heads, n_kv_heads, head_dim, scale, causal};
    rl_kv_dense src = {cu_seqlens_k, seqused_k, (size_t)n_kv_heads * head_dim};
    dim3 grid((max_seqlen_q + ROWS - 1) / ROWS, n_heads, n_seqs);
    size_t smem = (2 * TILE * (head_dim + 1) + ROWS * head_dim) * sizeof(float);
    if (rl_cuda_f32(ctx)) return attn_fwd<float>(ctx, grid, smem, out, lse, q, k, v, sh, src);
    return attn_fwd<bf16>(ctx, grid, smem, out, lse, q, k, v, sh, src);
}

/* Deterministic mode's paged attention: rl_attention_fwd's choice of kernel (tensor cores for
 * bf16 head_dim 64/128, else the general kernel) and arithmetic, keys from the pool. */
int rl_cuda_attention_fwd_paged(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv,
                                const int32_t *cu_q, const int32_t *seqlens_k, int n_seqs,
                                int max_seqlen_q, int n_heads, int n_kv_heads, int head_dim, float scale)
{
    ARG_CHECK(head_dim <= MAX_HEAD_DIM, "head_dim %d is more than %d, the most the CUDA attention takes", head_dim,
              MAX_HEAD_DIM);
    if (n_seqs == 0 || max_seqlen_q <= 0) return 0;
    rl_kv_paged src = {kv->block_tables, seqlens_k, kv->max_blocks, kv->block_size, kv->block_stride,
                       (size_t)n_kv_heads * head_dim};
    int ran = 0;
    if (!rl_cuda_f32(ctx) && rl_cuda_attention_fwd_mma(ctx, out, NULL, q, kv->k, kv->v, cu_q, NULL, NULL, n_seqs,
                                                       max_seqlen_q, n_heads, n_kv_heads, head_dim, scale, 1, &src,
                                                       &ran))
        return -1;
    if (ran) return 0;
    attn_shape sh = {cu_q, NULL, seqlens_k, n_heads, n_kv_heads, head_dim, scale, 1};
    dim3 grid((max_seqlen_q + ROWS - 1) / ROWS, n_heads, n_seqs);
    size_t smem = (2 * TILE * (head_dim + 1) + ROWS * head_dim) * sizeof(float);
    if (rl_cuda_f32(ctx)) return attn_fwd<float>(ctx, grid, smem, out, NULL, q, kv->k, kv->v, sh, src);
    return attn_fwd<bf16>(ctx, grid, smem, out, NULL, q, kv->k, kv->v, sh, src);
}

extern "C" int rl_cuda_attention_bwd(rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const void *out,
                                     const float *lse, const void *q, const void *k, const void *v,
                                     const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, int n_seqs,
                                     int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim,
                                     float scale, int causal)
{
    ARG_CHECK(head_dim <= MAX_HEAD_DIM, "head_dim %d is more than %d, the most the CUDA attention takes", head_dim,
              MAX_HEAD_DIM);
    if (n_seqs == 0 || max_seqlen_k <= 0) return 0;
    /* D is indexed by query row; n_seqs * max_seqlen_q bounds the query count (cu_seqlens_q must
     * be valid: the CPU op checks it, here it is device memory). */
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    size_t rows = (size_t)n_seqs * (max_seqlen_q > 0 ? max_seqlen_q : 1) * n_heads;
    float *dsum = (float *)rl_cuda_scratch(ctx, rows * sizeof(float));
    if (!dsum) return -1;
    attn_shape sh = {cu_seqlens_q, cu_seqlens_k, NULL, n_heads, n_kv_heads, head_dim, scale, causal};
    if (rl_cuda_f32(ctx)) {
        attn_bwd_dot_kernel<float><<<(unsigned)((rows + 7) / 8), 256, 0, st>>>(dsum, (const float *)dout,
                                                                               (const float *)out, cu_seqlens_q,
                                                                               n_seqs, n_heads, head_dim);
        LAUNCH_CHECK();
        return attn_bwd_grads<float>(ctx, dq, dk, dv, dout, lse, dsum, q, k, v, n_seqs, max_seqlen_q, max_seqlen_k,
                                     sh);
    }
    attn_bwd_dot_kernel<bf16><<<(unsigned)((rows + 7) / 8), 256, 0, st>>>(dsum, (const bf16 *)dout, (const bf16 *)out,
                                                                          cu_seqlens_q, n_seqs, n_heads, head_dim);
    LAUNCH_CHECK();
    int ran = 0;
    attn_bwd_shape bs = {cu_seqlens_q, cu_seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k, n_heads, n_kv_heads,
                         head_dim, scale, causal};
    if (rl_cuda_attention_bwd_mma(ctx, dq, dk, dv, dout, lse, dsum, q, k, v, &bs, &ran))
        return -1;
    if (ran) return 0;
    return attn_bwd_grads<bf16>(ctx, dq, dk, dv, dout, lse, dsum, q, k, v, n_seqs, max_seqlen_q, max_seqlen_k, sh);
}
