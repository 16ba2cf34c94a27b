"""t_reduce.py — task tables: reductions over a dim, arg-reductions, row ops (softmax family, norms), frobenius, batchnorm."""
from common import HEAD, SM, LAUNCH_OK, BLOCK_REDUCE, WORKSPACE
from t_softmax import SOFTMAX_CU, LOG_SOFTMAX_CU

MID_DIMS = [("batch", 64), ("reduce", 512), ("inner", 1024)]
MID_TRIALS = [[1, 1, 1], [2, 3, 5], [3, 1000, 7], [5, 17, 1023], [1, 4097, 33]]

def mid_reduce_cu(name, desc, init, update, finish, merge):
    return f'''/* reference.cu — {name}: {desc} of a float32 [batch, reduce, inner] tensor over its middle
 * dimension, giving [batch, inner].
 *
 * Baseline: a 32 x 8 thread block covers 32 consecutive inner positions (coalesced 128-byte
 * rows) and splits the reduced dimension over its 8 thread rows; the 8 partial results are
 * combined in shared memory. One block per (32 inner positions, batch). */
{HEAD}{LAUNCH_OK}
#define TILE_X 32
#define TILE_Y 8

__global__ void {name}_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n_reduce, int64_t inner)
{{
    __shared__ float part[TILE_Y][TILE_X + 1];
    int64_t i = (int64_t)blockIdx.x * TILE_X + threadIdx.x;
    int64_t b = blockIdx.y;
    float acc = {init};
    if (i < inner) {{
        const float *p = x + b * n_reduce * inner + i;
#pragma unroll 4
        for (int64_t r = threadIdx.y; r < n_reduce; r += TILE_Y) {{
            float v = p[r * inner];
            {update}
        }}
    }}
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {{
        acc = part[0][threadIdx.x];
        for (int k = 1; k < TILE_Y; k++) {{
            float v = part[k][threadIdx.x];
            {merge}
        }}
        y[b * inner + i] = {finish};
    }}
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t batch = args->dims[0], n_reduce = args->dims[1], inner = args->dims[2];
    if (batch > 65535) return -1;
    dim3 block(TILE_X, TILE_Y), grid((unsigned)((inner + TILE_X - 1) / TILE_X), (unsigned)batch);
    {name}_kernel<<<grid, block>>>((const float *)args->inputs[0], (float *)args->outputs[0], n_reduce, inner);
    return launch_status();
}}
'''

def arg_reduce_cu(name, desc, cmp):
    return f'''/* reference.cu — {name}: index of the {desc} along the middle dimension of a float32
 * [batch, reduce, inner] tensor, as int32 [batch, inner]; ties give the first index (as torch).
 *
 * Baseline: a 32 x 8 thread block covers 32 consecutive inner positions (coalesced) and splits
 * the reduced dimension over its 8 thread rows; the partial (value, index) pairs are merged in
 * shared memory, ties to the smaller index. */
{HEAD}{LAUNCH_OK}
#define TILE_X 32
#define TILE_Y 8

__global__ void {name}_kernel(const float *__restrict__ x, int32_t *__restrict__ y, int64_t n_reduce, int64_t inner)
{{
    __shared__ float part_v[TILE_Y][TILE_X + 1];
    __shared__ int part_i[TILE_Y][TILE_X + 1];
    int64_t i = (int64_t)blockIdx.x * TILE_X + threadIdx.x;
    int64_t b = blockIdx.y;
    float best = 0.0f;
    int best_i = -1;
    if (i < inner) {{
        const float *p = x + b * n_reduce * inner + i;
        for (int64_t r = threadIdx.y; r < n_reduce; r += TILE_Y) {{
            float v = p[r * inner];
            if (best_i < 0 || v {cmp} best) {{
                best = v;
                best_i = (int)r;
            }}
        }}
    }}
    part_v[threadIdx.y][threadIdx.x] = best;
    part_i[threadIdx.y][threadIdx.x] = best_i;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {{
        for (int k = 1; k < TILE_Y; k++) {{
            float v = part_v[k][threadIdx.x];
            int vi = part_i[k][threadIdx.x];
            if (vi >= 0 && (best_i < 0 || v {cmp} best || (v == best && vi < best_i))) {{
                best = v;
                best_i = vi;
            }}
        }}
        y[b * inner + i] = best_i;
    }}
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t batch = args->dims[0], n_reduce = args->dims[1], inner = args->dims[2];
    if (batch > 65535 || n_reduce > INT32_MAX) return -1;
    dim3 block(TILE_X, TILE_Y), grid((unsigned)((inner + TILE_X - 1) / TILE_X), (unsigned)batch);
    {name}_kernel<<<grid, block>>>((const float *)args->inputs[0], (int32_t *)args->outputs[0], n_reduce, inner);
    return launch_status();
}}
'''

def row_cu(name, doc, body, extra_params="", extra_args="", n_in=1):
    ins = "".join(f", const float *__restrict__ p{k}" for k in range(1, n_in))
    call_ins = "".join(f", (const float *)args->inputs[{k}]" for k in range(1, n_in))
    return f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: one 256-thread block per row; threads stride over the row (coalesced), block
 * reductions by warp shuffles plus one shared-memory step. The row is read again from L1/L2
 * for each pass. */
{HEAD}{LAUNCH_OK}{BLOCK_REDUCE}
__global__ void {name}_kernel(const float *__restrict__ x{ins}, float *__restrict__ y, int64_t cols{extra_params})
{{
    __shared__ float scratch[32];
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
{body}
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t rows = args->dims[0], cols = args->dims[1];
    if (rows > INT32_MAX) return -1;
    if (rows == 0) return 0;
    {name}_kernel<<<(unsigned)rows, 256>>>((const float *)args->inputs[0]{call_ins}, (float *)args->outputs[0], cols{extra_args});
    return launch_status();
}}
'''

LAYERNORM = '''    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    float mean0 = block_sum(s, scratch) / (float)cols;
    /* Second pass on x - mean0, with the mean corrected by the mean of those differences: the
     * rounding error of mean0 does not leak into the output (a constant row gives exactly bias). */
    float sd = 0.0f, q = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean0;
        sd += d;
        q += d * d;
    }
    float mean_d = block_sum(sd, scratch) / (float)cols;
    float mean = mean0 + mean_d;
    float var = fmaxf(block_sum(q, scratch) / (float)cols - mean_d * mean_d, 0.0f);
    float rstd = 1.0f / sqrtf(var + 1e-5f);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * rstd * p1[c] + p2[c];'''

RMSNORM = '''    float q = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) q += xr[c] * xr[c];
    float r = 1.0f / sqrtf(block_sum(q, scratch) / (float)cols + 1e-6f);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * r * p1[c];'''

L2NORM = '''    float q = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) q += xr[c] * xr[c];
    float norm = sqrtf(block_sum(q, scratch));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] / norm;'''

L1NORM = '''    float a = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) a += fabsf(xr[c]);
    float mean_abs = block_sum(a, scratch) / (float)cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] / mean_abs;'''

FROBENIUS = f'''/* reference.cu — frobenius_norm: x / ||x||_F for a float32 tensor (the norm over all elements).
 *
 * Baseline: three launches, deterministic: per-block partial sums of squares over a grid-stride
 * range (at most 1024 blocks), one block that sums the partials into the norm, then a
 * grid-stride float4 scaling pass. */
{HEAD}{SM}{LAUNCH_OK}{BLOCK_REDUCE}{WORKSPACE}
#define PARTIAL_BLOCKS_MAX 1024

__global__ void sumsq_partial_kernel(const float *__restrict__ x, int64_t n, float *__restrict__ partial)
{{
    __shared__ float scratch[32];
    float acc = 0.0f;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i] * x[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}}

__global__ void norm_finish_kernel(float *__restrict__ partial, int n_partial)
{{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[PARTIAL_BLOCKS_MAX] = sqrtf(acc);
}}

__global__ void divide_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n, const float *__restrict__ norm_at)
{{
    float norm = *norm_at;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] / norm;
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    int64_t n = args->dims[0] * args->dims[1] * args->dims[2] * args->dims[3];
    float *partial = workspace(PARTIAL_BLOCKS_MAX + 1);
    if (!partial) return -1;
    if (n == 0) return 0;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > PARTIAL_BLOCKS_MAX) blocks = PARTIAL_BLOCKS_MAX;
    sumsq_partial_kernel<<<(int)blocks, threads>>>(x, n, partial);
    norm_finish_kernel<<<1, 1024>>>(partial, (int)blocks);
    int64_t grid = (n + threads - 1) / threads, cap = (int64_t)sm_count() * 16;
    divide_kernel<<<(int)(grid < cap ? grid : cap), threads>>>(x, y, n, partial + PARTIAL_BLOCKS_MAX);
    return launch_status();
}}
'''

BATCHNORM = f'''/* reference.cu — batchnorm_inference: BatchNorm2d in inference mode on float32 [batch,
 * channels, height, width]: y = (x - mean[c]) / sqrt(var[c] + 1e-5) * weight[c] + bias[c].
 *
 * Baseline: one block per (image, channel) plane, so the channel's statistics are loaded once;
 * threads stride over the plane (coalesced). Memory-bound. */
{HEAD}{LAUNCH_OK}
__global__ void batchnorm_kernel(const float *__restrict__ x, const float *__restrict__ mean,
                                 const float *__restrict__ var, const float *__restrict__ weight,
                                 const float *__restrict__ bias, float *__restrict__ y,
                                 int64_t channels, int64_t plane)
{{
    int64_t c = blockIdx.x % channels;
    float mu = mean[c], inv_std = 1.0f / sqrtf(var[c] + 1e-5f), w = weight[c], b = bias[c];
    const float *xp = x + (int64_t)blockIdx.x * plane;
    float *yp = y + (int64_t)blockIdx.x * plane;
    for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) yp[i] = (xp[i] - mu) * inv_std * w + b;
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t batch = args->dims[0], channels = args->dims[1], plane = args->dims[2] * args->dims[3];
    if (batch * channels > INT32_MAX) return -1;
    if (batch * channels == 0) return 0;
    batchnorm_kernel<<<(unsigned)(batch * channels), 256>>>(
        (const float *)args->inputs[0], (const float *)args->inputs[1], (const float *)args->inputs[2],
        (const float *)args->inputs[3], (const float *)args->inputs[4], (float *)args->outputs[0], channels, plane);
    return launch_status();
}}
'''

ROW_DIMS = [("rows", 8192), ("cols", 4096)]
ROW_TRIALS = [[1, 1], [3, 7], [5, 1000], [17, 4099], [2, 33333]]
NORMAL = dict(kind="normal", mean=0.0, std=1.0)

def mid(name, desc, init, update, finish, merge, kb, tol, adv):
    return dict(name=name, category="reduction",
                description=f"{desc[0].upper()}{desc[1:]} over the middle dimension of a float32 [batch, reduce, inner] tensor.",
                math={"sum_dim": "y[b, i] = sum_r x[b, r, i]", "mean_dim": "y[b, i] = (1/reduce) * sum_r x[b, r, i]",
                      "max_dim": "y[b, i] = max_r x[b, r, i]", "min_dim": "y[b, i] = min_r x[b, r, i]"}[name],
                kernelbench=kb, dims=MID_DIMS, trial_dims=MID_TRIALS,
                inputs=[dict(name="x", dtype="f32", shape=["batch", "reduce", "inner"], dist=NORMAL, adversarial=adv)],
                outputs=[dict(name="y", dtype="f32", shape=["batch", "inner"])],
                tolerance=tol, forbid=["streams", "graphs", "threads"], library=[],
                cu=mid_reduce_cu(name, desc, init, update, finish, merge),
                baseline="32x8 blocks: coalesced along inner, reduce split over thread rows, shared-memory combine")

def tasks():
    t = []
    t.append(mid("sum_dim", "sum", "0.0f", "acc += v;", "acc", "acc += v;", "level1/47_Sum_reduction_over_a_dimension.py",
                 dict(atol=1e-5, rtol=1e-5), ["signed_zero", "huge"]))
    t.append(mid("mean_dim", "mean", "0.0f", "acc += v;", "acc / (float)n_reduce", "acc += v;", "level1/48_Mean_reduction_over_a_dimension.py",
                 dict(atol=1e-5, rtol=1e-5), ["signed_zero"]))
    t.append(mid("max_dim", "maximum", "-INFINITY", "acc = fmaxf(acc, v);", "acc", "acc = fmaxf(acc, v);", "level1/49_Max_reduction_over_a_dimension.py",
                 dict(atol=0.0, rtol=0.0), ["signed_zero", "inf", "huge", "denormal"]))
    t.append(mid("min_dim", "minimum", "INFINITY", "acc = fminf(acc, v);", "acc", "acc = fminf(acc, v);", "level1/53_Min_reduction_over_a_dimension.py",
                 dict(atol=0.0, rtol=0.0), ["signed_zero", "inf", "huge", "denormal"]))
    for name, word, cmp, kb in [("argmax_dim", "maximum", ">", "level1/51_Argmax_over_a_dimension.py"),
                                ("argmin_dim", "minimum", "<", "level1/52_Argmin_over_a_dimension.py")]:
        t.append(dict(name=name, category="reduction",
                      description=f"Index of the {word} along the middle dimension of a float32 [batch, reduce, inner] tensor, as int32; ties give the first (smallest) index.",
                      math=f"y[b, i] = arg{word[:3]}_r x[b, r, i]  (first index on ties)",
                      kernelbench=kb, dims=MID_DIMS, trial_dims=MID_TRIALS,
                      inputs=[dict(name="x", dtype="f32", shape=["batch", "reduce", "inner"], dist=NORMAL, adversarial=["inf", "huge"])],
                      outputs=[dict(name="y", dtype="i32", shape=["batch", "inner"])],
                      tolerance=dict(atol=0.0, rtol=0.0), forbid=["streams", "graphs", "threads"], library=[],
                      cu=arg_reduce_cu(name, word, cmp),
                      baseline="32x8 blocks: coalesced along inner, (value, index) pairs merged in shared memory"))
    row_tasks = [
        ("softmax", "softmax", "Softmax over the last dimension of a float32 [rows, cols] matrix.",
         "y[r, c] = exp(x[r, c] - m_r) / sum_k exp(x[r, k] - m_r), m_r = max_k x[r, k]",
         None, 1, "level1/23_Softmax.py", dict(atol=1e-5, rtol=1e-5), ["signed_zero", "huge"], "softmax over each row (the last dimension)."),
        ("log_softmax", "softmax", "Log-softmax over the last dimension of a float32 [rows, cols] matrix.",
         "y[r, c] = x[r, c] - m_r - log(sum_k exp(x[r, k] - m_r)), m_r = max_k x[r, k]",
         None, 1, "level1/24_LogSoftmax.py", dict(atol=1e-5, rtol=1e-5), ["signed_zero"], "log-softmax over each row (the last dimension)."),
        ("layernorm", "norm", "LayerNorm over the last dimension of a float32 [rows, cols] matrix with an affine weight and bias (eps 1e-5, biased variance).",
         "mu = mean_c x[r, c]; var = mean_c (x[r, c] - mu)^2; y[r, c] = (x[r, c] - mu) / sqrt(var + 1e-5) * weight[c] + bias[c]",
         LAYERNORM, 3, "level1/40_LayerNorm.py", dict(atol=1e-5, rtol=1e-5), ["signed_zero"], "LayerNorm over each row with weight and bias (eps 1e-5)."),
        ("rmsnorm", "norm", "RMSNorm over the last dimension of a float32 [rows, cols] matrix with a weight (eps 1e-6), as in LLaMA/Qwen.",
         "y[r, c] = x[r, c] / sqrt(mean_k x[r, k]^2 + 1e-6) * weight[c]",
         RMSNORM, 2, "", dict(atol=1e-5, rtol=1e-5), ["signed_zero"], "RMSNorm over each row with weight (eps 1e-6)."),
        ("l2_norm", "norm", "Divide each row of a float32 [rows, cols] matrix by its Euclidean norm.",
         "y[r, c] = x[r, c] / sqrt(sum_k x[r, k]^2)",
         L2NORM, 1, "level1/39_L2Norm_.py", dict(atol=1e-5, rtol=1e-5), ["signed_zero"], "each row divided by its L2 norm."),
        ("l1_norm", "norm", "Divide each row of a float32 [rows, cols] matrix by the mean of its absolute values.",
         "y[r, c] = x[r, c] / ((1/cols) * sum_k |x[r, k]|)",
         L1NORM, 1, "level1/38_L1Norm_.py", dict(atol=1e-5, rtol=1e-5), ["signed_zero"], "each row divided by its mean absolute value."),
    ]
    for name, cat, desc, math, body, n_in, kb, tol, adv, doc in row_tasks:
        ins = [dict(name="x", dtype="f32", shape=["rows", "cols"], dist=dict(kind="normal", mean=0.0, std=2.0), adversarial=adv)]
        if name == "layernorm":
            ins += [dict(name="weight", dtype="f32", shape=["cols"], dist=dict(kind="normal", mean=1.0, std=0.5), adversarial=[]),
                    dict(name="bias", dtype="f32", shape=["cols"], dist=NORMAL, adversarial=[])]
        if name == "rmsnorm":
            ins += [dict(name="weight", dtype="f32", shape=["cols"], dist=dict(kind="normal", mean=1.0, std=0.5), adversarial=[])]
        t.append(dict(name=name, category=cat, description=desc, math=math, kernelbench=kb,
                      dims=ROW_DIMS, trial_dims=ROW_TRIALS, inputs=ins,
                      outputs=[dict(name="y", dtype="f32", shape=["rows", "cols"])],
                      tolerance=tol, forbid=["streams", "graphs", "threads"], library=[],
                      cu={"softmax": SOFTMAX_CU, "log_softmax": LOG_SOFTMAX_CU}.get(name) or row_cu(name, doc, body, n_in=n_in),
                      baseline="one 256-thread block per row, warp-shuffle block reductions" +
                               (" (online max/sum pass, then the output pass; float4 when aligned)" if "softmax" in name else "")))
    t.append(dict(name="frobenius_norm", category="norm",
                  description="Divide a float32 [batch, channels, height, width] tensor by its Frobenius norm (the square root of the sum of all squared elements).",
                  math="y = x / sqrt(sum_all x^2)", kernelbench="level1/37_FrobeniusNorm_.py",
                  dims=[("batch", 16), ("channels", 64), ("height", 128), ("width", 256)],
                  trial_dims=[[1, 1, 1, 1], [1, 3, 5, 7], [2, 1, 33, 1025], [3, 7, 11, 13]],
                  inputs=[dict(name="x", dtype="f32", shape=["batch", "channels", "height", "width"], dist=NORMAL, adversarial=["signed_zero"])],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "channels", "height", "width"])],
                  tolerance=dict(atol=1e-5, rtol=1e-5), forbid=["streams", "graphs", "threads"], library=[], cu=FROBENIUS,
                  baseline="block partial sums of squares, one finishing block, a grid-stride divide"))
    t.append(dict(name="batchnorm_inference", category="norm",
                  description="BatchNorm2d in inference mode (running statistics) on a float32 [batch, channels, height, width] tensor, eps 1e-5.",
                  math="y[n, c, h, w] = (x[n, c, h, w] - mean[c]) / sqrt(var[c] + 1e-5) * weight[c] + bias[c]",
                  kernelbench="level1/33_BatchNorm.py",
                  dims=[("batch", 32), ("channels", 64), ("height", 128), ("width", 128)],
                  trial_dims=[[1, 1, 1, 1], [2, 3, 5, 7], [3, 17, 33, 1], [1, 5, 64, 65]],
                  inputs=[dict(name="x", dtype="f32", shape=["batch", "channels", "height", "width"], dist=dict(kind="normal", mean=0.5, std=2.0), adversarial=["signed_zero"]),
                          dict(name="running_mean", dtype="f32", shape=["channels"], dist=dict(kind="normal", mean=0.5, std=1.0), adversarial=[]),
                          dict(name="running_var", dtype="f32", shape=["channels"], dist=dict(kind="uniform", low=0.5, high=4.0), adversarial=[]),
                          dict(name="weight", dtype="f32", shape=["channels"], dist=dict(kind="normal", mean=1.0, std=0.5), adversarial=[]),
                          dict(name="bias", dtype="f32", shape=["channels"], dist=NORMAL, adversarial=[])],
                  outputs=[dict(name="y", dtype="f32", shape=["batch", "channels", "height", "width"])],
                  tolerance=dict(atol=1e-5, rtol=1e-5), forbid=["streams", "graphs", "threads"], library=[], cu=BATCHNORM,
                  baseline="one block per (image, channel) plane, coalesced"))
    return t
