#!/usr/bin/env python3
"""check_kernel_tasks.py — validate the kernel-environment task suite (kernel_tasks/*).

Usage:
  python3 tools/check_kernel_tasks.py --validate-only      # CPU: every spec's structure
  python3 tools/check_kernel_tasks.py [--tasks a,b] [--out results.json] [--jobs 16]
                                                           # GPU: also build, run, compare, time

Validation (everywhere): spec.json schema, dims referenced by shapes exist, trial sizes have
one value per dim, reference.cu and prompt.md exist and the prompt names the entry point, and
this script knows a torch formula for the task.

On a GPU machine it then compiles every reference.cu with nvcc into a shared object, calls its
rl_kernel() through ctypes on random inputs drawn as the spec says (plus the spec's adversarial
values, a few of each kind, on one trial), and compares every output with the same operation
written in torch and computed in float64 (TF32 off): the reference must be within the spec's
tolerance of that. Finally it times the reference at the timed size (median of cold-L2 runs,
CUDA events) next to the float32 torch formula, so an unfair (too slow) baseline shows up as a
ratio well above 1. Prints a table; --out writes the rows as JSON.

Assumes nvcc on PATH and the CUDA toolkit's cuBLAS/cuDNN (as on the device machine)."""
import argparse
import concurrent.futures
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = os.path.join(ROOT, "kernel_tasks")
INCLUDE = os.path.join(ROOT, "src", "reward", "kernel_env", "include")
DTYPES = ("f32", "f16", "bf16", "i32")
DISTS = ("normal", "uniform")
ADVERSARIAL = ("signed_zero", "inf", "nan", "denormal", "huge", "tiny")
FORBID = ("streams", "graphs", "library", "threads")
LIBRARIES = ("cublas", "cudnn")
CATEGORIES = ("elementwise", "reduction", "softmax", "norm", "matmul", "convolution", "pooling",
              "scan", "loss", "fused")


# --- torch formulas: inputs (float64 / int64 tensors) and dims (name -> value) -> outputs ----

def _formulas():
    import torch
    import torch.nn.functional as F

    def lin(i, bias=True):
        z = i[0] @ i[1].T
        return z + i[2] if bias else z

    def conv_same(x, w, k):
        return F.conv2d(x, w, padding=k // 2)

    return {
        "relu": lambda i, d: [torch.relu(i[0])],
        "leaky_relu": lambda i, d: [F.leaky_relu(i[0], 0.01)],
        "sigmoid": lambda i, d: [torch.sigmoid(i[0])],
        "tanh": lambda i, d: [torch.tanh(i[0])],
        "gelu": lambda i, d: [F.gelu(i[0])],
        "gelu_tanh": lambda i, d: [0.5 * i[0] * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                                                   (i[0] + 0.044715 * torch.pow(i[0], 3.0))))],
        "silu": lambda i, d: [F.silu(i[0])],
        "softplus": lambda i, d: [F.softplus(i[0])],
        "elu": lambda i, d: [F.elu(i[0])],
        "hardtanh": lambda i, d: [F.hardtanh(i[0])],
        "selu": lambda i, d: [F.selu(i[0])],
        "hardsigmoid": lambda i, d: [F.hardsigmoid(i[0])],
        "softsign": lambda i, d: [F.softsign(i[0])],
        "sum_dim": lambda i, d: [i[0].sum(dim=1)],
        "mean_dim": lambda i, d: [i[0].mean(dim=1)],
        "max_dim": lambda i, d: [i[0].amax(dim=1)],
        "min_dim": lambda i, d: [i[0].amin(dim=1)],
        "argmax_dim": lambda i, d: [i[0].argmax(dim=1)],
        "argmin_dim": lambda i, d: [i[0].argmin(dim=1)],
        "softmax": lambda i, d: [torch.softmax(i[0], dim=1)],
        "log_softmax": lambda i, d: [torch.log_softmax(i[0], dim=1)],
        "layernorm": lambda i, d: [F.layer_norm(i[0], (d["cols"],), i[1], i[2], 1e-5)],
        "rmsnorm": lambda i, d: [i[0] * torch.rsqrt(i[0].pow(2).mean(dim=1, keepdim=True) + 1e-6) * i[1]],
        "l2_norm": lambda i, d: [i[0] / torch.norm(i[0], p=2, dim=1, keepdim=True)],
        "l1_norm": lambda i, d: [i[0] / torch.mean(torch.abs(i[0]), dim=1, keepdim=True)],
        "frobenius_norm": lambda i, d: [i[0] / torch.norm(i[0], p="fro")],
        "batchnorm_inference": lambda i, d: [F.batch_norm(i[0], i[1], i[2], i[3], i[4], False, 0.0, 1e-5)],
        "matmul_square": lambda i, d: [i[0] @ i[1]],
        "matmul_tall_skinny": lambda i, d: [i[0] @ i[1]],
        "matmul_transposed_a": lambda i, d: [i[0].T @ i[1]],
        "matmul_transposed_b": lambda i, d: [i[0] @ i[1].T],
        "matmul_batched": lambda i, d: [torch.bmm(i[0], i[1])],
        "matvec": lambda i, d: [i[0] @ i[1]],
        "matmul_large_k": lambda i, d: [i[0] @ i[1]],
        "diag_matmul": lambda i, d: [i[0].unsqueeze(1) * i[1]],
        "triangular_matmul": lambda i, d: [torch.triu(torch.triu(i[0]) @ torch.triu(i[1]))],
        "conv2d": lambda i, d: [conv_same(i[0], i[1], d["kernel"])],
        "conv2d_depthwise": lambda i, d: [F.conv2d(i[0], i[1].unsqueeze(1), padding=d["kernel"] // 2,
                                                   groups=d["channels"])],
        "conv1d": lambda i, d: [F.conv1d(i[0], i[1], padding=d["kernel"] // 2)],
        "conv2d_bn_relu": lambda i, d: [torch.relu(F.batch_norm(conv_same(i[0], i[1], d["kernel"]), i[2], i[3],
                                                                i[4], i[5], False, 0.0, 1e-5))],
        "maxpool2d": lambda i, d: [F.max_pool2d(i[0], 3, 2, 1)],
        "avgpool2d": lambda i, d: [F.avg_pool2d(i[0], 3, 1, 1)],
        "cumsum": lambda i, d: [torch.cumsum(i[0], dim=1)],
        "cumprod": lambda i, d: [torch.cumprod(i[0], dim=1)],
        "mse_loss": lambda i, d: [torch.mean((i[0] - i[1]) ** 2)],
        "hinge_loss": lambda i, d: [torch.mean(torch.clamp(1 - i[0] * i[1], min=0))],
        "smooth_l1_loss": lambda i, d: [F.smooth_l1_loss(i[0], i[1])],
        "kl_div_loss": lambda i, d: [F.kl_div(torch.log(i[0]), i[1], reduction="batchmean")],
        "cross_entropy": lambda i, d: [F.cross_entropy(i[0], i[1].long())],
        "gemm_bias_relu": lambda i, d: [torch.relu(lin(i))],
        "gemm_scale_residual": lambda i, d: [lin(i) * 0.5 + lin(i)],
        "gemm_sigmoid_scale_residual": lambda i, d: [torch.sigmoid(lin(i)) * 2.0 + lin(i)],
        "gemm_divide_gelu": lambda i, d: [F.gelu(lin(i) / 10.0)],
        "gemm_swish_scale": lambda i, d: [lin(i) * torch.sigmoid(lin(i)) * 2.0],
        "gemm_sigmoid_logsumexp": lambda i, d: [torch.logsumexp(torch.sigmoid(lin(i)), dim=1)],
    }



# --- validation ---------------------------------------------------------------------------

def validate(name, known):
    """Returns (spec, list of problems)."""
    d = os.path.join(TASKS, name)
    errs = []
    try:
        with open(os.path.join(d, "spec.json")) as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        return None, [f"spec.json: {e}"]

    def need(obj, key, typ, where):
        if key not in obj:
            errs.append(f"{where}: missing '{key}'")
            return None
        if not isinstance(obj[key], typ) or isinstance(obj[key], bool) and typ is not bool:
            errs.append(f"{where}: '{key}' has the wrong type")
            return None
        return obj[key]

    for key, typ in (("name", str), ("category", str), ("description", str), ("dims", list),
                     ("trial_dims", list), ("inputs", list), ("outputs", list), ("tolerance", dict),
                     ("forbid", list), ("library", list)):
        need(s, key, typ, "spec")
    if errs:
        return s, errs
    if s["name"] != name:
        errs.append(f"name '{s['name']}' differs from the directory name")
    if s["category"] not in CATEGORIES:
        errs.append(f"unknown category '{s['category']}'")
    kb = s.get("kernelbench")
    if kb is not None and not (isinstance(kb, str) and kb.startswith("level") and kb.endswith(".py")):
        errs.append(f"kernelbench '{kb}' is not a levelN/<file>.py path")
    names = []
    for i, dim in enumerate(s["dims"]):
        n = need(dim, "name", str, f"dims[{i}]")
        v = need(dim, "value", int, f"dims[{i}]")
        if n is not None:
            names.append(n)
        if v is not None and v < 1:
            errs.append(f"dims[{i}] '{n}': value {v} is not positive")
    if len(set(names)) != len(names):
        errs.append("dims: duplicate names")
    if not 1 <= len(names) <= 8:
        errs.append(f"dims: {len(names)} dims, the entry point carries 1 to 8")
    for j, tr in enumerate(s["trial_dims"]):
        if not isinstance(tr, list) or len(tr) != len(names):
            errs.append(f"trial_dims[{j}]: needs {len(names)} values, one per dim")
        elif not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in tr):
            errs.append(f"trial_dims[{j}]: values must be positive integers")
    if len(s["trial_dims"]) < 2:
        errs.append("trial_dims: at least two extra correctness sizes expected")
    for kind in ("inputs", "outputs"):
        lst = s[kind]
        if not 1 <= len(lst) <= 8:
            errs.append(f"{kind}: {len(lst)} tensors, the entry point carries 1 to 8")
        tnames = set()
        for i, t in enumerate(lst):
            where = f"{kind}[{i}]"
            tn = need(t, "name", str, where)
            if tn in tnames:
                errs.append(f"{where}: duplicate name '{tn}'")
            tnames.add(tn)
            if need(t, "dtype", str, where) not in DTYPES:
                errs.append(f"{where}: dtype must be one of {DTYPES}")
            for dn in need(t, "shape", list, where) or []:
                if not (isinstance(dn, str) and dn in names or isinstance(dn, int) and not isinstance(dn, bool) and dn > 0):
                    errs.append(f"{where}: shape entry {dn!r} is neither a dim name nor a positive integer")
            if kind == "inputs":
                dist = need(t, "dist", dict, where) or {}
                if dist.get("kind") not in DISTS:
                    errs.append(f"{where}: dist.kind must be one of {DISTS}")
                for key in (("mean", "std") if dist.get("kind") == "normal" else ("low", "high")):
                    if not isinstance(dist.get(key), (int, float)) or isinstance(dist.get(key), bool):
                        errs.append(f"{where}: dist.{key} must be a number")
                for a in t.get("adversarial", []):
                    if a not in ADVERSARIAL:
                        errs.append(f"{where}: unknown adversarial value '{a}'")
                    if t["dtype"] == "i32":
                        errs.append(f"{where}: adversarial values make no sense for int32")
                if not isinstance(t.get("mutable", False), bool):
                    errs.append(f"{where}: mutable must be a boolean")
    tol = s["tolerance"]
    for key in ("atol", "rtol"):
        v = tol.get(key)
        if not isinstance(v, (int, float)) or v < 0 or v > 0.1:
            errs.append(f"tolerance.{key} must be a number in [0, 0.1]")
    if any(t.get("dtype") == "f32" for t in s["outputs"]) and (tol.get("rtol", 1) > 1e-4 or tol.get("atol", 1) > 2e-4):
        errs.append("tolerance above rtol 1e-4 / atol 2e-4 (of the output RMS) for a float32 output lets TF32 pass")
    for f_ in s["forbid"]:
        if f_ not in FORBID:
            errs.append(f"forbid: unknown '{f_}'")
    for lib in s["library"]:
        if lib not in LIBRARIES:
            errs.append(f"library: unknown '{lib}'")
    if s["library"] and "library" not in s["forbid"]:
        errs.append("library set but 'library' not in forbid: candidates could call the baseline itself")
    src = ""
    try:
        with open(os.path.join(d, "reference.cu")) as f:
            src = f.read()
    except OSError as e:
        errs.append(f"reference.cu: {e}")
    if src and 'extern "C" int rl_kernel(' not in src:
        errs.append("reference.cu: no extern \"C\" rl_kernel definition")
    for lib, header in (("cublas", "cublas"), ("cudnn", "cudnn")):
        if src and (header + ".h" in src or header + "_v2.h" in src) and lib not in s["library"]:
            errs.append(f"reference.cu uses {lib} but spec.library does not say so")
    try:
        with open(os.path.join(d, "prompt.md")) as f:
            prompt = f.read()
        if "rl_kernel" not in prompt or "args->dims" not in prompt:
            errs.append("prompt.md: does not show the entry point and args->dims")
    except OSError as e:
        errs.append(f"prompt.md: {e}")
    if known is not None and name not in known:
        errs.append("no torch formula in tools/check_kernel_tasks.py")
    return s, errs


# --- GPU run ------------------------------------------------------------------------------

class Args(ctypes.Structure):
    _fields_ = [("n_inputs", ctypes.c_int), ("n_outputs", ctypes.c_int), ("n_dims", ctypes.c_int),
                ("inputs", ctypes.c_void_p * 8), ("outputs", ctypes.c_void_p * 8),
                ("dims", ctypes.c_int64 * 8)]


def build(name, spec, outdir):
    """nvcc with the evaluator's flags (docs/kernel-env.md), libraries as the spec lists them."""
    so = os.path.join(outdir, name + ".so")
    cmd = ["nvcc", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
           "-gencode=arch=compute_90a,code=sm_90a", "-I" + INCLUDE, "-Xlinker", "--no-undefined",
           os.path.join(TASKS, name, "reference.cu"), "-o", so]
    if "cublas" in spec["library"]:
        cmd += ["-lcublas", "-lcublasLt"]
    if "cudnn" in spec["library"]:
        cmd += ["-lcudnn"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return so if r.returncode == 0 else None, r.stderr[-2000:]


ADV_VALUES = {"signed_zero": [-0.0], "inf": [math.inf, -math.inf], "nan": [math.nan],
              "denormal": [1e-40, -1e-40], "huge": [1e30, -1e30], "tiny": [1e-30, -1e-30]}


def extents(shape, dims):
    return [dims[n] if isinstance(n, str) else n for n in shape]


def make_inputs(spec, dims, gen, kind):
    """kind: random, adversarial, constant or zero_prefix (the evaluator's trial kinds)."""
    import torch
    tt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32}
    out = []
    for t in spec["inputs"]:
        shape = extents(t["shape"], dims)
        dist = t["dist"]
        if kind == "constant":
            v = (dist["low"] + dist["high"]) / 2 if dist["kind"] == "uniform" else dist["mean"] + 0.7 * dist["std"]
            out.append(torch.full(shape, math.floor(v) if t["dtype"] == "i32" else v, device="cuda",
                                  dtype=tt[t["dtype"]]))
            continue
        if t["dtype"] == "i32":  # uniform integers in [low, high], as the evaluator draws them
            x = torch.randint(int(dist["low"]), int(dist["high"]) + 1, shape, generator=gen, device="cuda",
                              dtype=torch.int32)
        elif dist["kind"] == "normal":
            x = torch.randn(shape, generator=gen, device="cuda") * dist["std"] + dist["mean"]
        else:
            lo, hi = dist["low"], dist["high"]
            x = torch.rand(shape, generator=gen, device="cuda") * (hi - lo) + lo
        if t["dtype"] != "i32":
            x = x.to(tt[t["dtype"]])
        flat = x.view(-1)
        if kind == "adversarial" and t.get("adversarial") and x.numel() > 0:
            for a in t["adversarial"]:
                for v in ADV_VALUES[a]:
                    idx = torch.randint(0, flat.numel(), (max(1, min(3, flat.numel() // 64)),), generator=gen,
                                        device="cuda")
                    flat[idx] = v
            flat[0] = ADV_VALUES[t["adversarial"][0]][0]
            flat[-1] = ADV_VALUES[t["adversarial"][-1]][-1]
        if kind == "zero_prefix":
            flat[: flat.numel() // 2] = 0
        out.append(x.contiguous())
    return out


def call(fn, spec, dims, inputs, outputs):
    a = Args()
    a.n_inputs, a.n_outputs, a.n_dims = len(inputs), len(outputs), len(spec["dims"])
    for i, x in enumerate(inputs):
        a.inputs[i] = x.data_ptr()
    for i, y in enumerate(outputs):
        a.outputs[i] = y.data_ptr()
    for i, dim in enumerate(spec["dims"]):
        a.dims[i] = dims[dim["name"]]
    return fn(ctypes.byref(a))


def compare(got, exact, tol, dtype):
    """Largest |got - exact| / (atol * s + rtol |exact|) with s the RMS of the exact output (1 if
    0), as the evaluator's rule (<= 1 passes), and the largest abs error; NaN and inf must sit
    where the exact result has them."""
    import torch
    g, e = got.double(), exact.double()
    if dtype == "i32":
        bad = (g != e).sum().item()
        return (math.inf if bad else 0.0), float((g - e).abs().max().item()) if g.numel() else 0.0
    nan_g, nan_e = torch.isnan(g), torch.isnan(e)
    if not torch.equal(nan_g, nan_e):
        return math.inf, math.nan
    inf_e = torch.isinf(e)
    if not torch.equal(g[inf_e], e[inf_e]):
        return math.inf, math.inf
    fin = ~(nan_e | inf_e)
    if not fin.any():
        return 0.0, 0.0
    diff = (g[fin] - e[fin]).abs()
    if torch.isinf(g[fin]).any():
        return math.inf, math.inf
    rms = float(e[fin].pow(2).mean().sqrt().item()) or 1.0
    ratio = diff / (tol["atol"] * rms + tol["rtol"] * e[fin].abs())
    ratio = torch.where(diff == 0, torch.zeros_like(ratio), ratio)
    return float(ratio.max().item()), float(diff.max().item())


def time_ms(fn_run, flush, reps=10, warmup=3):
    import torch
    for _ in range(warmup):
        fn_run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.add_(1.0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn_run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def run_task(name, spec, so, formulas, flush):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lib = ctypes.CDLL(so)
    fn = lib.rl_kernel
    fn.argtypes = [ctypes.POINTER(Args)]
    fn.restype = ctypes.c_int
    tt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32}
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1))
    sizes = [[d["value"] for d in spec["dims"]]] + spec["trial_dims"]
    smallest = min(range(len(sizes)), key=lambda k: math.prod(sizes[k]))
    zero_ok = not any(t["dist"]["kind"] == "uniform" and (t["dist"]["low"] > 0 or t["dist"]["high"] < 0)
                      for t in spec["inputs"])
    worst, worst_abs, fails = 0.0, 0.0, []
    for k, values in enumerate(sizes):
        dims = {d["name"]: v for d, v in zip(spec["dims"], values)}
        kinds = ["random"]
        if k in (0, smallest):
            kinds += ["adversarial", "constant"] + (["zero_prefix"] if zero_ok else [])
        for kind in kinds:
            adversarial = kind != "random"
            inputs = make_inputs(spec, dims, gen, kind)
            before = [x.clone() for x in inputs]
            outputs = [torch.full(extents(o["shape"], dims), math.nan, device="cuda", dtype=tt[o["dtype"]])
                       if o["dtype"] != "i32" else
                       torch.full(extents(o["shape"], dims), -7, device="cuda", dtype=torch.int32)
                       for o in spec["outputs"]]
            rc = call(fn, spec, dims, inputs, outputs)
            torch.cuda.synchronize()
            if rc != 0:
                fails.append(f"{values}: rl_kernel returned {rc}")
                continue
            for x, b in zip(inputs, before):
                if not torch.equal(x.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8)):
                    fails.append(f"{values}: an input was modified")
            exact = formulas[name]([x.double() if x.is_floating_point() else x for x in inputs], dims)
            for o, got, ex in zip(spec["outputs"], outputs, exact):
                r, a = compare(got, ex.reshape(got.shape), spec["tolerance"], o["dtype"])
                if r > 1:
                    fails.append(f"{values}{' ' + kind if adversarial else ''}: '{o['name']}' off by "
                                 f"{r:.3g} x tolerance (max abs {a:.3g})")
                worst, worst_abs = max(worst, r), max(worst_abs, a)
    dims = {d["name"]: d["value"] for d in spec["dims"]}
    inputs = make_inputs(spec, dims, gen, "random")
    outputs = [torch.empty(extents(o["shape"], dims), device="cuda", dtype=tt[o["dtype"]])
               for o in spec["outputs"]]
    ref_ms = time_ms(lambda: call(fn, spec, dims, inputs, outputs), flush)
    torch_ms = time_ms(lambda: formulas[name](inputs, dims), flush)
    in_mb = sum(x.numel() * x.element_size() for x in inputs) / 2 ** 20
    return dict(task=name, ok=not fails, worst_tol_ratio=worst, max_abs=worst_abs, ref_ms=ref_ms,
                torch_ms=torch_ms, input_mb=in_mb, fails=fails[:5])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--validate-only", action="store_true")
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    ap.add_argument("--out", default="", help="write the GPU results as JSON here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    names = sorted(n for n in os.listdir(TASKS) if os.path.isfile(os.path.join(TASKS, n, "spec.json")))
    if a.tasks:
        names = [n for n in names if n in a.tasks.split(",")]
    try:
        formulas = _formulas()
    except ImportError:
        formulas = None
    specs, bad = {}, 0
    for n in names:
        s, errs = validate(n, formulas)
        for e in errs:
            print(f"{n}: {e}")
        bad += bool(errs)
        specs[n] = s
    cats = sorted({s["category"] for s in specs.values() if s})
    print(f"validated {len(names)} tasks, {bad} with problems; categories: {', '.join(cats)}")
    if a.validate_only or bad:
        return 1 if bad else 0
    import torch
    if not torch.cuda.is_available():
        print("no GPU: stopping after validation")
        return 0
    tmp = tempfile.mkdtemp(prefix="rl_tasks_")
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        built = dict(zip(names, ex.map(lambda n: build(n, specs[n], tmp), names)))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 1 << 20) // 4, device="cuda")
    rows = []
    for n in names:
        so, log = built[n]
        if not so:
            rows.append(dict(task=n, ok=False, fails=["nvcc: " + log]))
            continue
        try:
            rows.append(run_task(n, specs[n], so, formulas, flush))
        except Exception as e:  # a broken task must not hide the others' results
            rows.append(dict(task=n, ok=False, fails=[f"{type(e).__name__}: {e}"]))
        torch.cuda.empty_cache()
        print(f"  {n}: {'ok' if rows[-1]['ok'] else 'FAIL'}", flush=True)
    print(f"\n{'task':30} {'ok':3} {'tol_ratio':>9} {'ref_ms':>8} {'torch_ms':>8} {'ratio':>6} {'in_MB':>6}")
    for r in rows:
        if "ref_ms" in r:
            print(f"{r['task']:30} {'yes' if r['ok'] else 'NO':3} {r['worst_tol_ratio']:9.3g} {r['ref_ms']:8.3f} "
                  f"{r['torch_ms']:8.3f} {r['ref_ms'] / r['torch_ms']:6.2f} {r['input_mb']:6.0f}")
        else:
            print(f"{r['task']:30} NO")
        for f_ in r.get("fails", []):
            print(f"    {f_}")
    n_ok = sum(r["ok"] for r in rows)
    print(f"\n{n_ok}/{len(rows)} tasks pass on {torch.cuda.get_device_name(0)}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if n_ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
