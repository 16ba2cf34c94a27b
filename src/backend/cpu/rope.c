/* rope.c — rotary position embedding in the split-half (rotate_half) form of Qwen/Llama, in
 * place. Like transformers, the angle positions[t] * inv_freq[i] is formed in fp32 and cos/sin
 * are taken of that fp32 angle. The backward is the transpose of the rotation, i.e. the same
 * rotation by -angle. */
#include <math.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

static int rotate(rl_ctx *ctx, float *x, const int32_t *positions, const float *inv_freq, int n_tokens,
                  int n_heads, int head_dim, float sign)
{
    int half = head_dim / 2;
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n_tokens * n_heads * head_dim)) schedule(static)
    for (int t = 0; t < n_tokens; t++) {
        float pos = (float)positions[t];
        for (int i = 0; i < half; i++) {
            float angle = pos * inv_freq[i];
            float c = cosf(angle), s = sign * sinf(angle);
            for (int h = 0; h < n_heads; h++) {
                float *v = x + ((size_t)t * n_heads + h) * head_dim;
                float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = b * c + a * s;
            }
        }
    }
    return 0;
}

int rl_cpu_rope_fwd(rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq,
                    int n_tokens, int n_heads, int head_dim)
{
    return rotate(ctx, x, positions, inv_freq, n_tokens, n_heads, head_dim, 1.0f);
}

int rl_cpu_rope_bwd(rl_ctx *ctx, void *dx, const int32_t *positions, const float *inv_freq,
                    int n_tokens, int n_heads, int head_dim)
{
    return rotate(ctx, dx, positions, inv_freq, n_tokens, n_heads, head_dim, -1.0f);
}
