/* lm_head.cu — lm_head fused with log-softmax: log-probs of targets, log-sum-exp, entropy,
 * and the backward, chunked over tokens so no [n_tokens x vocab] buffer exists.
 *
 * Forward, per chunk of tokens: fp32 logits z = inv_temperature * hidden @ W^T go through
 * cuBLASLt into a bounded scratch (fp32, not bf16: a logit of 20 has a bf16 step of 0.125,
 * too coarse for log-probs); one block per token then makes one pass over its row with an
 * online log-sum-exp (Milakov & Gimelshein 2018) that also carries sum z e^(z - max), so
 * entropy = lse - E[z] comes from the same pass.
 * Backward, per chunk: recompute the logits, form dz = inv_temperature * (dlogp *
 * (onehot(target) - p) - dentropy * p (log p + H)) with p = exp(z - lse) in the act dtype (bf16;
 * fp32 in the fp32 mode; the entropy term only where dentropy is given), then dhidden = dz @ W and dweight += dz^T @ hidden
 * (fp32, beta = 1). Scratch is capped at LM_SCRATCH_BYTES; the chunk size follows from vocab. */
#include "backend/cuda/common.cuh"

#define LM_SCRATCH_BYTES ((size_t)256 << 20)
#define LSE_THREADS 512

struct lse_state {
    float m, s, t; /* running max, sum e^(z-m), sum z e^(z-m) */
};

__device__ __forceinline__ lse_state lse_merge(lse_state a, lse_state b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return a;
    float fa = a.m == -INFINITY ? 0.0f : __expf(a.m - m);
    float fb = b.m == -INFINITY ? 0.0f : __expf(b.m - m);
    lse_state r = {m, a.s * fa + b.s * fb, a.t * fa + b.t * fb};
    return r;
}

__global__ void lm_lse_kernel(float *logp, float *lse, float *entropy, const float *z, const int32_t *targets,
                              int vocab)
{
    __shared__ lse_state part[32];
    int row = blockIdx.x;
    const float *zr = z + (size_t)row * vocab;
    lse_state st = {-INFINITY, 0.0f, 0.0f};
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
        float v = zr[i];
        if (v > st.m) {
            float f = st.m == -INFINITY ? 0.0f : __expf(st.m - v);
            st.s = st.s * f + 1.0f;
            st.t = st.t * f + v;
            st.m = v;
        } else {
            float e = __expf(v - st.m);
            st.s += e;
            st.t += v * e;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        lse_state other = {__shfl_xor_sync(0xffffffffu, st.m, o), __shfl_xor_sync(0xffffffffu, st.s, o),
                           __shfl_xor_sync(0xffffffffu, st.t, o)};
        st = lse_merge(st, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = st;
    __syncthreads();
    if (threadIdx.x == 0) {
        lse_state acc = part[0];
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) acc = lse_merge(acc, part[w]);
        float l = acc.m + logf(acc.s);
        lse[row] = l;
        if (entropy) entropy[row] = l - acc.t / acc.s;
        int tg = targets[row];
        logp[row] = tg < 0 ? 0.0f : tg < vocab ? zr[tg] - l : NAN;
    }
}

template <typename T>
__global__ void lm_dz_kernel(T *dz, const float *z, const float *lse, const float *dlogp, const float *dentropy,
                             const float *entropy, const int32_t *targets, int vocab, float inv_temperature)
{
    int row = blockIdx.y;
    int tg = targets[row];
    float g = tg < 0 ? 0.0f : dlogp[row] * inv_temperature;
    float ge = tg < 0 || !dentropy ? 0.0f : dentropy[row] * inv_temperature;
    float l = lse[row], h = ge != 0.0f ? entropy[row] : 0.0f;
    const float *zr = z + (size_t)row * vocab;
    T *dr = dz + (size_t)row * vocab;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < vocab; i += gridDim.x * blockDim.x) {
        float lp = zr[i] - l, p = __expf(lp);
        dr[i] = rl_fromf<T>(g * ((i == tg ? 1.0f : 0.0f) - p) - ge * p * (lp + h));
    }
}

static int chunk_rows(int n_tokens, int vocab, size_t bytes_per_elem)
{
    size_t rows = LM_SCRATCH_BYTES / ((size_t)vocab * bytes_per_elem);
    if (rows < 1) rows = 1;
    return rows < (size_t)n_tokens ? (int)rows : n_tokens;
}

static int logits_chunk(rl_ctx *ctx, float *z, const void *hidden, const void *weight, int rows, int dim,
                        int vocab, float alpha)
{
    if (ctx->deterministic) /* batch-invariant: a row's logits do not depend on the chunk */
        return rl_cuda_gemm_det(ctx, z, 1, NULL, hidden, weight, NULL, rows, vocab, dim, alpha);
    return rl_cuda_gemm(ctx, 1, 0, vocab, rows, dim, alpha, weight, dim, hidden, dim, 0.0f, NULL, z, vocab, CUDA_R_32F,
                        NULL);
}

extern "C" int rl_cuda_lm_head_logprobs_fwd(rl_ctx *ctx, float *logp, float *lse, float *entropy,
                                            const void *hidden, const void *weight, const int32_t *targets,
                                            int n_tokens, int dim, int vocab, float inv_temperature)
{
    if (n_tokens == 0) return 0;
    size_t esize = rl_dtype_size(ctx->act_dtype);
    int rows = chunk_rows(n_tokens, vocab, sizeof(float));
    float *z = (float *)rl_cuda_scratch(ctx, (size_t)rows * vocab * sizeof(float));
    if (!z) return -1;
    cudaStream_t s = rl_cuda_st(ctx)->stream;
    for (int t0 = 0; t0 < n_tokens; t0 += rows) {
        int r = n_tokens - t0 < rows ? n_tokens - t0 : rows;
        const char *h = (const char *)hidden + (size_t)t0 * dim * esize;
        if (logits_chunk(ctx, z, h, weight, r, dim, vocab, inv_temperature))
            return -1;
        lm_lse_kernel<<<r, LSE_THREADS, 0, s>>>(logp + t0, lse + t0, entropy ? entropy + t0 : NULL, z,
                                                targets + t0, vocab);
        LAUNCH_CHECK();
    }
    return 0;
}

extern "C" int rl_cuda_lm_head_logprobs_bwd(rl_ctx *ctx, void *dhidden, float *dweight, const float *dlogp,
                                            const float *dentropy, const void *hidden, const void *weight,
                                            const int32_t *targets, const float *lse, const float *entropy,
                                            int n_tokens, int dim, int vocab, float inv_temperature)
{
    if (n_tokens == 0) return 0;
    size_t esize = rl_dtype_size(ctx->act_dtype);
    int rows = chunk_rows(n_tokens, vocab, sizeof(float) + esize);
    size_t zbytes = ((size_t)rows * vocab * sizeof(float) + 255) & ~(size_t)255;
    char *buf = (char *)rl_cuda_scratch(ctx, zbytes + (size_t)rows * vocab * esize);
    if (!buf) return -1;
    float *z = (float *)buf;
    void *dz = buf + zbytes;
    cudaStream_t s = rl_cuda_st(ctx)->stream;
    for (int t0 = 0; t0 < n_tokens; t0 += rows) {
        int r = n_tokens - t0 < rows ? n_tokens - t0 : rows;
        const char *h = (const char *)hidden + (size_t)t0 * dim * esize;
        if (logits_chunk(ctx, z, h, weight, r, dim, vocab, inv_temperature)) return -1;
        dim3 grid(rl_cuda_blocks((size_t)vocab, 256, 64), r);
        if (rl_cuda_f32(ctx))
            lm_dz_kernel<float><<<grid, 256, 0, s>>>((float *)dz, z, lse + t0, dlogp + t0,
                                                     dentropy ? dentropy + t0 : NULL, dentropy ? entropy + t0 : NULL,
                                                     targets + t0, vocab, inv_temperature);
        else
            lm_dz_kernel<bf16><<<grid, 256, 0, s>>>((bf16 *)dz, z, lse + t0, dlogp + t0,
                                                    dentropy ? dentropy + t0 : NULL, dentropy ? entropy + t0 : NULL,
                                                    targets + t0, vocab, inv_temperature);
        LAUNCH_CHECK();
        if (dhidden && rl_cuda_gemm(ctx, 0, 0, dim, r, vocab, 1.0f, weight, dim, dz, vocab, 0.0f, NULL,
                               (char *)dhidden + (size_t)t0 * dim * esize, dim, rl_cuda_act_type(ctx), NULL))
            return -1;
        if (dweight && rl_cuda_gemm(ctx, 0, 1, dim, vocab, r, 1.0f, h, dim, dz, vocab, 1.0f, NULL, dweight, dim, CUDA_R_32F,
                               NULL))
            return -1;
    }
    return 0;
}

extern "C" int rl_cuda_lm_head_logits(rl_ctx *ctx, float *logits, const void *hidden, const void *weight,
                                      int n_rows, int dim, int vocab)
{
    if (n_rows == 0) return 0;
    /* a decode step of a few sequences: the weight streamed by gemv.cu (cuBLASLt's kernel
     * reached ~2.75 TB/s at batch 1) */
    int ran = 0;
    if (!ctx->deterministic && rl_cuda_gemv_f32(ctx, logits, hidden, weight, n_rows, vocab, dim, &ran)) return -1;
    if (ran) return 0;
    return logits_chunk(ctx, logits, hidden, weight, n_rows, dim, vocab, 1.0f);
}
