/* paged_attention_b1.cu — rl_qk_norm_rope_attention_fwd: a decode step of a few sequences (one
 * query each) as ONE kernel: the q/k RMSNorm per head, RoPE and KV-pool write of
 * qk_rope_cache.cu folded into the attention over the pool. Other batches (prefill chunks, many
 * sequences, the fp32 mode, head dims other than 16/32/64/128) run the two ops.
 *
 * Why: at batch 1 the step's attention reads ~1 MB of keys and values per layer and has almost
 * nothing to compute, so its time was set-up, latency and the split merge (11.6 us per layer in
 * the split-KV kernel, 64 split slots of which 2-3 work, a counter round trip to merge them),
 * plus 5.7 us per layer for the q/k kernel before it. Here:
 *  - A cluster of B1_CLUSTER blocks (4 warps each; clusters of 4, 8 and 16 measured the same)
 *    owns one (sequence, kv head); block r of the cluster takes the r-th contiguous share of the
 *    sequence's keys, so every block works at every length, and the blocks' partial softmax
 *    states are merged through distributed shared memory (cluster.map_shared_rank) after one
 *    cluster barrier: no global partials, no counter.
 *  - The cached keys and values (all but the new token's) are not written by the q|k|v product
 *    that runs before this kernel, nor by anything else in a step, so each lane issues the loads
 *    of its first two chunks of keys and values into registers BEFORE the programmatic-launch
 *    wait (griddepcontrol.wait): they stream while the product finishes.
 *  - After the wait every block normalises and rotates its kv head's query rows (the group of
 *    query heads reading this kv head) from the q|k|v row; the block whose share holds the last
 *    key (the new token's: key seqlens_k - 1, which the op requires to be at slots[t]) also
 *    normalises and rotates the new key, writes it and the new value to the pool, and uses them
 *    from shared memory rather than reading them back. Rank 0 writes q_out. The arithmetic and
 *    roundings are qk_rope_cache.cu's (fp32, rsqrt(mean + eps), accurate sincosf, bf16 q and
 *    key), so the pool gets the same keys as the two ops give, and the scores are taken with the
 *    same bf16 q.
 *  - Scores on CUDA cores in fp32: D / 8 lanes hold one key's 16-byte pieces (8 elements each),
 *    so a warp covers 32 / (D / 8) keys per load; each lane group runs its own online softmax in
 *    the exp2 domain (m, l, 8 output columns per query row) over its keys, chunk by chunk (two
 *    chunks of B1_U keys per group in flight); then the groups of a warp merge by shuffles, the
 *    warps of a block through shared memory, and the blocks of the cluster through DSMEM
 *    (out = sum_b 2^(m_b - m) o_b / sum_b 2^(m_b - m) l_b, Dao et al.'s flash-decoding merge).
 *
 * Assumes bf16 q, k, v, pool and out; the pool 16-byte aligned with block_stride a multiple of
 * 8; n_heads / n_kv_heads <= 8. seqlens_k 0 marks an inactive (padding) sequence: its rows are
 * zeros, its q_out rows are still written (as the two ops write them). */
#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"

namespace cg = cooperative_groups;

#define B1_WARPS 4
#define B1_THREADS (B1_WARPS * 32)
#define B1_CLUSTER 8  /* blocks per (sequence, kv head); the portable cluster size */
#define B1_MAX_SEQS 8 /* decode batches up to this many sequences take the kernel */
#define B1_MAX_GROUP 8

typedef struct b1_args {
    bf16 *out, *q_out, *k_pool, *v_pool;
    const bf16 *q, *k, *v, *q_norm, *k_norm; /* q|k|v rows (q_stride, kv_stride apart), norms [D] */
    size_t q_stride, kv_stride, block_stride;
    int block_size, max_blocks;
    const int32_t *tables, *cu_q, *seqlens_k, *positions, *slots;
    const float *inv_freq;
    float eps, scale_log2;
    int n_heads, n_kv_heads, group;
} b1_args;

/* Keys per lane group per chunk: fewer when more query rows take registers. */
template <int GM> __host__ __device__ constexpr int b1_u() { return GM <= 2 ? 4 : 2; }

/* The U keys of one chunk that this lane's group holds (zeros past end): 16-byte pieces of key
 * and value rows, found through the block table. */
template <int D, int U>
__device__ __forceinline__ void b1_load(uint4 kr[U], uint4 vr[U], const b1_args &a, const int32_t *table, int g,
                                        int key0, int end)
{
    constexpr int LPK = D / 8, KPW = 32 / LPK, KPS = B1_WARPS * KPW;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, c = lane % LPK;
#pragma unroll
    for (int u = 0; u < U; u++) {
        int key = key0 + u * KPS + warp * KPW + lane / LPK;
        kr[u] = vr[u] = make_uint4(0, 0, 0, 0);
        if (key < end) {
            size_t off = (size_t)table[key / a.block_size] * a.block_stride +
                         ((size_t)(key % a.block_size) * a.n_kv_heads + g) * D + c * 8;
            kr[u] = __ldcg((const uint4 *)(a.k_pool + off));
            vr[u] = __ldcg((const uint4 *)(a.v_pool + off));
        }
    }
}

/* Online softmax of this lane's group over one chunk (keys key0 + u * KPS + its slot, valid
 * below end; key `last` from new_k / new_v in shared memory). */
template <int D, int GM, int U>
__device__ __forceinline__ void b1_chunk(const uint4 kr[U], const uint4 vr[U], const float qf[GM][8], float m[GM],
                                         float l[GM], float acc[GM][8], int key0, int end, int last,
                                         const float *new_k, const float *new_v, float scale_log2)
{
    constexpr int LPK = D / 8, KPW = 32 / LPK, KPS = B1_WARPS * KPW;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, c = lane % LPK;
    float sc[U][GM];
#pragma unroll
    for (int u = 0; u < U; u++) {
        int key = key0 + u * KPS + warp * KPW + lane / LPK;
        float kf[8];
        if (key == last) {
#pragma unroll
            for (int e = 0; e < 8; e++) kf[e] = new_k[c * 8 + e];
        } else {
            rl_unpack_bf16x8(kr[u], kf);
        }
#pragma unroll
        for (int i = 0; i < GM; i++) {
            float d = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; e++) d += qf[i][e] * kf[e];
#pragma unroll
            for (int o = LPK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
            sc[u][i] = key < end ? d * scale_log2 : -INFINITY;
        }
    }
#pragma unroll
    for (int i = 0; i < GM; i++) {
        float mx = m[i];
#pragma unroll
        for (int u = 0; u < U; u++) mx = fmaxf(mx, sc[u][i]);
        float base = mx == -INFINITY ? 0.0f : mx, corr = exp2f(m[i] - base), sum = 0.0f;
#pragma unroll
        for (int u = 0; u < U; u++) {
            sc[u][i] = exp2f(sc[u][i] - base);
            sum += sc[u][i];
        }
        m[i] = mx;
        l[i] = l[i] * corr + sum;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[i][e] *= corr;
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        int key = key0 + u * KPS + warp * KPW + lane / LPK;
        float vf[8];
        if (key == last) {
#pragma unroll
            for (int e = 0; e < 8; e++) vf[e] = new_v[c * 8 + e];
        } else {
            rl_unpack_bf16x8(vr[u], vf);
        }
#pragma unroll
        for (int i = 0; i < GM; i++)
#pragma unroll
            for (int e = 0; e < 8; e++) acc[i][e] += sc[u][i] * vf[e];
    }
}

template <int D, int GM>
__global__ void __launch_bounds__(B1_THREADS) qk_rope_attn_b1_kernel(b1_args a)
{
    constexpr int LPK = D / 8, KPW = 32 / LPK, KPS = B1_WARPS * KPW, U = b1_u<GM>(), CHUNK = KPS * U;
    constexpr int NJ = (D + 31) / 32, NA = (D / 2 + 31) / 32; /* a lane's elements, rotation pairs */
    __shared__ float rows[B1_WARPS][D];                /* a warp's row being normalised */
    __shared__ float qs[GM][D], new_k[D], new_v[D];    /* the block's query rows, the new key/value */
    __shared__ float wo[B1_WARPS][GM][D], wm[B1_WARPS][GM], wl[B1_WARPS][GM];
    __shared__ float bo[GM][D], bm[GM], bl[GM];        /* the block's state, read by the cluster */
    cg::cluster_group cluster = cg::this_cluster();
    int rank = (int)cluster.block_rank(), n_ranks = (int)cluster.num_blocks();
    int g = blockIdx.y, s = blockIdx.z, G = a.group;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, c = lane % LPK;

    /* Before the wait: what no kernel of a step writes (lengths, tables, slot, position, norm
     * weights, angles) and the cached keys and values of the first two chunks. */
    int t = a.cu_q[s], len_k = a.seqlens_k[s], last = len_k - 1;
    int per = (len_k + n_ranks - 1) / n_ranks;
    int kb = min(len_k, rank * per), ke = min(len_k, kb + per);
    bool owner = len_k > 0 && kb <= last && last < ke;
    int pool_end = min(ke, last); /* keys [kb, pool_end) come from the pool */
    const int32_t *table = a.tables + (size_t)s * a.max_blocks;
    uint4 k0[U], v0[U], k1[U], v1[U];
    b1_load<D, U>(k0, v0, a, table, g, kb, pool_end);
    b1_load<D, U>(k1, v1, a, table, g, kb + CHUNK, pool_end);

    /* warp items: query rows 0 .. G-1, then (owner) the new key and the new value */
    int n_items = G + (owner ? 2 : 0);
    int slot = a.slots[t];
    float pos = (float)a.positions[t];
    float sn[NA], cs[NA];
#pragma unroll
    for (int j = 0; j < NA; j++) {
        int i = lane + 32 * j;
        sn[j] = 0.0f, cs[j] = 1.0f;
        if (i < D / 2) sincosf(pos * a.inv_freq[i], &sn[j], &cs[j]);
    }
    rl_pdl_begin();

    for (int item = warp; item < n_items; item += B1_WARPS) {
        int kind = item < G ? 0 : item == G ? 1 : 2; /* q, k, v */
        const bf16 *src = kind == 0   ? a.q + (size_t)t * a.q_stride + (size_t)(g * G + item) * D
                          : kind == 1 ? a.k + (size_t)t * a.kv_stride + (size_t)g * D
                                      : a.v + (size_t)t * a.kv_stride + (size_t)g * D;
        size_t at = slot >= 0 ? (size_t)(slot / a.block_size) * a.block_stride +
                                    ((size_t)(slot % a.block_size) * a.n_kv_heads + g) * D
                              : 0;
        if (kind == 2) {
            for (int d = lane; d < D; d += 32) {
                bf16 x = src[d];
                new_v[d] = rl_b2f(x);
                if (slot >= 0) a.v_pool[at + d] = x;
            }
            continue;
        }
        const bf16 *w = kind == 0 ? a.q_norm : a.k_norm;
        float *r = rows[warp], ss = 0.0f;
        for (int d = lane; d < D; d += 32) {
            float x = rl_b2f(src[d]);
            r[d] = x;
            ss += x * x;
        }
        if (w) {
            float rs = rsqrtf(rl_warp_sum(ss) / (float)D + a.eps);
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                int d = lane + 32 * j;
                if (d < D) r[d] = (r[d] * rs) * rl_b2f(w[d]);
            }
        }
        __syncwarp();
#pragma unroll
        for (int j = 0; j < NA; j++) {
            int i = lane + 32 * j;
            if (i < D / 2) {
                float x0 = r[i], x1 = r[i + D / 2];
                bf16 y0 = rl_f2b(x0 * cs[j] - x1 * sn[j]), y1 = rl_f2b(x1 * cs[j] + x0 * sn[j]);
                if (kind == 0) {
                    qs[item][i] = rl_b2f(y0), qs[item][i + D / 2] = rl_b2f(y1);
                    if (rank == 0) {
                        bf16 *qo = a.q_out + ((size_t)t * a.n_heads + g * G + item) * D;
                        qo[i] = y0, qo[i + D / 2] = y1;
                    }
                } else {
                    new_k[i] = rl_b2f(y0), new_k[i + D / 2] = rl_b2f(y1);
                    if (slot >= 0) a.k_pool[at + i] = y0, a.k_pool[at + i + D / 2] = y1;
                }
            }
        }
        __syncwarp();
    }
    if (len_k <= 0) { /* padding: the whole cluster leaves here, before any cluster barrier */
        if (rank == 0)
            for (int idx = threadIdx.x; idx < G * D; idx += B1_THREADS)
                a.out[((size_t)t * a.n_heads + g * G) * D + idx] = rl_f2b(0.0f);
        return;
    }
    __syncthreads();

    float qf[GM][8], m[GM], l[GM], acc[GM][8];
#pragma unroll
    for (int i = 0; i < GM; i++) {
        m[i] = -INFINITY, l[i] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) {
            qf[i][e] = i < G ? qs[i][c * 8 + e] : 0.0f;
            acc[i][e] = 0.0f;
        }
    }
    /* keys [kb, ke): chunks in pairs, the next chunk's loads in flight while one is used; only
     * the owner substitutes the new key (elsewhere `last` could be a masked lane's key, and the
     * shared new key/value are not written there) */
    last = owner ? last : -1;
    for (int key0 = kb; key0 < ke; key0 += 2 * CHUNK) {
        b1_chunk<D, GM, U>(k0, v0, qf, m, l, acc, key0, ke, last, new_k, new_v, a.scale_log2);
        if (key0 + 2 * CHUNK < ke) b1_load<D, U>(k0, v0, a, table, g, key0 + 2 * CHUNK, pool_end);
        if (key0 + CHUNK >= ke) break;
        b1_chunk<D, GM, U>(k1, v1, qf, m, l, acc, key0 + CHUNK, ke, last, new_k, new_v, a.scale_log2);
        if (key0 + 3 * CHUNK < ke) b1_load<D, U>(k1, v1, a, table, g, key0 + 3 * CHUNK, pool_end);
    }

    /* merge the lane groups of the warp (shuffles), then the warps (shared memory) */
#pragma unroll
    for (int off = LPK; off < 32; off <<= 1)
#pragma unroll
        for (int i = 0; i < GM; i++) {
            float mo = __shfl_xor_sync(0xffffffffu, m[i], off), lo = __shfl_xor_sync(0xffffffffu, l[i], off);
            float mx = fmaxf(m[i], mo), base = mx == -INFINITY ? 0.0f : mx;
            float ca = exp2f(m[i] - base), cb = exp2f(mo - base);
            l[i] = l[i] * ca + lo * cb;
            m[i] = mx;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[i][e] = acc[i][e] * ca + __shfl_xor_sync(0xffffffffu, acc[i][e], off) * cb;
        }
    if (lane < LPK)
#pragma unroll
        for (int i = 0; i < GM; i++) {
#pragma unroll
            for (int e = 0; e < 8; e++) wo[warp][i][c * 8 + e] = acc[i][e];
            if (lane == 0) wm[warp][i] = m[i], wl[warp][i] = l[i];
        }
    __syncthreads();
    for (int idx = threadIdx.x; idx < G * D; idx += B1_THREADS) {
        int i = idx / D, d = idx % D;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < B1_WARPS; w++) mx = fmaxf(mx, wm[w][i]);
        float base = mx == -INFINITY ? 0.0f : mx, o = 0.0f, sum = 0.0f;
#pragma unroll
        for (int w = 0; w < B1_WARPS; w++) {
            float wt = exp2f(wm[w][i] - base);
            o += wt * wo[w][i][d];
            sum += wt * wl[w][i];
        }
        bo[i][d] = o;
        if (d == 0) bm[i] = mx, bl[i] = sum;
    }

    /* merge the cluster's blocks: each output element by one thread of the cluster, reading
     * every block's state through DSMEM; the second barrier keeps the states alive until read */
    cluster.sync();
    for (int idx = rank * B1_THREADS + threadIdx.x; idx < G * D; idx += n_ranks * B1_THREADS) {
        int i = idx / D, d = idx % D;
        float mx = -INFINITY;
        for (int r = 0; r < n_ranks; r++) mx = fmaxf(mx, cluster.map_shared_rank(&bm[0], r)[i]);
        float base = mx == -INFINITY ? 0.0f : mx, o = 0.0f, sum = 0.0f;
        for (int r = 0; r < n_ranks; r++) {
            float wt = exp2f(cluster.map_shared_rank(&bm[0], r)[i] - base);
            o += wt * cluster.map_shared_rank(&bo[0][0], r)[i * D + d];
            sum += wt * cluster.map_shared_rank(&bl[0], r)[i];
        }
        a.out[((size_t)t * a.n_heads + g * G + i) * D + d] = rl_f2b(sum > 0.0f ? o / sum : 0.0f);
    }
    cluster.sync();
}

template <int D, int GM>
static int b1_launch(rl_ctx *ctx, const b1_args &a, int n_seqs)
{
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = B1_CLUSTER;
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(B1_CLUSTER, (unsigned)a.n_kv_heads, (unsigned)n_seqs);
    cfg.blockDim = dim3(B1_THREADS);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = rl_cuda_st(ctx)->stream;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, qk_rope_attn_b1_kernel<D, GM>, a));
    LAUNCH_CHECK();
    return 0;
}

template <int D>
static int b1_launch_d(rl_ctx *ctx, const b1_args &a, int n_seqs)
{
    return a.group <= 2 ? b1_launch<D, 2>(ctx, a, n_seqs)
           : a.group <= 4 ? b1_launch<D, 4>(ctx, a, n_seqs)
                          : b1_launch<D, 8>(ctx, a, n_seqs);
}

extern "C" int rl_cuda_qk_norm_rope_attention_fwd(rl_ctx *ctx, void *out, void *q_out, const rl_paged_kv *kv,
                                                  const void *q, const void *k, const void *v, size_t q_stride,
                                                  size_t kv_stride, const void *q_norm, const void *k_norm, float eps,
                                                  const int32_t *positions, const float *inv_freq,
                                                  const int32_t *slots, int n_tokens, const int32_t *cu_seqlens_q,
                                                  const int32_t *seqlens_k, int n_seqs, int max_seqlen_q,
                                                  int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim,
                                                  float scale)
{
    int group = n_heads / n_kv_heads, d = head_dim;
    uintptr_t align = (uintptr_t)kv->k | (uintptr_t)kv->v;
    bool one_kernel = !rl_cuda_f32(ctx) && n_seqs > 0 && n_seqs <= B1_MAX_SEQS && max_seqlen_q == 1 &&
                      n_tokens == n_seqs && (d == 16 || d == 32 || d == 64 || d == 128) && group <= B1_MAX_GROUP &&
                      (align & 15) == 0 && kv->block_stride % 8 == 0 && (q_out != q);
    if (!one_kernel) {
        if (rl_cuda_qk_norm_rope_cache_fwd(ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps,
                                           positions, inv_freq, slots, n_tokens, n_heads, n_kv_heads, head_dim))
            return -1;
        return rl_cuda_paged_attention_fwd(ctx, out, q_out, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q,
                                           max_seqlen_k, n_heads, n_kv_heads, head_dim, scale);
    }
    b1_args a;
    a.out = (bf16 *)out;
    a.q_out = (bf16 *)q_out;
    a.k_pool = (bf16 *)kv->k;
    a.v_pool = (bf16 *)kv->v;
    a.q = (const bf16 *)q;
    a.k = (const bf16 *)k;
    a.v = (const bf16 *)v;
    a.q_norm = (const bf16 *)q_norm;
    a.k_norm = (const bf16 *)k_norm;
    a.q_stride = q_stride;
    a.kv_stride = kv_stride;
    a.block_stride = kv->block_stride;
    a.block_size = kv->block_size;
    a.max_blocks = kv->max_blocks;
    a.tables = kv->block_tables;
    a.cu_q = cu_seqlens_q;
    a.seqlens_k = seqlens_k;
    a.positions = positions;
    a.slots = slots;
    a.inv_freq = inv_freq;
    a.eps = eps;
    a.scale_log2 = scale * 1.4426950408889634f;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.group = group;
    switch (d) {
    case 16: return b1_launch_d<16>(ctx, a, n_seqs);
    case 32: return b1_launch_d<32>(ctx, a, n_seqs);
    case 64: return b1_launch_d<64>(ctx, a, n_seqs);
    default: return b1_launch_d<128>(ctx, a, n_seqs);
    }
}
