/* adamw.c — AdamW (Loshchilov & Hutter 2019) on fp32 master weights, in the same order of
 * floating-point operations as torch.optim.AdamW's single-tensor path, so that both agree to
 * rounding:
 *   g = grad * grad_scale;  param *= 1 - lr * wd;  m += (g - m)(1 - beta1);
 *   v = v beta2 + (1 - beta2) g^2;
 *   param += (-lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
 * working (a low-precision copy for the CUDA forward) must be NULL or the fp32 param itself on
 * the CPU, where the masters are the working weights. Arguments are checked by backend/ops.c. */
#include <math.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"

int rl_cpu_adamw_step(rl_ctx *ctx, float *param, void *working, const float *grad, float *m,
                      float *v, size_t n, const rl_adamw_params *params)
{
    /* The CPU's own limit: its masters are the working weights, there is no copy to write. */
    if (working && working != param)
        return rl_err_set(&ctx->err, "working is not NULL: the CPU backend has no separate working copy");

    float lr = params->lr, b1 = params->beta1, b2 = params->beta2, eps = params->eps;
    float decay = 1.0f - lr * params->weight_decay, gs = params->grad_scale;
    double bc1 = 1.0 - pow(b1, params->step), bc2 = 1.0 - pow(b2, params->step);
    float step_size = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2);
#pragma omp parallel for num_threads(cpu_threads(ctx, (double)n)) schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] * gs;
        float p = param[i] * decay;
        m[i] += (g - m[i]) * (1.0f - b1);
        v[i] = v[i] * b2 + (1.0f - b2) * g * g;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        param[i] = p + (-step_size * m[i]) / denom;
    }
    return 0;
}
