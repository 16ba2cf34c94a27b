"""t_elementwise.py — task tables: elementwise activations (13 tasks): one float4 grid-stride template."""
from common import HEAD, SM, LAUNCH_OK

ACTS = [
    # name, description, math, device expression over x, kernelbench, adversarial
    ("relu", "ReLU activation", "y = max(x, 0) (NaN propagates)",
     "x > 0.0f || x != x ? x : 0.0f", "level1/19_ReLU.py", ["signed_zero", "inf", "nan", "denormal", "huge"]),
    ("leaky_relu", "Leaky ReLU with negative slope 0.01", "y = x if x > 0 else 0.01 * x",
     "x > 0.0f ? x : x * 0.01f", "level1/20_LeakyReLU.py", ["signed_zero", "inf", "nan", "denormal", "huge"]),
    ("sigmoid", "logistic sigmoid", "y = 1 / (1 + exp(-x))",
     "1.0f / (1.0f + expf(-x))", "level1/21_Sigmoid.py", ["signed_zero", "inf", "nan", "huge"]),
    ("tanh", "hyperbolic tangent", "y = tanh(x)",
     "tanhf(x)", "level1/22_Tanh.py", ["signed_zero", "inf", "nan", "huge", "tiny"]),
    ("gelu", "GELU activation, exact (erf) form", "y = 0.5 * x * (1 + erf(x / sqrt(2)))",
     "0.5f * x * erfcf(-x * 0.70710678118654752f)", "level1/26_GELU_.py", ["signed_zero", "nan"]),
    ("gelu_tanh", "GELU activation, tanh approximation (the MinGPT 'new GELU')",
     "y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))",
     "x / (1.0f + expf(-1.5957691216057307f * (x + 0.044715f * x * x * x)))",
     "level1/88_MinGPTNewGelu.py", ["signed_zero", "nan"]),
    ("silu", "SiLU / swish activation", "y = x * sigmoid(x) = x / (1 + exp(-x))",
     "x / (1.0f + expf(-x))", "level1/25_Swish.py", ["signed_zero", "nan"]),
    ("softplus", "softplus (beta 1, threshold 20, as torch.nn.functional.softplus)",
     "y = x if x > 20 else log(1 + exp(x))",
     "x > 20.0f ? x : log1pf(expf(x))", "level1/29_Softplus.py", ["signed_zero", "inf", "nan", "huge"]),
    ("elu", "ELU with alpha 1", "y = x if x > 0 else exp(x) - 1",
     "x > 0.0f ? x : expm1f(x)", "level1/31_ELU.py", ["signed_zero", "inf", "nan", "huge"]),
    ("hardtanh", "hardtanh, clamp to [-1, 1] (NaN propagates)", "y = min(max(x, -1), 1)",
     "x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x)", "level1/32_HardTanh.py", ["signed_zero", "inf", "nan", "huge"]),
    ("selu", "SELU activation", "y = scale * (x if x > 0 else alpha * (exp(x) - 1)), alpha = 1.6732632423543772, scale = 1.0507009873554805",
     "1.0507009873554805f * (x > 0.0f ? x : 1.6732632423543772f * expm1f(x))", "level1/27_SELU_.py", ["signed_zero", "inf", "nan", "huge"]),
    ("hardsigmoid", "hard sigmoid (as torch.nn.functional.hardsigmoid)", "y = min(max(x + 3, 0), 6) / 6",
     "hardsigmoid(x)", "level1/28_HardSigmoid.py", ["signed_zero", "inf", "nan", "huge"]),
    ("softsign", "softsign", "y = x / (1 + |x|)",
     "x / (1.0f + fabsf(x))", "level1/30_Softsign.py", ["signed_zero", "nan", "huge"]),
]

HARDSIG = '''
/* Written as torch does, with comparisons that let NaN through. */
__device__ __forceinline__ float hardsigmoid(float x)
{
    float t = x + 3.0f;
    t = t < 0.0f ? 0.0f : t;
    t = t > 6.0f ? 6.0f : t;
    return t / 6.0f;
}
'''

NOTES = {
    "gelu": "\n * 1 + erf(x / sqrt 2) is computed as erfc(-x / sqrt 2): no cancellation for negative x.",
    "gelu_tanh": "\n * 0.5 (1 + tanh z) is computed as 1 / (1 + exp(-2z)): no cancellation for negative x.",
}


def cu(name, desc, expr):
    extra = HARDSIG if name == "hardsigmoid" else ""
    return f'''/* reference.cu — {name}: {desc}, elementwise over a float32 tensor.
 *
 * Baseline: one grid-stride kernel, 16-byte (float4) loads and stores when both pointers are
 * 16-byte aligned, a scalar tail for the last n % 4 elements; the grid is sized to the
 * multiprocessor count. Memory-bound: about one read and one write per element.{NOTES.get(name, "")} */
{HEAD}{SM}{LAUNCH_OK}{extra}
__device__ __forceinline__ float op(float x) {{ return {expr}; }}

__global__ void {name}_vec4_kernel(const float4 *__restrict__ x, float4 *__restrict__ y, int64_t n4)
{{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {{
        float4 v = x[i];
        v.x = op(v.x);
        v.y = op(v.y);
        v.z = op(v.z);
        v.w = op(v.w);
        y[i] = v;
    }}
}}

__global__ void {name}_scalar_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t start, int64_t n)
{{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = start + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = op(x[i]);
}}

static int grid_for(int64_t work, int threads)
{{
    int64_t blocks = (work + threads - 1) / threads, cap = (int64_t)sm_count() * 16;
    if (blocks > cap) blocks = cap;
    return blocks < 1 ? 1 : (int)blocks;
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    const float *x = (const float *)args->inputs[0];
    float *y = (float *)args->outputs[0];
    int64_t n = args->dims[0] * args->dims[1];
    const int threads = 256;
    int aligned = (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {name}_vec4_kernel<<<grid_for(n4, threads), threads>>>((const float4 *)x, (float4 *)y, n4);
    if (n - n4 * 4 > 0) {name}_scalar_kernel<<<grid_for(n - n4 * 4, threads), threads>>>(x, y, n4 * 4, n);
    return launch_status();
}}
'''

def tasks():
    out = []
    for name, desc, math, expr, kb, adv in ACTS:
        out.append(dict(
            name=name, category="elementwise",
            description=f"{desc[0].upper()}{desc[1:]}, applied elementwise to a float32 matrix.",
            math=math, kernelbench=kb,
            dims=[("rows", 4096), ("cols", 8192)],
            trial_dims=[[1, 5], [3, 7], [7, 1023], [33, 4097], [129, 255]],
            inputs=[dict(name="x", dtype="f32", shape=["rows", "cols"], dist=dict(kind="normal", mean=0.0, std=3.0), adversarial=adv)],
            outputs=[dict(name="y", dtype="f32", shape=["rows", "cols"])],
            tolerance=dict(atol=1e-5, rtol=1e-5),
            forbid=["streams", "graphs", "threads"], library=[],
            cu=cu(name, desc, expr),
            baseline="one grid-stride kernel with float4 loads and stores"))
    return out
