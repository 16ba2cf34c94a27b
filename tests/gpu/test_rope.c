/* test_rope.c — CUDA RoPE forward and backward (in place) against the CPU op, positions up to
 * 32000 (where fast sin/cos would lose digits). Tolerance: bf16 outputs 2e-2. */
#include "gpu_util.h"

static void run(int n_tokens, int n_heads, int head_dim, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    size_t n = (size_t)n_tokens * n_heads * head_dim;
    int half = head_dim / 2;
    float *x = gu_rand(&g, n, -2, 2, seed);
    float *inv_freq = gu_host(&g, half * sizeof(float));
    for (int i = 0; i < half; i++) inv_freq[i] = powf(1000000.0f, -2.0f * i / head_dim);
    int32_t *pos = gu_host(&g, n_tokens * sizeof(int32_t));
    rl_rng rng;
    rl_rng_init(&rng, seed + 1);
    for (int t = 0; t < n_tokens; t++) pos[t] = (int32_t)rl_rng_below(&rng, 32000);
    int32_t *d_pos = gu_up_bytes(&g, pos, n_tokens * sizeof(int32_t));
    float *d_freq = gu_up_f32(&g, inv_freq, half);
    for (int dir = 0; dir < 2; dir++) {
        void *d_x = gu_up_bf16(&g, x, n);
        float *ref = gu_copy(&g, x, n);
        if (dir == 0) {
            GU_OK(&g, rl_rope_fwd(&g.gpu, d_x, d_pos, d_freq, n_tokens, n_heads, head_dim));
            GU_CPU_OK(&g, rl_cpu_rope_fwd(&g.cpu, ref, pos, inv_freq, n_tokens, n_heads, head_dim));
        } else {
            GU_OK(&g, rl_rope_bwd(&g.gpu, d_x, d_pos, d_freq, n_tokens, n_heads, head_dim));
            GU_CPU_OK(&g, rl_cpu_rope_bwd(&g.cpu, ref, pos, inv_freq, n_tokens, n_heads, head_dim));
        }
        char what[96];
        snprintf(what, sizeof what, "rope_%s T%d H%d D%d", dir ? "bwd" : "fwd", n_tokens, n_heads, head_dim);
        gu_check(what, gu_get_bf16(&g, d_x, n), ref, n, 2e-2);
    }
    gu_end(&g);
}

Test(gpu_rope, hd64) { run(37, 3, 64, 31); }
Test(gpu_rope, hd128) { run(300, 16, 128, 32); }
Test(gpu_rope, hd_odd_half) { run(5, 2, 18, 33); }
