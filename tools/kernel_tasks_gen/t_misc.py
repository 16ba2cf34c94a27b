"""t_misc.py — task tables: scans, losses, fused GEMM chains (cuBLAS GEMM + separate elementwise kernels)."""
from common import HEAD, SM, LAUNCH_OK, BLOCK_REDUCE, WORKSPACE, MEAN_REDUCE, CUBLAS

NORMAL = dict(kind="normal", mean=0.0, std=1.0)
BLAS_HEAD = HEAD.replace('#include <cuda_runtime.h>\n', '#include <cublas_v2.h>\n#include <cuda_runtime.h>\n')

def scan_cu(name, doc, op, ident):
    return f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: one 512-thread block per row. The row is walked in chunks of 512 elements, one per
 * thread (coalesced); each chunk is scanned with warp shuffles (Hillis-Steele within a warp),
 * the warp totals are scanned by the first warp through shared memory, and a running carry
 * joins the chunks. */
{HEAD}{LAUNCH_OK}
#define SCAN_THREADS 512

__device__ __forceinline__ float combine(float a, float b) {{ return {op}; }}

__global__ void {name}_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t cols)
{{
    __shared__ float warp_total[SCAN_THREADS / 32];
    __shared__ float carry_s;
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float carry = {ident};
    for (int64_t base = 0; base < cols; base += SCAN_THREADS) {{
        int64_t c = base + threadIdx.x;
        float v = c < cols ? xr[c] : {ident};
        for (int o = 1; o < 32; o <<= 1) {{
            float u = __shfl_up_sync(0xffffffffu, v, o);
            if (lane >= o) v = combine(u, v);
        }}
        if (lane == 31) warp_total[warp] = v;
        __syncthreads();
        if (warp == 0) {{
            float t = lane < SCAN_THREADS / 32 ? warp_total[lane] : {ident};
            for (int o = 1; o < 32; o <<= 1) {{
                float u = __shfl_up_sync(0xffffffffu, t, o);
                if (lane >= o) t = combine(u, t);
            }}
            if (lane < SCAN_THREADS / 32) warp_total[lane] = t;
        }}
        __syncthreads();
        if (warp > 0) v = combine(warp_total[warp - 1], v);
        v = combine(carry, v);
        if (c < cols) yr[c] = v;
        if (threadIdx.x == SCAN_THREADS - 1) carry_s = v;
        __syncthreads();
        carry = carry_s;
    }}
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t rows = args->dims[0], cols = args->dims[1];
    if (rows > INT32_MAX) return -1;
    if (rows == 0) return 0;
    {name}_kernel<<<(unsigned)rows, SCAN_THREADS>>>((const float *)args->inputs[0], (float *)args->outputs[0], cols);
    return launch_status();
}}
'''

def loss_cu(name, doc, term):
    return f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: deterministic two-launch mean: per-block partial sums over a grid-stride range (at
 * most 1024 blocks, warp-shuffle block reduction), then one block sums the partials. */
{HEAD}{LAUNCH_OK}{BLOCK_REDUCE}{WORKSPACE}
__device__ __forceinline__ float term(float p, float t) {{ return {term}; }}
{MEAN_REDUCE}
extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t rows = args->dims[0], n = rows * args->dims[1];
    float *partial = workspace(PARTIAL_BLOCKS_MAX);
    if (!partial) return -1;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > PARTIAL_BLOCKS_MAX) blocks = PARTIAL_BLOCKS_MAX;
    if (blocks < 1) blocks = 1;
    partial_sum_kernel<<<(int)blocks, threads>>>((const float *)args->inputs[0], (const float *)args->inputs[1], n, partial);
    finish_sum_kernel<<<1, 1024>>>(partial, (int)blocks, {{SCALE}}, (float *)args->outputs[0]);
    return launch_status();
}}
'''

CROSS_ENTROPY = f'''/* reference.cu — cross_entropy: mean over rows of -log softmax(logits[r])[target[r]], float32
 * logits [rows, classes], int32 targets in [0, classes).
 *
 * Baseline: one 256-thread block per row computes max and sum of exponentials with warp-shuffle
 * block reductions and writes the row's loss to scratch; one block averages the losses
 * (deterministic). */
{HEAD}{LAUNCH_OK}{BLOCK_REDUCE}{WORKSPACE}
__global__ void row_loss_kernel(const float *__restrict__ logits, const int32_t *__restrict__ target,
                                float *__restrict__ loss, int64_t classes)
{{
    __shared__ float scratch[32];
    const float *xr = logits + (int64_t)blockIdx.x * classes;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) loss[blockIdx.x] = logf(s) + m - xr[target[blockIdx.x]];
}}

__global__ void mean_kernel(const float *__restrict__ v, int64_t n, float *__restrict__ out)
{{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += v[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) out[0] = acc / (float)n;
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t rows = args->dims[0], classes = args->dims[1];
    if (rows > INT32_MAX || rows < 1) return -1;
    float *loss = workspace((size_t)rows);
    if (!loss) return -1;
    row_loss_kernel<<<(unsigned)rows, 256>>>((const float *)args->inputs[0], (const int32_t *)args->inputs[1], loss, classes);
    mean_kernel<<<1, 1024>>>(loss, rows, (float *)args->outputs[0]);
    return launch_status();
}}
'''

# Fused GEMM chains: the honest baseline is what PyTorch runs, one library GEMM then separate
# elementwise kernels, each reading and writing the whole activation.
def fused_cu(name, doc, kernels, steps, need_tmp=False):
    return f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: what the PyTorch module runs: a cuBLAS fp32 GEMM (pedantic math, no TF32) for the
 * linear layer, then one separate grid-stride elementwise kernel per remaining op, each a full
 * pass over the [batch, out_features] activation, so fusing them can genuinely win. Linear:
 * y = x W^T (+ bias), x [batch, in_features], W [out_features, in_features]. */
{BLAS_HEAD}{SM}{LAUNCH_OK}{CUBLAS}{WORKSPACE if need_tmp else ""}
static int grid_for(int64_t n)
{{
    int64_t blocks = (n + 255) / 256, cap = (int64_t)sm_count() * 16;
    return (int)(blocks < 1 ? 1 : blocks < cap ? blocks : cap);
}}

#define FOR_EACH(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
{kernels}
extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int batch = (int)args->dims[0], in_f = (int)args->dims[1], out_f = (int)args->dims[2];
    int64_t n = (int64_t)batch * out_f;
    const float *x = (const float *)args->inputs[0], *w = (const float *)args->inputs[1];
    float *y = (float *)args->outputs[0];
    const float one = 1.0f;
    cublasHandle_t h = blas();
    if (!h) return -1;
    if (n == 0) return 0;
{steps}
    return launch_status();
}}
'''

GEMM = '''    const float zero = 0.0f;
    if (cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out_f, batch, in_f, &one, w, in_f, x, in_f, &zero, y, out_f)) return -1;'''
ADDMM = '''    bias_fill_kernel<<<grid_for(n), 256>>>((const float *)args->inputs[2], y, n, out_f);
    if (cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out_f, batch, in_f, &one, w, in_f, x, in_f, &one, y, out_f)) return -1;'''
K_BIAS_FILL = '''
/* torch.addmm: the output starts as the broadcast bias and the GEMM accumulates into it. */
__global__ void bias_fill_kernel(const float *__restrict__ b, float *__restrict__ y, int64_t n, int out_f)
{
    FOR_EACH(i, n) y[i] = b[i % out_f];
}
'''
K_BIAS_ADD = '''
__global__ void bias_add_kernel(const float *__restrict__ b, float *__restrict__ y, int64_t n, int out_f)
{
    FOR_EACH(i, n) y[i] += b[i % out_f];
}
'''
K_RELU = '''
__global__ void relu_kernel(float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}
'''
K_SCALE = '''
__global__ void scale_kernel(float *__restrict__ y, int64_t n, float s)
{
    FOR_EACH(i, n) y[i] *= s;
}
'''
K_COPY = '''
__global__ void copy_kernel(const float *__restrict__ a, float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] = a[i];
}
'''
K_ADD = '''
__global__ void add_kernel(const float *__restrict__ a, float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] += a[i];
}
'''
K_SIGMOID = '''
__global__ void sigmoid_kernel(float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] = 1.0f / (1.0f + expf(-y[i]));
}
'''
K_SIGMOID_TO = '''
__global__ void sigmoid_to_kernel(const float *__restrict__ a, float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] = 1.0f / (1.0f + expf(-a[i]));
}
'''
K_GELU = '''
__global__ void gelu_kernel(float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] = 0.5f * y[i] * erfcf(-y[i] * 0.70710678118654752f);
}
'''
K_DIV = '''
__global__ void divide_kernel(float *__restrict__ y, int64_t n, float d)
{
    FOR_EACH(i, n) y[i] = y[i] / d;
}
'''
K_MUL_SIGMOID = '''
/* x * sigmoid(x): torch.sigmoid(x) and the product are two launches in the module. */
__global__ void mul_kernel(const float *__restrict__ a, float *__restrict__ y, int64_t n)
{
    FOR_EACH(i, n) y[i] *= a[i];
}
'''
K_LSE = BLOCK_REDUCE + '''
/* logsumexp over each row: one 256-thread block per row, warp-shuffle reductions. */
__global__ void logsumexp_rows_kernel(const float *__restrict__ a, float *__restrict__ out, int64_t cols)
{
    __shared__ float scratch[32];
    const float *ar = a + (int64_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, ar[c]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(ar[c] - m);
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) out[blockIdx.x] = m + logf(s);
}
'''

LIN_DIMS = [("batch", 4096), ("in_features", 2048), ("out_features", 2048)]
LIN_TRIALS = [[1, 1, 1], [3, 5, 7], [33, 17, 65], [129, 1000, 31], [2, 4097, 3]]

def lin_inputs(bias=True):
    ins = [dict(name="x", dtype="f32", shape=["batch", "in_features"], dist=NORMAL, adversarial=[]),
           dict(name="weight", dtype="f32", shape=["out_features", "in_features"], dist=dict(kind="uniform", low=-0.03, high=0.03), adversarial=[])]
    if bias:
        ins.append(dict(name="bias", dtype="f32", shape=["out_features"], dist=dict(kind="uniform", low=-0.5, high=0.5), adversarial=[]))
    return ins

def fused(name, desc, math, kb, kernels, steps, doc, bias=True, need_tmp=False, out_shape=("batch", "out_features")):
    return dict(name=name, category="fused", description=desc, math=math, kernelbench=kb,
                dims=LIN_DIMS, trial_dims=LIN_TRIALS, inputs=lin_inputs(bias),
                outputs=[dict(name="y", dtype="f32", shape=list(out_shape))],
                tolerance=dict(atol=1e-4, rtol=1e-5), forbid=["streams", "graphs", "library", "threads"], library=["cublas"],
                cu=fused_cu(name, doc, kernels, steps, need_tmp),
                baseline="cuBLAS fp32 GEMM, then one separate elementwise kernel per op (as PyTorch runs it)")

def tasks():
    t = []
    t.append(dict(name="cumsum", category="scan", description="Inclusive prefix sum along the last dimension of a float32 [rows, cols] matrix.",
                  math="y[r, c] = sum_{k <= c} x[r, k]", kernelbench="level1/89_cumsum.py",
                  dims=[("rows", 4096), ("cols", 8192)], trial_dims=[[1, 1], [3, 7], [5, 513], [7, 1000], [2, 33333]],
                  inputs=[dict(name="x", dtype="f32", shape=["rows", "cols"], dist=NORMAL, adversarial=["signed_zero"])],
                  outputs=[dict(name="y", dtype="f32", shape=["rows", "cols"])],
                  tolerance=dict(atol=2e-5, rtol=1e-5), forbid=["streams", "graphs", "threads"], library=[],
                  cu=scan_cu("cumsum", "inclusive prefix sum along each row, float32.", "a + b", "0.0f"),
                  baseline="block per row, warp-shuffle scan per 512-element chunk with a running carry"))
    t.append(dict(name="cumprod", category="scan", description="Inclusive prefix product along the last dimension of a float32 [rows, cols] matrix (values near 1 so that products stay in range).",
                  math="y[r, c] = prod_{k <= c} x[r, k]", kernelbench="level1/90_cumprod.py",
                  dims=[("rows", 4096), ("cols", 8192)], trial_dims=[[1, 1], [3, 7], [5, 513], [7, 1000], [2, 33333]],
                  inputs=[dict(name="x", dtype="f32", shape=["rows", "cols"], dist=dict(kind="uniform", low=0.99, high=1.01), adversarial=[])],
                  outputs=[dict(name="y", dtype="f32", shape=["rows", "cols"])],
                  tolerance=dict(atol=1e-4, rtol=1e-4), forbid=["streams", "graphs", "threads"], library=[],
                  cu=scan_cu("cumprod", "inclusive prefix product along each row, float32.", "a * b", "1.0f"),
                  baseline="block per row, warp-shuffle scan per 512-element chunk with a running carry"))
    losses = [
        ("mse_loss", "Mean squared error between two float32 [rows, cols] matrices, a scalar.", "y = mean((p - t)^2)",
         "level1/94_MSELoss.py", "(p - t) * (p - t)", NORMAL, NORMAL),
        ("hinge_loss", "Mean hinge loss of predictions p against targets t (float32 [rows, cols]), a scalar.", "y = mean(max(0, 1 - p * t))",
         "level1/100_HingeLoss.py", "fmaxf(1.0f - p * t, 0.0f)", NORMAL, NORMAL),
        ("smooth_l1_loss", "Mean smooth L1 (Huber, beta 1) loss between two float32 [rows, cols] matrices, a scalar.",
         "d = p - t; y = mean(0.5 * d^2 if |d| < 1 else |d| - 0.5)", "level1/96_HuberLoss.py",
         "fabsf(p - t) < 1.0f ? 0.5f * (p - t) * (p - t) : fabsf(p - t) - 0.5f", NORMAL, NORMAL),
        ("kl_div_loss", "KL divergence as torch.nn.functional.kl_div(log(p), t, reduction='batchmean'), p and t positive float32 [rows, cols] (not normalized), a scalar.",
         "y = (1/rows) * sum_{r, c} t[r, c] * (log(t[r, c]) - log(p[r, c]))", "level1/98_KLDivLoss.py",
         "t * (logf(t) - logf(p))", dict(kind="uniform", low=0.001, high=1.0), dict(kind="uniform", low=0.001, high=1.0)),
    ]
    for name, desc, math, kb, term, dp, dt in losses:
        scale = "1.0f / (float)rows" if name == "kl_div_loss" else "1.0f / (float)n"
        t.append(dict(name=name, category="loss", description=desc, math=math, kernelbench=kb,
                      dims=[("rows", 4096), ("cols", 8192)], trial_dims=[[1, 1], [3, 7], [5, 1000], [1, 33333], [129, 257]],
                      inputs=[dict(name="p", dtype="f32", shape=["rows", "cols"], dist=dp, adversarial=[]),
                              dict(name="t", dtype="f32", shape=["rows", "cols"], dist=dt, adversarial=[])],
                      outputs=[dict(name="y", dtype="f32", shape=[])],
                      tolerance=dict(atol=1e-5, rtol=1e-5), forbid=["streams", "graphs", "threads"], library=[],
                      cu=loss_cu(name, desc[0].lower() + desc[1:], term).replace("{SCALE}", scale),
                      baseline="block partial sums (warp shuffle) + one finishing block"))
    t.append(dict(name="cross_entropy", category="loss",
                  description="Cross-entropy loss (as torch.nn.functional.cross_entropy, mean reduction) of float32 logits [rows, classes] against int32 class indices [rows] (each in [0, classes)), a scalar.",
                  math="y = (1/rows) * sum_r (log(sum_c exp(x[r, c])) - x[r, target[r]])", kernelbench="level1/95_CrossEntropyLoss.py",
                  dims=[("rows", 8192), ("classes", 4096)], trial_dims=[[1, 1000], [3, 1001], [7, 4097], [1, 33333], [129, 1025]],
                  inputs=[dict(name="logits", dtype="f32", shape=["rows", "classes"], dist=dict(kind="normal", mean=0.0, std=3.0), adversarial=[]),
                          dict(name="target", dtype="i32", shape=["rows"], dist=dict(kind="uniform", low=0, high=999), adversarial=[])],
                  outputs=[dict(name="y", dtype="f32", shape=[])],
                  tolerance=dict(atol=1e-5, rtol=1e-5), forbid=["streams", "graphs", "threads"], library=[],
                  cu=CROSS_ENTROPY, baseline="block per row logsumexp, one block for the mean"))
    t.append(fused("gemm_bias_relu", "Linear layer without bias, then a bias add and ReLU, float32: y = relu(x W^T + b).",
                   "y[i, j] = max(0, sum_k x[i, k] W[j, k] + b[j])", "level2/76_Gemm_Add_ReLU.py",
                   K_BIAS_ADD + K_RELU,
                   GEMM + "\n    bias_add_kernel<<<grid_for(n), 256>>>((const float *)args->inputs[2], y, n, out_f);\n    relu_kernel<<<grid_for(n), 256>>>(y, n);",
                   "GEMM, bias add and ReLU: y = relu(x W^T + b)."))
    t.append(fused("gemm_scale_residual", "Linear layer with bias, then y = z * 0.5 + z where z is the linear output (scale and residual add of the same tensor), float32.",
                   "z = x W^T + b; y = z * 0.5 + z", "level2/40_Matmul_Scaling_ResidualAdd.py",
                   K_BIAS_FILL + K_COPY + K_SCALE + K_ADD,
                   ADDMM + "\n    float *orig = workspace((size_t)n);\n    if (!orig) return -1;\n    copy_kernel<<<grid_for(n), 256>>>(y, orig, n);\n    scale_kernel<<<grid_for(n), 256>>>(y, n, 0.5f);\n    add_kernel<<<grid_for(n), 256>>>(orig, y, n);",
                   "linear (addmm), then z.clone(), z * 0.5, + clone.", need_tmp=True))
    t.append(fused("gemm_sigmoid_scale_residual", "Linear layer with bias, then y = sigmoid(z) * 2.0 + z where z is the linear output, float32.",
                   "z = x W^T + b; y = sigmoid(z) * 2.0 + z", "level2/70_Gemm_Sigmoid_Scaling_ResidualAdd.py",
                   K_BIAS_FILL + K_SIGMOID_TO + K_SCALE + K_ADD,
                   ADDMM + "\n    float *s = workspace((size_t)n);\n    if (!s) return -1;\n    sigmoid_to_kernel<<<grid_for(n), 256>>>(y, s, n);\n    scale_kernel<<<grid_for(n), 256>>>(s, n, 2.0f);\n    add_kernel<<<grid_for(n), 256>>>(s, y, n);",
                   "linear (addmm), sigmoid into a new tensor, scale, residual add.", need_tmp=True))
    t.append(fused("gemm_divide_gelu", "Linear layer with bias, division by 10, then exact (erf) GELU, float32.",
                   "z = (x W^T + b) / 10; y = 0.5 * z * (1 + erf(z / sqrt(2)))", "level2/86_Matmul_Divide_GELU.py",
                   K_BIAS_FILL + K_DIV + K_GELU,
                   ADDMM + "\n    divide_kernel<<<grid_for(n), 256>>>(y, n, 10.0f);\n    gelu_kernel<<<grid_for(n), 256>>>(y, n);",
                   "linear (addmm), divide, GELU."))
    t.append(fused("gemm_swish_scale", "Linear layer with bias, swish (z * sigmoid(z)), then scaling by 2, float32.",
                   "z = x W^T + b; y = z * sigmoid(z) * 2.0", "level2/59_Matmul_Swish_Scaling.py",
                   K_BIAS_FILL + K_SIGMOID_TO + K_MUL_SIGMOID + K_SCALE,
                   ADDMM + "\n    float *s = workspace((size_t)n);\n    if (!s) return -1;\n    sigmoid_to_kernel<<<grid_for(n), 256>>>(y, s, n);\n    mul_kernel<<<grid_for(n), 256>>>(s, y, n);\n    scale_kernel<<<grid_for(n), 256>>>(y, n, 2.0f);",
                   "linear (addmm), sigmoid, multiply, scale.", need_tmp=True))
    t.append(fused("gemm_sigmoid_logsumexp", "Linear layer with bias, sigmoid, then logsumexp over the features of each row, float32: one value per row.",
                   "z = sigmoid(x W^T + b); y[i] = log(sum_j exp(z[i, j]))", "level2/45_Gemm_Sigmoid_LogSumExp.py",
                   K_BIAS_FILL + K_SIGMOID + K_LSE,
                   "    float *z = workspace((size_t)n);\n    if (!z) return -1;\n    bias_fill_kernel<<<grid_for(n), 256>>>((const float *)args->inputs[2], z, n, out_f);\n    if (cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out_f, batch, in_f, &one, w, in_f, x, in_f, &one, z, out_f)) return -1;\n    sigmoid_kernel<<<grid_for(n), 256>>>(z, n);\n    logsumexp_rows_kernel<<<batch, 256>>>(z, y, out_f);",
                   "linear (addmm), sigmoid, row logsumexp.", need_tmp=True, out_shape=("batch",)))
    return t
