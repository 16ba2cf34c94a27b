/* paged_attention.cu — rl_paged_attention_fwd: attention of new queries against the paged KV
 * pool (ops.h): the entry point and the split-KV kernel on CUDA cores (head dims other than 64
 * and 128: the tiny test models). Three kernels serve the op:
 *   - decode and chunks of up to 16 packed rows, head_dim 64/128: paged_attention_decode.cu
 *     (tensor cores, split-KV);
 *   - the same at other head dims: the CUDA-core kernel below (split-KV);
 *   - longer chunks (prefill) at head_dim 64/128: paged_attention_prefill.cu.
 * In a step that has long and short chunks, each kernel takes its own sequences.
 *
 * Rows: a sequence's queries and the query heads of one kv head are packed into one list of
 * len_q * group rows (row r = query r / group, head kv_head * group + r % group), so a block
 * that owns (sequence, kv head, row tile) reads each key and value of that kv head once for
 * all its query heads (GQA) and, in a chunked prefill, for all its queries.
 *
 * Split-KV (flash-decoding, Dao et al. 2023): a decode step of a few sequences has too few
 * (sequence, kv head) pairs to fill the GPU, so each pair's keys are cut into up to
 * max_splits contiguous ranges, one block each; every block keeps its own online softmax
 * (m, l, unnormalised output) and the last block of a group to finish merges them
 * (paged_attention.cuh).
 * The host picks max_splits from the grid it has (batch, kv heads) and the capacity
 * max_seqlen_k; the number of splits a sequence actually uses, and their ranges, come from its
 * seqlens_k on the device (split_range), so a captured decode step is right at every length.
 * A sequence whose keys take one split (every sequence with max_splits 1) has its rows written
 * directly by that block: only split sequences go through partials and the merge.
 *
 * CUDA-core block (128 threads, one row tile of RT rows, one key range): 64-key tiles of K and V are
 * gathered through the block table into shared memory with cp.async, double-buffered (the next
 * tile loads while this one is used). Scores on CUDA cores in fp32: thread j of each half
 * scores key j against every other row (key rows padded by 16 bytes, so a warp's 16-byte
 * reads of eight different rows hit distinct banks); one warp per row updates the running max
 * and sum in the exp2 domain; then each thread accumulates 8 output columns of every row over
 * its share of the tile's keys, and the shares are summed in shared memory at the end.
 * Queries of one sequence are bottom-right causal: query i sees keys j <= len_k - len_q + i.
 *
 * The CUDA-core kernel is templated over the act dtype T (bf16; fp32 in the fp32 mode of small
 * models, which takes it at every head dim: the tensor-core kernels are bf16's). Shared key and
 * value rows hold T, moved in 16-byte pieces (8 bf16 or 4 fp32); the arithmetic reads them 8
 * elements at a time (load8).
 *
 * seqlens_k 0 marks an inactive (padding) sequence: its rows are written as zeros.
 * Assumes head_dim a multiple of 8, at most 128, 16-byte aligned q, out and pool. */
#include "backend/cuda/paged_attention.cuh"

#include <limits.h>

#define PA_THREADS 128
#define PA_MAX_D 128

/* Elements of T in one 16-byte piece: a cp.async unit, and each shared key row's padding. */
template <typename T> __host__ __device__ constexpr int pa_vec() { return 16 / (int)sizeof(T); }

/* 8 consecutive elements (16-byte aligned) as fp32. */
__device__ __forceinline__ void load8(const bf16 *p, float f[8])
{
    rl_unpack_bf16x8(*(const uint4 *)p, f);
}

__device__ __forceinline__ void load8(const float *p, float f[8])
{
    float4 a = *(const float4 *)p, b = *(const float4 *)(p + 4);
    f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

__device__ __forceinline__ void cp_async16_zfill(void *dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((uint32_t)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(valid ? 16 : 0));
}

/* Gathers keys [key0, key0 + PA_TK) of kv head g (K and V) through the block table; keys at or
 * past key_end are zero-filled. */
template <typename T>
__device__ __forceinline__ void pa_load_tile(T *ks, T *vs, const pa_args_t<T> &a, const int32_t *table, int g,
                                             int key0, int key_end)
{
    constexpr int VEC = pa_vec<T>();
    int nc = a.head_dim / VEC, pitch = a.head_dim + VEC;
    size_t row = (size_t)a.n_kv_heads * a.head_dim;
    for (int idx = threadIdx.x; idx < PA_TK * nc; idx += PA_THREADS) {
        int r = idx / nc, c = idx % nc, key = key0 + r;
        bool valid = key < key_end;
        size_t off = 0;
        if (valid)
            off = (size_t)table[key / a.block_size] * a.block_stride + (size_t)(key % a.block_size) * row +
                  (size_t)g * a.head_dim + c * VEC;
        cp_async16_zfill(ks + r * pitch + c * VEC, a.k + off, valid);
        cp_async16_zfill(vs + r * pitch + c * VEC, a.v + off, valid);
    }
    asm volatile("cp.async.commit_group;\n" ::);
}

template <typename T, int RT>
__global__ void __launch_bounds__(PA_THREADS) paged_attn_split_kernel(pa_args_t<T> a)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    int s = blockIdx.x / a.n_qtiles, qt = blockIdx.x % a.n_qtiles, g = blockIdx.y, sp = blockIdx.z;
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int qb = a.cu_q[s], len_q = a.cu_q[s + 1] - qb, len_k = a.seqlens_k[s];
    int n_rows = len_q * a.group, r0 = qt * RT;
    if (r0 >= n_rows || n_rows > a.max_rows) return;
    int nr = min(RT, n_rows - r0), D = a.head_dim, nc = D / 8, pitch = D + pa_vec<T>();
    if (len_k <= 0) {
        if (sp == 0)
            for (int idx = tid; idx < nr * D; idx += PA_THREADS)
                a.out[pa_out_row(a, qb, g, r0 + idx / D) + idx % D] = rl_fromf<T>(0.0f);
        return;
    }
    int n_sp, tps;
    split_range(len_k, a.max_splits, a.min_tiles, &n_sp, &tps);
    if (sp >= n_sp) return;
    /* a sequence whose keys fit one split writes its rows: nothing to merge */
    bool direct = a.part_o == NULL || n_sp == 1;

    float *qs = (float *)smem_raw;                      /* [RT][D] */
    T *kvs = (T *)(qs + RT * PA_MAX_D);                 /* [2 stages][K, V][PA_TK][pitch] */
    float *ps = (float *)(kvs + 4 * PA_TK * (PA_MAX_D + pa_vec<T>())); /* [RT][PA_TK] */
    float *ms = ps + RT * PA_TK, *ls = ms + RT, *cs = ls + RT;
    float *red = (float *)kvs; /* [PA_THREADS][8], after the last tile */
    const int stage = 2 * PA_TK * pitch;

    for (int idx = tid; idx < RT * D; idx += PA_THREADS) {
        int rr = idx / D, d = idx % D;
        qs[rr * D + d] = rr < nr ? rl_tof(a.q[pa_out_row(a, qb, g, r0 + rr) + d]) : 0.0f;
    }
    if (tid < RT) {
        ms[tid] = -INFINITY;
        ls[tid] = 0.0f;
    }
    int shift = len_k - len_q;
    int k_begin = sp * tps * PA_TK;
    int k_end = min(min(len_k, (sp + 1) * tps * PA_TK), shift + (r0 + nr - 1) / a.group + 1);
    int n_tiles = k_end > k_begin ? (k_end - k_begin + PA_TK - 1) / PA_TK : 0;
    const int32_t *table = a.tables + (size_t)s * a.max_blocks;
    if (n_tiles > 0) pa_load_tile(kvs, kvs + PA_TK * pitch, a, table, g, k_begin, k_end);

    int n_kg = PA_THREADS / nc, c = tid % nc, kg = tid / nc;
    bool pv_thread = kg < n_kg;
    float acc[RT][8];
#pragma unroll
    for (int rr = 0; rr < RT; rr++)
#pragma unroll
        for (int e = 0; e < 8; e++) acc[rr][e] = 0.0f;

    for (int t = 0; t < n_tiles; t++) {
        T *kt = kvs + (t & 1) * stage, *vt = kt + PA_TK * pitch;
        if (t + 1 < n_tiles) {
            T *kn = kvs + ((t + 1) & 1) * stage;
            pa_load_tile(kn, kn + PA_TK * pitch, a, table, g, k_begin + (t + 1) * PA_TK, k_end);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads();

        /* scores: thread (j, half) scores key j against rows half, half + 2, ... */
        {
            int j = tid % PA_TK, half = tid / PA_TK, key = k_begin + t * PA_TK + j;
            float dot[(RT + 1) / 2];
#pragma unroll
            for (int x = 0; x < (RT + 1) / 2; x++) dot[x] = 0.0f;
            for (int cc = 0; cc < nc; cc++) {
                float kf[8];
                load8(kt + j * pitch + cc * 8, kf);
#pragma unroll
                for (int x = 0; x < (RT + 1) / 2; x++) {
                    int rr = half + 2 * x;
                    if (rr < RT && rr < nr) {
                        const float4 *qp = (const float4 *)(qs + rr * D + cc * 8);
                        float4 q0 = qp[0], q1 = qp[1];
                        dot[x] += q0.x * kf[0] + q0.y * kf[1] + q0.z * kf[2] + q0.w * kf[3] + q1.x * kf[4] +
                                  q1.y * kf[5] + q1.z * kf[6] + q1.w * kf[7];
                    }
                }
            }
#pragma unroll
            for (int x = 0; x < (RT + 1) / 2; x++) {
                int rr = half + 2 * x;
                if (rr < RT) {
                    int limit = min(k_end, shift + (r0 + rr) / a.group + 1);
                    ps[rr * PA_TK + j] = rr < nr && key < limit ? dot[x] * a.scale_log2 : -INFINITY;
                }
            }
        }
        __syncthreads();

        /* online softmax, one warp per row */
        for (int rr = warp; rr < nr; rr += PA_THREADS / 32) {
            float s0 = ps[rr * PA_TK + lane], s1 = ps[rr * PA_TK + lane + 32];
            float m_old = ms[rr], m_new = fmaxf(m_old, rl_warp_max(fmaxf(s0, s1)));
            float base = m_new == -INFINITY ? 0.0f : m_new;
            float p0 = exp2f(s0 - base), p1 = exp2f(s1 - base);
            float sum = rl_warp_sum(p0 + p1);
            ps[rr * PA_TK + lane] = p0;
            ps[rr * PA_TK + lane + 32] = p1;
            if (lane == 0) {
                float corr = exp2f(m_old - base);
                ms[rr] = m_new;
                ls[rr] = ls[rr] * corr + sum;
                cs[rr] = corr;
            }
        }
        __syncthreads();

        /* out += P V: thread (c, kg) owns columns 8c..8c+7 over keys kg, kg + n_kg, ... */
        if (pv_thread) {
#pragma unroll
            for (int rr = 0; rr < RT; rr++) {
                float corr = rr < nr ? cs[rr] : 0.0f;
#pragma unroll
                for (int e = 0; e < 8; e++) acc[rr][e] *= corr;
            }
            for (int j = kg; j < PA_TK; j += n_kg) {
                float vf[8];
                load8(vt + j * pitch + c * 8, vf);
#pragma unroll
                for (int rr = 0; rr < RT; rr++) {
                    if (rr >= nr) break;
                    float p = ps[rr * PA_TK + j];
#pragma unroll
                    for (int e = 0; e < 8; e++) acc[rr][e] += p * vf[e];
                }
            }
        }
        __syncthreads();
    }

    /* Sum the key groups' shares row by row and write the row (or the split's partial). */
#pragma unroll
    for (int rr = 0; rr < RT; rr++) {
        if (rr >= nr) break;
        if (pv_thread)
#pragma unroll
            for (int e = 0; e < 8; e++) red[tid * 8 + e] = acc[rr][e];
        __syncthreads();
        float l = ls[rr];
        for (int d = tid; d < D; d += PA_THREADS) {
            float o = 0.0f;
            for (int k2 = 0; k2 < n_kg; k2++) o += red[(k2 * nc + d / 8) * 8 + d % 8];
            if (direct) {
                a.out[pa_out_row(a, qb, g, r0 + rr) + d] = rl_fromf<T>(l > 0.0f ? o / l : 0.0f);
            } else {
                size_t slot = ((size_t)blockIdx.x * a.n_kv_heads + g) * RT + rr;
                a.part_o[((size_t)sp * a.n_slots + slot) * D + d] = o;
                if (d == 0) {
                    a.part_ml[((size_t)sp * a.n_slots + slot) * 2] = ms[rr];
                    a.part_ml[((size_t)sp * a.n_slots + slot) * 2 + 1] = l;
                }
            }
        }
        __syncthreads();
    }
    if (!direct) pa_finish_split(a, qb, g, r0, nr, n_sp);
}

template <typename T>
static size_t split_smem_bytes(int rt)
{
    return (size_t)rt * PA_MAX_D * sizeof(float) + 4 * PA_TK * (PA_MAX_D + pa_vec<T>()) * sizeof(T) +
           (size_t)rt * PA_TK * sizeof(float) + 3 * (size_t)rt * sizeof(float);
}

template <typename T, int RT>
static int launch_split(rl_ctx *ctx, pa_args_t<T> a, int n_seqs)
{
    size_t smem = split_smem_bytes<T>(RT);
    CUDA_CHECK(cudaFuncSetAttribute(paged_attn_split_kernel<T, RT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    dim3 grid((unsigned)(n_seqs * a.n_qtiles), (unsigned)a.n_kv_heads, (unsigned)a.max_splits);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    paged_attn_split_kernel<T, RT><<<grid, PA_THREADS, smem, st>>>(a);
    LAUNCH_CHECK();
    return 0;
}

/* The split-KV kernels over the sequences with at most max_rows packed rows (of at most
 * rows_bound): tensor cores at head_dim 64/128 (row tile 8 up to 8 rows with KV blocks of a
 * multiple of 16 tokens: decode steps; else 16), else CUDA cores (row tile the bound's power of
 * two, up to 16); grid and splits from the host's bounds. */
template <typename T>
static int run_split(rl_ctx *ctx, pa_args_t<T> a, int n_seqs, int rows_bound, int max_seqlen_k)
{
    int mma = (a.head_dim == 64 || a.head_dim == 128) && !rl_cuda_f32(ctx);
    int mma8 = mma && rows_bound <= 8 && a.block_size % 16 == 0;
    int rt = mma8 ? 8 : mma || rows_bound > 8 ? 16 : rows_bound <= 1 ? 1 : rows_bound <= 2 ? 2 : rows_bound <= 4 ? 4 : 8;
    a.row_tile = rt;
    a.n_qtiles = (rows_bound + rt - 1) / rt;
    long base = (long)n_seqs * a.n_qtiles * a.n_kv_heads;
    long target = 4L * rl_cuda_st(ctx)->n_sms;
    /* many groups (pa_many_groups): only long sequences use the splits (a 64-sequence step of
     * a few hundred keys runs unsplit) */
    a.min_tiles = pa_many_groups(ctx, base) ? PA_LONG_TILES : PA_MIN_TILES;
    long by_len = ((long)(max_seqlen_k + PA_TK - 1) / PA_TK + a.min_tiles - 1) / a.min_tiles;
    long splits = base >= target ? 1 : (target + base - 1) / base;
    if (splits > by_len) splits = by_len;
    if (base > RL_CUDA_SPLIT_COUNTERS) splits = 1; /* no counter for every group: one split */
    if (splits > PA_MAX_SPLITS) splits = PA_MAX_SPLITS;
    a.max_splits = splits < 1 ? 1 : (int)splits;
    a.part_o = a.part_ml = NULL;
    a.n_slots = (int)(base * rt);
    if (a.max_splits > 1) {
        size_t n_o = (size_t)a.max_splits * a.n_slots * a.head_dim, n_ml = (size_t)a.max_splits * a.n_slots * 2;
        float *buf = (float *)rl_cuda_scratch(ctx, (n_o + n_ml) * sizeof(float));
        if (!buf) return -1;
        a.part_o = buf;
        a.part_ml = buf + n_o;
        a.counters = rl_cuda_st(ctx)->split_counters;
    }
    if (mma8) return rl_cuda_paged_decode8(ctx, (const pa_args *)&a, n_seqs);
    if (mma) return rl_cuda_paged_decode_mma(ctx, (const pa_args *)&a, n_seqs);
    return rt == 1   ? launch_split<T, 1>(ctx, a, n_seqs)
           : rt == 2 ? launch_split<T, 2>(ctx, a, n_seqs)
           : rt == 4 ? launch_split<T, 4>(ctx, a, n_seqs)
           : rt == 8 ? launch_split<T, 8>(ctx, a, n_seqs)
                     : launch_split<T, 16>(ctx, a, n_seqs);
}

template <typename T>
static int paged_attention(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv, const int32_t *cu_seqlens_q,
                           const int32_t *seqlens_k, int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads,
                           int n_kv_heads, int head_dim, float scale)
{
    int group = n_heads / n_kv_heads;
    pa_args_t<T> a = {};
    a.out = (T *)out;
    a.q = (const T *)q;
    a.k = (const T *)kv->k;
    a.v = (const T *)kv->v;
    a.block_stride = kv->block_stride;
    a.block_size = kv->block_size;
    a.max_blocks = kv->max_blocks;
    a.tables = kv->block_tables;
    a.cu_q = cu_seqlens_q;
    a.seqlens_k = seqlens_k;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.group = group;
    a.scale_log2 = scale * 1.4426950408889634f;
    long rows_bound = (long)max_seqlen_q * group;
    if ((head_dim == 64 || head_dim == 128) && rows_bound > PA_SMALL_ROWS && !rl_cuda_f32(ctx)) {
        if (rl_cuda_paged_prefill_mma(ctx, out, q, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, n_heads,
                                      n_kv_heads, head_dim, scale, PA_SMALL_ROWS))
            return -1;
        a.max_rows = PA_SMALL_ROWS;
        return run_split(ctx, a, n_seqs, PA_SMALL_ROWS, max_seqlen_k);
    }
    a.max_rows = INT_MAX;
    return run_split(ctx, a, n_seqs, (int)rows_bound, max_seqlen_k);
}

extern "C" int rl_cuda_paged_attention_fwd(rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv,
                                           const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs,
                                           int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads,
                                           int head_dim, float scale)
{
    /* deterministic mode: the training forward's kernels over the pool, before any fast path */
    if (ctx->deterministic)
        return rl_cuda_attention_fwd_paged(ctx, out, q, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, n_heads,
                                           n_kv_heads, head_dim, scale);
    /* these kernels' own limits: rows move in 16-byte pieces and are read 8 elements at a time, a
     * query row fits PA_MAX_D */
    ARG_CHECK(head_dim % 8 == 0 && head_dim <= PA_MAX_D,
              "head_dim %d is not a multiple of 8 up to %d, what the CUDA paged attention takes", head_dim, PA_MAX_D);
    ARG_CHECK(kv->block_stride % 8 == 0, "kv->block_stride %zu is not a multiple of 8 (16-byte rows)",
              kv->block_stride);
    if (n_seqs == 0 || max_seqlen_q == 0) return 0;
    uintptr_t align = (uintptr_t)out | (uintptr_t)q | (uintptr_t)kv->k | (uintptr_t)kv->v;
    ARG_CHECK((align & 15) == 0, "q, out and the pool are not 16-byte aligned, as the CUDA paged attention needs");
    if (rl_cuda_f32(ctx))
        return paged_attention<float>(ctx, out, q, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k,
                                      n_heads, n_kv_heads, head_dim, scale);
    return paged_attention<bf16>(ctx, out, q, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k, n_heads,
                                 n_kv_heads, head_dim, scale);
}
