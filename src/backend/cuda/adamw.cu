/* adamw.cu — fused AdamW step (Loshchilov & Hutter, decoupled weight decay) on fp32 masters
 * and moments, writing the working copy (act dtype) in the same pass when there is one (fp32
 * mode: the masters are the working weights, working is NULL).
 *
 * Same order of floating-point operations as torch.optim.AdamW's single-tensor path and the
 * CPU op (backend/cpu/adamw.c), so both agree to rounding:
 *   g = grad * grad_scale;  param *= 1 - lr * wd;  m += (g - m)(1 - beta1);
 *   v = v beta2 + (1 - beta2) g^2;
 *   param += (-lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps),
 * with the bias corrections computed once on the host in double. */
#include "backend/cuda/common.cuh"

#include <math.h>

template <typename T>
__global__ void adamw_kernel(float *param, T *working, const float *grad, float *m, float *v, size_t n,
                             float beta1, float beta2, float eps, float decay, float grad_scale, float step_size,
                             float bc2_sqrt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = grad[i] * grad_scale;
        float p = param[i] * decay;
        float mi = m[i], vi = v[i];
        mi += (g - mi) * (1.0f - beta1);
        vi = vi * beta2 + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / bc2_sqrt + eps;
        p = p + (-step_size * mi) / denom;
        param[i] = p;
        if (working) working[i] = rl_fromf<T>(p);
    }
}

extern "C" int rl_cuda_adamw_step(rl_ctx *ctx, float *param, void *working, const float *grad, float *m,
                                  float *v, size_t n, const rl_adamw_params *p)
{
    if (n == 0) return 0;
    double bc1 = 1.0 - pow(p->beta1, p->step), bc2 = 1.0 - pow(p->beta2, p->step);
    float step_size = (float)(p->lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    float decay = 1.0f - p->lr * p->weight_decay;
    unsigned blocks = rl_cuda_blocks(n, 256, 8192);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    if (rl_cuda_f32(ctx))
        adamw_kernel<float><<<blocks, 256, 0, st>>>(param, (float *)working, grad, m, v, n, p->beta1, p->beta2,
                                                    p->eps, decay, p->grad_scale, step_size, bc2_sqrt);
    else
        adamw_kernel<bf16><<<blocks, 256, 0, st>>>(param, (bf16 *)working, grad, m, v, n, p->beta1, p->beta2,
                                                   p->eps, decay, p->grad_scale, step_size, bc2_sqrt);
    LAUNCH_CHECK();
    return 0;
}
