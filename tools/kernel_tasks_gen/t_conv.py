"""t_conv.py — task tables: convolutions (cuDNN, FMA math, measured algorithm), conv+bn+relu, pooling."""
from common import HEAD, SM, LAUNCH_OK

DNN_HEAD = HEAD.replace('#include <cuda_runtime.h>\n', '#include <cuda_runtime.h>\n#include <cudnn.h>\n')
NORMAL = dict(kind="normal", mean=0.0, std=1.0)

CUDNN_CONV = '''
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
'''

def conv_cu(name, doc, body, extra=""):
    return f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: cuDNN (what torch.nn.functional.conv* calls), fp32 with FMA math only, the
 * fastest algorithm cuDNN measures for the shape, plan cached per shape. */
{DNN_HEAD}{LAUNCH_OK if extra else ""}{CUDNN_CONV}{extra}
extern "C" int rl_kernel(const rl_kernel_args *args)
{{
{body}
}}
'''

CONV2D_BODY = '''    int n = (int)args->dims[0], c = (int)args->dims[1], k = (int)args->dims[2];
    int h = (int)args->dims[3], w = (int)args->dims[4], r = (int)args->dims[5];
    conv_plan *p = conv_prepare(n, c, h, w, k, r, r, r / 2, r / 2, 1);
    if (!p) return -1;
    return conv_run(p, (const float *)args->inputs[0], (const float *)args->inputs[1], (float *)args->outputs[0]);'''

DEPTHWISE_BODY = '''    int n = (int)args->dims[0], c = (int)args->dims[1];
    int h = (int)args->dims[2], w = (int)args->dims[3], r = (int)args->dims[4];
    conv_plan *p = conv_prepare(n, c, h, w, c, r, r, r / 2, r / 2, c);
    if (!p) return -1;
    return conv_run(p, (const float *)args->inputs[0], (const float *)args->inputs[1], (float *)args->outputs[0]);'''

CONV1D_BODY = '''    int n = (int)args->dims[0], c = (int)args->dims[1], k = (int)args->dims[2];
    int length = (int)args->dims[3], r = (int)args->dims[4];
    conv_plan *p = conv_prepare(n, c, 1, length, k, 1, r, 0, r / 2, 1);
    if (!p) return -1;
    return conv_run(p, (const float *)args->inputs[0], (const float *)args->inputs[1], (float *)args->outputs[0]);'''

BN_RELU = '''
/* Separate kernels, as PyTorch in eval mode runs them: BatchNorm (running statistics), then
 * ReLU. One block per (image, channel) plane. */
__global__ void batchnorm_kernel(float *__restrict__ y, const float *__restrict__ mean,
                                 const float *__restrict__ var, const float *__restrict__ weight,
                                 const float *__restrict__ bias, int64_t channels, int64_t plane)
{
    int64_t c = blockIdx.x % channels;
    float mu = mean[c], inv_std = 1.0f / sqrtf(var[c] + 1e-5f), g = weight[c], b = bias[c];
    float *p = y + (int64_t)blockIdx.x * plane;
    for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) p[i] = (p[i] - mu) * inv_std * g + b;
}

__global__ void relu_kernel(float *__restrict__ y, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}
'''

CONV_BN_RELU_BODY = '''    int n = (int)args->dims[0], c = (int)args->dims[1], k = (int)args->dims[2];
    int h = (int)args->dims[3], w = (int)args->dims[4], r = (int)args->dims[5];
    float *y = (float *)args->outputs[0];
    conv_plan *p = conv_prepare(n, c, h, w, k, r, r, r / 2, r / 2, 1);
    if (!p) return -1;
    if (conv_run(p, (const float *)args->inputs[0], (const float *)args->inputs[1], y)) return -1;
    int64_t planes = (int64_t)n * k, total = planes * h * w;
    batchnorm_kernel<<<(unsigned)planes, 256>>>(y, (const float *)args->inputs[2], (const float *)args->inputs[3],
                                                (const float *)args->inputs[4], (const float *)args->inputs[5], k, (int64_t)h * w);
    int64_t blocks = (total + 255) / 256;
    relu_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256>>>(y, total);
    return launch_status();'''

POOL = lambda name, doc, body, odims: f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: one thread per output element, consecutive threads on consecutive output columns
 * (coalesced stores, neighbouring loads), grid-stride. */
{HEAD}{SM}{LAUNCH_OK}
__global__ void {name}_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t planes, int64_t h, int64_t w,
                              int64_t oh, int64_t ow)
{{
    int64_t total = planes * oh * ow, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {{
        int64_t ox = o % ow, oy = (o / ow) % oh, plane = o / (ow * oh);
        const float *xp = x + plane * h * w;
{body}
    }}
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t planes = args->dims[0] * args->dims[1], h = args->dims[2], w = args->dims[3];
    int64_t oh = {odims[0]}, ow = {odims[1]};
    int64_t total = planes * oh * ow;
    if (total == 0) return 0;
    int64_t blocks = (total + 255) / 256, cap = (int64_t)sm_count() * 16;
    {name}_kernel<<<(int)(blocks < cap ? blocks : cap), 256>>>((const float *)args->inputs[0], (float *)args->outputs[0], planes, h, w, oh, ow);
    return launch_status();
}}
'''

MAXPOOL_BODY = '''        float m = -INFINITY;
        for (int64_t dy = 0; dy < 3; dy++) {
            int64_t iy = oy * 2 - 1 + dy;
            if (iy < 0 || iy >= h) continue;
            for (int64_t dx = 0; dx < 3; dx++) {
                int64_t ix = ox * 2 - 1 + dx;
                if (ix < 0 || ix >= w) continue;
                float v = xp[iy * w + ix];
                m = v > m ? v : m;
            }
        }
        y[o] = m;'''

AVGPOOL_BODY = '''        float s = 0.0f;
        for (int64_t dy = 0; dy < 3; dy++) {
            int64_t iy = oy - 1 + dy;
            if (iy < 0 || iy >= h) continue;
            for (int64_t dx = 0; dx < 3; dx++) {
                int64_t ix = ox - 1 + dx;
                if (ix < 0 || ix >= w) continue;
                s += xp[iy * w + ix];
            }
        }
        y[o] = s / 9.0f;'''

def f32(name, shape, dist=NORMAL, adv=()):
    return dict(name=name, dtype="f32", shape=shape, dist=dist, adversarial=list(adv))

def tasks():
    t = []
    # atol is relative to the output's RMS: 2e-4 admits Winograd/FFT-class rounding (cuDNN's
    # fastest measured algorithm reaches 7e-5) and still fails TF32 (about 5e-4 RMS, more at the max).
    conv_tol = dict(atol=2e-4, rtol=1e-5)
    t.append(dict(name="conv2d", category="convolution",
                  description="2D convolution (cross-correlation, as torch.nn.Conv2d without bias) of a float32 NCHW input with a square odd kernel, stride 1, 'same' zero padding of kernel/2 on each side.",
                  math="y[n, k, i, j] = sum_{c, u, v} x[n, c, i + u - kernel/2, j + v - kernel/2] * w[k, c, u, v]  (x is zero outside the image)",
                  kernelbench="level1/63_conv_standard_2D__square_input__square_kernel.py",
                  dims=[("batch", 16), ("in_channels", 64), ("out_channels", 128), ("height", 128), ("width", 128), ("kernel", 3)],
                  trial_dims=[[1, 1, 1, 1, 1, 1], [2, 3, 5, 7, 9, 3], [1, 16, 8, 33, 17, 5], [3, 5, 7, 31, 65, 3]],
                  inputs=[f32("x", ["batch", "in_channels", "height", "width"]), f32("w", ["out_channels", "in_channels", "kernel", "kernel"], dict(kind="normal", mean=0.0, std=0.1))],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "out_channels", "height", "width"])],
                  tolerance=conv_tol, forbid=["streams", "graphs", "library", "threads"], library=["cudnn"],
                  cu=conv_cu("conv2d", "2D convolution, NCHW fp32, stride 1, same padding.", CONV2D_BODY),
                  baseline="cuDNN convolution forward, FMA math, fastest measured algorithm"))
    t.append(dict(name="conv2d_depthwise", category="convolution",
                  description="Depthwise 2D convolution (groups = channels, one kernel per channel, no bias) of a float32 NCHW input with a square odd kernel, stride 1, 'same' zero padding of kernel/2.",
                  math="y[n, c, i, j] = sum_{u, v} x[n, c, i + u - kernel/2, j + v - kernel/2] * w[c, u, v]  (x is zero outside the image)",
                  kernelbench="level1/82_conv_depthwise_2D_square_input_square_kernel.py",
                  dims=[("batch", 16), ("channels", 64), ("height", 256), ("width", 256), ("kernel", 3)],
                  trial_dims=[[1, 1, 1, 1, 1], [2, 3, 7, 9, 3], [1, 5, 33, 17, 5], [3, 7, 31, 65, 7]],
                  inputs=[f32("x", ["batch", "channels", "height", "width"]), f32("w", ["channels", "kernel", "kernel"], dict(kind="normal", mean=0.0, std=0.3))],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "channels", "height", "width"])],
                  tolerance=dict(atol=1e-5, rtol=1e-5), forbid=["streams", "graphs", "library", "threads"], library=["cudnn"],
                  cu=conv_cu("conv2d_depthwise", "depthwise 2D convolution, NCHW fp32, stride 1, same padding.", DEPTHWISE_BODY),
                  baseline="cuDNN grouped convolution (groups = channels), fastest measured algorithm"))
    t.append(dict(name="conv1d", category="convolution",
                  description="1D convolution (as torch.nn.Conv1d without bias) of a float32 [batch, in_channels, length] input with an odd kernel, stride 1, 'same' zero padding of kernel/2.",
                  math="y[n, k, i] = sum_{c, u} x[n, c, i + u - kernel/2] * w[k, c, u]  (x is zero outside)",
                  kernelbench="level1/67_conv_standard_1D.py",
                  dims=[("batch", 16), ("in_channels", 64), ("out_channels", 128), ("length", 16384), ("kernel", 3)],
                  trial_dims=[[1, 1, 1, 1, 1], [2, 3, 5, 7, 3], [1, 16, 8, 1001, 5], [3, 5, 7, 33, 7]],
                  inputs=[f32("x", ["batch", "in_channels", "length"]), f32("w", ["out_channels", "in_channels", "kernel"], dict(kind="normal", mean=0.0, std=0.1))],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "out_channels", "length"])],
                  tolerance=conv_tol, forbid=["streams", "graphs", "library", "threads"], library=["cudnn"],
                  cu=conv_cu("conv1d", "1D convolution as a cuDNN 2D convolution of height 1, fp32, stride 1, same padding.", CONV1D_BODY),
                  baseline="cuDNN convolution forward (height-1 2D), FMA math, fastest measured algorithm"))
    t.append(dict(name="conv2d_bn_relu", category="fused",
                  description="Conv2d (no bias, square odd kernel, stride 1, 'same' padding) followed by BatchNorm2d in inference mode (running statistics, eps 1e-5) and ReLU, float32 NCHW: the eval-mode conv block of a CNN.",
                  math="z = conv2d(x, w) as in the conv2d task; y[n, k, i, j] = max(0, (z[n, k, i, j] - mean[k]) / sqrt(var[k] + 1e-5) * gamma[k] + beta[k])",
                  kernelbench="",
                  dims=[("batch", 16), ("in_channels", 64), ("out_channels", 128), ("height", 128), ("width", 128), ("kernel", 3)],
                  trial_dims=[[1, 1, 1, 1, 1, 1], [2, 3, 5, 7, 9, 3], [1, 16, 8, 33, 17, 5]],
                  inputs=[f32("x", ["batch", "in_channels", "height", "width"]), f32("w", ["out_channels", "in_channels", "kernel", "kernel"], dict(kind="normal", mean=0.0, std=0.1)),
                          f32("running_mean", ["out_channels"], dict(kind="normal", mean=0.0, std=0.5)),
                          f32("running_var", ["out_channels"], dict(kind="uniform", low=0.5, high=4.0)),
                          f32("gamma", ["out_channels"], dict(kind="normal", mean=1.0, std=0.3)),
                          f32("beta", ["out_channels"], dict(kind="normal", mean=0.0, std=0.5))],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "out_channels", "height", "width"])],
                  tolerance=conv_tol, forbid=["streams", "graphs", "library", "threads"], library=["cudnn"],
                  cu=conv_cu("conv2d_bn_relu", "conv2d + BatchNorm (inference) + ReLU, NCHW fp32. The conv is cuDNN; BatchNorm and ReLU\n * are separate elementwise kernels, as an eval-mode PyTorch module runs them, so fusion can win.", CONV_BN_RELU_BODY, BN_RELU),
                  baseline="cuDNN conv, then a BatchNorm kernel, then a ReLU kernel"))
    t.append(dict(name="maxpool2d", category="pooling",
                  description="2D max pooling of a float32 NCHW tensor, window 3x3, stride 2, padding 1 (padding never wins), as torch.nn.MaxPool2d(3, 2, 1). out_height = (height - 1) / 2 + 1 and out_width = (width - 1) / 2 + 1 (integer division) are given as dims too.",
                  math="y[n, c, i, j] = max over u, v in 0..2 with 0 <= 2i - 1 + u < height, 0 <= 2j - 1 + v < width of x[n, c, 2i - 1 + u, 2j - 1 + v]",
                  kernelbench="level1/42_Max_Pooling_2D.py",
                  dims=[("batch", 16), ("channels", 64), ("height", 256), ("width", 256), ("out_height", 128), ("out_width", 128)],
                  trial_dims=[[1, 1, 1, 1, 1, 1], [2, 3, 5, 7, 3, 4], [1, 5, 33, 64, 17, 32], [3, 2, 100, 31, 50, 16]],
                  inputs=[f32("x", ["batch", "channels", "height", "width"], adv=["signed_zero", "inf", "huge"])],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "channels", "out_height", "out_width"])],
                  tolerance=dict(atol=0.0, rtol=0.0), forbid=["streams", "graphs", "threads"], library=[],
                  cu=POOL("maxpool2d", "3x3 max pooling, stride 2, padding 1, NCHW fp32.", MAXPOOL_BODY, ("args->dims[4]", "args->dims[5]")),
                  baseline="one thread per output, coalesced along width"))
    t.append(dict(name="avgpool2d", category="pooling",
                  description="2D average pooling of a float32 NCHW tensor, window 3x3, stride 1, padding 1, padded zeros counted (count_include_pad, the torch default: always divide by 9), as torch.nn.AvgPool2d(3, 1, 1). The output has the input's size.",
                  math="y[n, c, i, j] = (1/9) * sum over u, v in -1..1 of x[n, c, i + u, j + v]  (x is zero outside the image)",
                  kernelbench="level1/45_Average_Pooling_2D.py",
                  dims=[("batch", 32), ("channels", 64), ("height", 128), ("width", 128)],
                  trial_dims=[[1, 1, 1, 1], [2, 3, 5, 7], [1, 5, 33, 64], [3, 2, 100, 31]],
                  inputs=[f32("x", ["batch", "channels", "height", "width"], adv=["signed_zero"])],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "channels", "height", "width"])],
                  tolerance=dict(atol=1e-5, rtol=1e-5), forbid=["streams", "graphs", "threads"], library=[],
                  cu=POOL("avgpool2d", "3x3 average pooling, stride 1, padding 1, count_include_pad, NCHW fp32.", AVGPOOL_BODY, ("h", "w")),
                  baseline="one thread per output, coalesced along width"))
    return t
