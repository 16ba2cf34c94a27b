/* qk_rope_cache.cu — rl_qk_norm_rope_cache_fwd: a generation step's q/k RMSNorm per head, RoPE
 * and KV-pool write in one pass over the q|k|v projection (where the unfused path runs three
 * row gathers, two norms, two rotations and the cache write).
 *
 * One warp per (token, head) row, over the n_heads query rows, then the n_kv_heads key rows,
 * then the n_kv_heads value rows of each token: the row goes to shared memory in fp32, the
 * warp sums its squares (fp32) and scales by rsqrt(mean + eps) and the head weight, then lane i
 * rotates the pairs (i, i + head_dim/2) (angle positions[t] * inv_freq[i] in fp32, accurate
 * sincosf as rope.cu) and writes the act dtype T (bf16; fp32 in the fp32 mode): query rows to q_out, key and value rows to the pool slot
 * (slots[t] < 0: not written). Values are only copied. head_dim even, at most 256. Everything
 * that does not come from the previous kernel (slot, position, angles, norm weight) is read
 * before the programmatic-launch wait, so that only the row's read and the arithmetic follow
 * it. */
#include "backend/cuda/common.cuh"

#define QK_WARPS 8
#define QK_MAX_D 256

template <typename T>
struct qk_args {
    T *q_out, *k_pool, *v_pool;
    const T *q, *k, *v, *q_norm, *k_norm;
    size_t q_stride, kv_stride, block_stride;
    int block_size;
    float eps;
    const int32_t *positions, *slots;
    const float *inv_freq;
    int n_tokens, n_heads, n_kv_heads, head_dim;
};

template <typename T>
__global__ void __launch_bounds__(QK_WARPS * 32) qk_norm_rope_cache_kernel(qk_args<T> a)
{
    __shared__ float rows[QK_WARPS][QK_MAX_D];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, per = a.n_heads + 2 * a.n_kv_heads;
    size_t item = (size_t)blockIdx.x * QK_WARPS + warp;
    if (item >= (size_t)a.n_tokens * per) return;
    int t = (int)(item / per), h = (int)(item % per), D = a.head_dim, half = D / 2;
    int kind = h < a.n_heads ? 0 : h < a.n_heads + a.n_kv_heads ? 1 : 2; /* q, k, v */
    int hh = kind == 0 ? h : kind == 1 ? h - a.n_heads : h - a.n_heads - a.n_kv_heads;
    /* Before the wait on the previous kernel (the q|k|v product): what no kernel of a step
     * writes, so that only the row's own read follows it: the slot and the position (the
     * decode state, advanced at the end of the previous step, or uploaded before the step),
     * the norm weight and the rotation angles' sines and cosines (lane's pairs lane + 32 j). */
    int slot = kind == 0 ? 0 : a.slots[t];
    const T *w = kind == 0 ? a.q_norm : a.k_norm;
    float wn[QK_MAX_D / 32], sn[QK_MAX_D / 64], cs[QK_MAX_D / 64];
#pragma unroll
    for (int j = 0; j < QK_MAX_D / 32; j++) {
        int d = lane + 32 * j;
        wn[j] = kind != 2 && w && d < D ? rl_tof(w[d]) : 0.0f;
    }
    float pos = kind != 2 ? (float)a.positions[t] : 0.0f;
#pragma unroll
    for (int j = 0; j < QK_MAX_D / 64; j++) {
        int i = lane + 32 * j;
        sn[j] = 0.0f;
        cs[j] = 1.0f;
        if (kind != 2 && i < half) sincosf(pos * a.inv_freq[i], &sn[j], &cs[j]);
    }
    rl_pdl_begin();
    if (kind != 0 && slot < 0) return;
    const T *src = kind == 0   ? a.q + (size_t)t * a.q_stride + (size_t)hh * D
                      : kind == 1 ? a.k + (size_t)t * a.kv_stride + (size_t)hh * D
                                  : a.v + (size_t)t * a.kv_stride + (size_t)hh * D;
    T *dst;
    if (kind == 0) {
        dst = a.q_out + ((size_t)t * a.n_heads + hh) * D;
    } else {
        size_t at = (size_t)(slot / a.block_size) * a.block_stride +
                    ((size_t)(slot % a.block_size) * a.n_kv_heads + hh) * D;
        dst = (kind == 1 ? a.k_pool : a.v_pool) + at;
    }
    if (kind == 2) {
        for (int d = lane; d < D; d += 32) dst[d] = src[d];
        return;
    }
    float *r = rows[warp];
    float ss = 0.0f;
    for (int d = lane; d < D; d += 32) {
        float x = rl_tof(src[d]);
        r[d] = x;
        ss += x * x;
    }
    if (w) {
        float rs = rsqrtf(rl_warp_sum(ss) / (float)D + a.eps);
#pragma unroll
        for (int j = 0; j < QK_MAX_D / 32; j++) {
            int d = lane + 32 * j;
            if (d < D) r[d] = (r[d] * rs) * wn[j];
        }
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < QK_MAX_D / 64; j++) {
        int i = lane + 32 * j;
        if (i < half) {
            float x0 = r[i], x1 = r[i + half];
            dst[i] = rl_fromf<T>(x0 * cs[j] - x1 * sn[j]);
            dst[i + half] = rl_fromf<T>(x1 * cs[j] + x0 * sn[j]);
        }
    }
}

template <typename T>
static int qk_launch(rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q, const void *k, const void *v,
                     size_t q_stride, size_t kv_stride, const void *q_norm, const void *k_norm, float eps,
                     const int32_t *positions, const float *inv_freq, const int32_t *slots, int n_tokens, int n_heads,
                     int n_kv_heads, int head_dim)
{
    qk_args<T> a;
    a.q_out = (T *)q_out;
    a.k_pool = (T *)kv->k;
    a.v_pool = (T *)kv->v;
    a.q = (const T *)q;
    a.k = (const T *)k;
    a.v = (const T *)v;
    a.q_norm = (const T *)q_norm;
    a.k_norm = (const T *)k_norm;
    a.q_stride = q_stride;
    a.kv_stride = kv_stride;
    a.block_stride = kv->block_stride;
    a.block_size = kv->block_size;
    a.eps = eps;
    a.positions = positions;
    a.slots = slots;
    a.inv_freq = inv_freq;
    a.n_tokens = n_tokens;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    size_t rows = (size_t)n_tokens * (n_heads + 2 * n_kv_heads);
    CUDA_CHECK(rl_launch_pdl(qk_norm_rope_cache_kernel<T>, dim3((unsigned)((rows + QK_WARPS - 1) / QK_WARPS)),
                             dim3(QK_WARPS * 32), 0, rl_cuda_st(ctx)->stream, a));
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_qk_norm_rope_cache_fwd(rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q,
                                              const void *k, const void *v, size_t q_stride, size_t kv_stride,
                                              const void *q_norm, const void *k_norm, float eps,
                                              const int32_t *positions, const float *inv_freq, const int32_t *slots,
                                              int n_tokens, int n_heads, int n_kv_heads, int head_dim)
{
    /* backend/ops.c checked the shapes and pointers; what is left is this kernel's own limit */
    ARG_CHECK(head_dim <= QK_MAX_D, "head_dim %d is more than %d, the most the CUDA kernel takes", head_dim, QK_MAX_D);
    if (n_tokens == 0) return 0;
    if (rl_cuda_f32(ctx))
        return qk_launch<float>(ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions, inv_freq,
                                slots, n_tokens, n_heads, n_kv_heads, head_dim);
    return qk_launch<bf16>(ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions, inv_freq, slots,
                           n_tokens, n_heads, n_kv_heads, head_dim);
}
