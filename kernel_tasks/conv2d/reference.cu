/* reference.cu — conv2d: 2D convolution, NCHW fp32, stride 1, same padding.
 *
 * Baseline: cuDNN (what torch.nn.functional.conv* calls), fp32 with FMA math only, the
 * fastest algorithm cuDNN measures for the shape, plan cached per shape. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdint.h>

#include "rl_kernel.h"

/* A cuDNN forward convolution, NCHW fp32, FMA math only (no TF32), set up once per shape: the
 * descriptors, the fastest algorithm cuDNN measures for the shape (what PyTorch picks with
 * torch.backends.cudnn.benchmark on: a baseline no weaker than a tuned PyTorch user's) and its
 * workspace are cached and rebuilt only when a size changes. */
typedef struct conv_plan {
    int key[10];
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    void *ws;
    size_t ws_size;
} conv_plan;

static cudnnHandle_t dnn(void)
{
    static cudnnHandle_t handle;
    if (!handle && cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) return NULL;
    if (handle) cudnnSetStream(handle, 0);
    return handle;
}

/* Input [n, c, h, w], filter [k, c / groups, r, s], stride 1, padding (pad_h, pad_w). */
static conv_plan *conv_prepare(int n, int c, int h, int w, int k, int r, int s, int pad_h, int pad_w, int groups)
{
    static conv_plan plan;
    static int ready;
    int key[10] = {n, c, h, w, k, r, s, pad_h, pad_w, groups};
    cudnnHandle_t handle = dnn();
    if (!handle) return NULL;
    if (ready) {
        int same = 1;
        for (int i = 0; i < 10; i++) same &= key[i] == plan.key[i];
        if (same) return &plan;
    }
    if (!plan.x && (cudnnCreateTensorDescriptor(&plan.x) || cudnnCreateTensorDescriptor(&plan.y) ||
                    cudnnCreateFilterDescriptor(&plan.w) || cudnnCreateConvolutionDescriptor(&plan.conv)))
        return NULL;
    ready = 0;
    int on, oc, oh, ow;
    if (cudnnSetTensor4dDescriptor(plan.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w) ||
        cudnnSetFilter4dDescriptor(plan.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c / groups, r, s) ||
        cudnnSetConvolution2dDescriptor(plan.conv, pad_h, pad_w, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ||
        cudnnSetConvolutionGroupCount(plan.conv, groups) ||
        cudnnSetConvolutionMathType(plan.conv, CUDNN_FMA_MATH) ||
        cudnnGetConvolution2dForwardOutputDim(plan.conv, plan.x, plan.w, &on, &oc, &oh, &ow) ||
        cudnnSetTensor4dDescriptor(plan.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow))
        return NULL;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n_perf = 0, found = 0;
    if (cudnnFindConvolutionForwardAlgorithm(handle, plan.x, plan.w, plan.conv, plan.y,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n_perf, perf))
        return NULL;
    for (int i = 0; i < n_perf && !found; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].mathType != CUDNN_FMA_MATH) continue;
        plan.algo = perf[i].algo;
        found = 1;
    }
    if (!found) return NULL;
    size_t need = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x, plan.w, plan.conv, plan.y, plan.algo, &need)) return NULL;
    if (need > plan.ws_size) {
        if (plan.ws) cudaFree(plan.ws);
        plan.ws = NULL;
        plan.ws_size = 0;
        if (cudaMalloc(&plan.ws, need) != cudaSuccess) return NULL;
        plan.ws_size = need;
    }
    for (int i = 0; i < 10; i++) plan.key[i] = key[i];
    ready = 1;
    return &plan;
}

static int conv_run(conv_plan *p, const float *x, const float *w, float *y)
{
    const float one = 1.0f, zero = 0.0f;
    return cudnnConvolutionForward(dnn(), &one, p->x, x, p->w, w, p->conv, p->algo, p->ws, p->ws_size, &zero,
                                   p->y, y) == CUDNN_STATUS_SUCCESS ? 0 : -1;
}

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    int n = (int)args->dims[0], c = (int)args->dims[1], k = (int)args->dims[2];
    int h = (int)args->dims[3], w = (int)args->dims[4], r = (int)args->dims[5];
    conv_plan *p = conv_prepare(n, c, h, w, k, r, r, r / 2, r / 2, 1);
    if (!p) return -1;
    return conv_run(p, (const float *)args->inputs[0], (const float *)args->inputs[1], (float *)args->outputs[0]);
}
