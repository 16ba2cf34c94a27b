/* rope.cu — rotary position embedding, split-half (rotate_half) form, in place.
 *
 * One thread per (token, head, i < head_dim/2) pair. The angle is positions[t] * inv_freq[i]
 * in fp32 and sin/cos use the accurate sincosf (positions reach tens of thousands, where the
 * fast intrinsics lose digits). The backward rotates by -angle. */
#include "backend/cuda/common.cuh"

template <typename T>
__global__ void rope_kernel(T *x, const int32_t *positions, const float *inv_freq, int n_tokens,
                            int n_heads, int head_dim, float sign)
{
    int half = head_dim / 2;
    size_t n = (size_t)n_tokens * n_heads * half;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(idx % half);
        size_t th = idx / half; /* token * n_heads + head */
        int t = (int)(th / n_heads);
        float angle = (float)positions[t] * inv_freq[i];
        float s, c;
        sincosf(angle, &s, &c);
        s *= sign;
        T *p = x + th * head_dim;
        float a = rl_tof(p[i]), b = rl_tof(p[i + half]);
        p[i] = rl_fromf<T>(a * c - b * s);
        p[i + half] = rl_fromf<T>(b * c + a * s);
    }
}

static int rope(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads,
                int head_dim, float sign)
{
    size_t n = (size_t)n_tokens * n_heads * (head_dim / 2);
    if (n == 0) return 0;
    unsigned blocks = rl_cuda_blocks(n, 256, 65535);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    if (rl_cuda_f32(ctx))
        rope_kernel<float><<<blocks, 256, 0, st>>>((float *)x, positions, inv_freq, n_tokens, n_heads, head_dim, sign);
    else
        rope_kernel<bf16><<<blocks, 256, 0, st>>>((bf16 *)x, positions, inv_freq, n_tokens, n_heads, head_dim, sign);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_rope_fwd(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq,
                                int n_tokens, int n_heads, int head_dim)
{
    return rope(ctx, x, positions, inv_freq, n_tokens, n_heads, head_dim, 1.0f);
}

extern "C" int rl_cuda_rope_bwd(rl_ctx *ctx, void *dx, const int32_t *positions, const float *inv_freq,
                                int n_tokens, int n_heads, int head_dim)
{
    return rope(ctx, dx, positions, inv_freq, n_tokens, n_heads, head_dim, -1.0f);
}
