/* policy_loss.cu — GRPO / DAPO / Dr. GRPO clipped policy loss, forward and backward fused.
 *
 * One thread per token, in double as backend/cpu/policy_loss.c: r = exp(logp - old_logp),
 * s = min(r A, clip(r) A), the k3 KL estimate kl = exp(ref - logp) - (ref - logp) - 1
 * (Schulman 2020) and dlogp = w (-A r [not clipped] + kl_beta (1 - exp(ref - logp))), where
 * "clipped" (the gradient is zero) means r > 1 + clip_high with A > 0 or r < 1 - clip_low with
 * A < 0. The statistics (weighted loss, kl, clipped indicator, ratio and the weight
 * sum) are reduced per block in double, then by one block in a fixed order: deterministic.
 * ref_logp may be NULL when kl_beta is 0. */
#include "backend/cuda/common.cuh"

#define PL_THREADS 256
#define PL_MAX_BLOCKS 256
#define PL_N 5 /* loss, w*kl, w*clipped, w*ratio, w */

__global__ void policy_loss_kernel(float *dlogp, double *partial, const float *logp, const float *old_logp,
                                   const float *ref_logp, const float *advantage, const float *weight,
                                   int n_tokens, float clip_low, float clip_high, float kl_beta)
{
    double acc[PL_N] = {0, 0, 0, 0, 0};
    double lo = 1.0 - (double)clip_low, hi = 1.0 + (double)clip_high;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_tokens; i += gridDim.x * blockDim.x) {
        double w = weight[i];
        if (w == 0.0) {
            dlogp[i] = 0.0f;
            continue;
        }
        double a = advantage[i], lp = logp[i];
        double r = exp(lp - old_logp[i]);
        double rc = r < lo ? lo : r > hi ? hi : r;
        int clipped = (r > hi && a > 0) || (r < lo && a < 0);
        double s = fmin(r * a, rc * a), kl = 0.0, dkl = 0.0;
        if (kl_beta != 0.0f) {
            double x = (double)ref_logp[i] - lp;
            kl = exp(x) - x - 1.0;
            dkl = 1.0 - exp(x);
        }
        dlogp[i] = (float)(w * ((clipped ? 0.0 : -a * r) + kl_beta * dkl));
        acc[0] += w * (-s + kl_beta * kl);
        acc[1] += w * kl;
        acc[2] += clipped ? w : 0.0;
        acc[3] += w * r;
        acc[4] += w;
    }
    for (int q = 0; q < PL_N; q++) {
        double v = rl_block_sum_d(acc[q]);
        if (threadIdx.x == 0) partial[blockIdx.x * PL_N + q] = v;
    }
}

__global__ void policy_loss_final_kernel(double *out, const double *partial, int n_blocks)
{
    for (int q = 0; q < PL_N; q++) {
        double v = 0.0;
        for (int b = threadIdx.x; b < n_blocks; b += blockDim.x) v += partial[b * PL_N + q];
        v = rl_block_sum_d(v);
        if (threadIdx.x == 0) out[q] = v;
    }
}

extern "C" int rl_cuda_policy_loss(rl_ctx *ctx, float *dlogp, double *stats, const float *logp,
                                   const float *old_logp, const float *ref_logp, const float *advantage,
                                   const float *weight, int n_tokens, const rl_policy_loss_params *p)
{
    rl_cuda_state *st = rl_cuda_st(ctx);
    unsigned blocks = rl_cuda_blocks((size_t)n_tokens, PL_THREADS, PL_MAX_BLOCKS);
    double *partial = st->reduce + 8;
    policy_loss_kernel<<<blocks, PL_THREADS, 0, st->stream>>>(dlogp, partial, logp, old_logp, ref_logp,
                                                              advantage, weight, n_tokens, p->clip_low,
                                                              p->clip_high, p->kl_beta);
    LAUNCH_CHECK();
    policy_loss_final_kernel<<<1, PL_THREADS, 0, st->stream>>>(st->reduce, partial, (int)blocks);
    LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpyAsync(st->reduce_host, st->reduce, PL_N * sizeof(double), cudaMemcpyDeviceToHost,
                               st->stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
    const double *h = st->reduce_host;
    double wsum = h[4];
    stats[RL_LOSS_STAT_LOSS] = h[0];
    stats[RL_LOSS_STAT_KL] = wsum != 0.0 ? h[1] / wsum : 0.0;
    stats[RL_LOSS_STAT_CLIPPED] = wsum != 0.0 ? h[2] / wsum : 0.0;
    stats[RL_LOSS_STAT_RATIO] = wsum != 0.0 ? h[3] / wsum : 0.0;
    return 0;
}
