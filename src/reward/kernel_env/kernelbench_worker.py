#!/usr/bin/env python3
"""kernelbench_worker.py — score a KernelBench-format candidate under rlc's kernel protocol.

Usage:
  python3 kernelbench_worker.py --ref PROBLEM.py --cand CANDIDATE.py [--protocol protocol.json]
        [--trials N] [--timed N] [--warmup N] [--copies K] [--flush-factor F] [--max-spread S]
        [--spread-repeats R] [--ref-slowdown-limit L] [--ref-slowdown-min-ms M]
        [--tol DTYPE ATOL RTOL]... [--atol A] [--rtol R] [--seed S] [--nonce-stdin]
  PROBLEM.py   a KernelBench problem: class Model, get_inputs(), get_init_inputs()
  CANDIDATE.py defines class ModelNew (same constructor arguments), usually with inline CUDA
               through torch.utils.cpp_extension.load_inline
Prints ONE JSON line on the original stdout, in the schema of the native worker
(docs/kernel-env.md, "Result JSON"): status, failure, checks, trials, max_err_ratio,
max_abs_err, ref_ms, cand_ms, speedup, noisy, device, l2_bytes (+ nonce when --nonce-stdin:
the first stdin line, read before the candidate is imported; stdin is then closed). Whatever
the candidate prints goes to stderr. Exit status 0 whenever a result was printed.

`rlc kernel-eval PROBLEM.py CANDIDATE.py` (and --batch) runs this worker in a limited child
process and passes every protocol parameter as a flag (the values of protocol.json, which rlc
loads, with rlc's overrides). Run by hand, the parameters that no flag gives come from
--protocol (default: protocol.json beside this file); the worker has no defaults of its own.

Protocol (the native worker's, in PyTorch terms):
 1. Before the candidate is imported: the reference Model is built (KernelBench's seeded init),
    the correctness inputs are drawn (torch seeded from os.urandom, so the candidate cannot
    know them) and the reference outputs computed, TF32 off; the reference is timed alone once.
 2. The candidate is imported and ModelNew built the way KernelBench does it (same seed, same
    init arguments); where its state_dict has the same names and shapes as Model's, Model's
    weights are copied in. Import or build failure: compile_error.
 3. Correctness trials (candidate outputs against the stored reference outputs): every
    get_inputs() draw with a fresh seed; then, where the reference stays finite on them,
    "signed" inputs (each floating input mapped to 4 * (x - 0.5) * scale, so a candidate that
    assumes torch.rand's [0, 1) fails) as the adversarial trial. Each call: inputs must be
    unchanged (bitwise), outputs must have the reference's shape and dtype, must not share
    storage with an input and must not be a tensor the previous call returned (those are kept
    alive, so a fresh allocation cannot reuse the address); elementwise |c - r| <= atol * s + rtol * |r|, s = RMS of the reference output,
    NaN/inf must match.
 4. Timing: every run (warm-up included) on fresh inputs drawn on the device outside the
    timed region, the reference on the same inputs in the same iteration (input_copies is
    accepted and unused); warm-up; N runs per side interleaved ref, cand, ...; before every run a 2x-L2
    buffer is written and the whole device synchronized; a run's time is host wall time to the
    end of torch.cuda.synchronize() after it (work on any stream counts). Every timed candidate
    output is checked against that iteration's reference output. Median, p10, p90; if (p90 - p10) / median
    exceeds max_spread on either side the round is repeated (up to spread_repeats times), then
    `noisy` is set. If the reference's interleaved median exceeds ref_slowdown_limit times its
    solo median (and by ref_slowdown_min_ms; something slowing the reference down, or noise),
    `noisy` is set too, which caps the rewarded speedup at 1.
 5. Integrity (docs/kernel-env.md): numeric settings measured fairly (every reference call
    under the protocol's, RefSettings); torch's, time's, os's and json's attributes checked
    after every phase (a patch is a cheat); the clock and synchronize bound before the import.
    Then correctness once more on new inputs. 6. --profile: each side's GPU kernels, timed."""
import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from time import perf_counter  # bound before the candidate is imported: patching time.perf_counter misses it

T_START = perf_counter()

from kb_gpulock import GpuLock  # noqa: E402 (beside this file)
from kb_kernels import demangled_qualname, elf_functions, kernel_times, mangled_qualname, own_kernel_names  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
# protocol.json key -> (flag destination, type); tolerances come as --tol DTYPE ATOL RTOL.
PARAMS = {"random_trials": ("trials", int), "timed": ("timed", int), "warmup": ("warmup", int),
          "input_copies": ("copies", int), "l2_flush_factor": ("flush_factor", float),
          "max_spread": ("max_spread", float), "spread_repeats": ("spread_repeats", int),
          "ref_slowdown_limit": ("ref_slowdown_limit", float), "ref_slowdown_min_ms": ("ref_slowdown_min_ms", float)}
DTYPES = ("f32", "f16", "bf16", "i32")
STASH_BYTES = 1 << 30
CHECKS = ["setup", "return_code", "correct_random", "correct_adversarial", "inputs_unchanged", "fresh_output",
          "global_state", "own_kernel", "timed_outputs", "reference_speed", "correct_after_timing"]


class Fail(Exception):
    """A candidate failure: status (incorrect, cheat, crash, compile_error, error), check, message."""

    def __init__(self, status, check, msg):
        super().__init__(msg)
        self.status, self.check, self.msg = status, check, msg


class Phases:
    """Where a GPU run's seconds went (the result's "phases", as the native worker's): each mark
    closes the phase since the last one; lock_wait is the time spent waiting for the GPU lock,
    inside the phases."""

    def __init__(self):
        self.t, self.d = T_START, {}

    def mark(self, name):
        now = perf_counter()
        self.d[name] = round(self.d.get(name, 0.0) + now - self.t, 3)
        self.t = now


class Result:
    def __init__(self, nonce):
        self.d = {"status": "ok", "failure": None, "checks": {c: "skip" for c in CHECKS}, "trials": 0,
                  "max_err_ratio": 0.0, "max_abs_err": 0.0, "device": "", "l2_bytes": 0}
        if nonce is not None:
            self.d["nonce"] = nonce

    def passed(self, check):
        if self.d["checks"].get(check) != "fail":
            self.d["checks"][check] = "pass"

    def fail(self, f):
        self.d["status"], self.d["failure"] = f.status, f"{f.check}: {f.msg}"
        self.d["checks"][f.check] = "fail"


def protocol(a):
    """The protocol's parameters: the flags (rlc passes them all), then protocol.json for the rest."""
    p = {k: getattr(a, dest) for k, (dest, _) in PARAMS.items()}
    tol = {}
    for dt, atol, rtol in a.tol or []:
        try:
            tol[dt] = {"atol": float(atol), "rtol": float(rtol)}
        except ValueError:
            raise Fail("error", "setup", f"--tol {dt} {atol} {rtol}: not numbers")
        if dt not in DTYPES or not (tol[dt]["atol"] >= 0 and tol[dt]["rtol"] >= 0):
            raise Fail("error", "setup", f"--tol {dt} {atol} {rtol}: needs a dtype of {', '.join(DTYPES)} and values >= 0")
    missing = [k for k, v in p.items() if v is None] + [f"tolerance.{dt}" for dt in DTYPES if dt not in tol]
    if missing:
        try:
            with open(a.protocol) as f:
                user = json.load(f)
            if not isinstance(user, dict):
                raise ValueError("the top level must be an object")
        except (OSError, ValueError) as e:
            raise Fail("error", "setup", f"protocol file {a.protocol}: {e} (needed for {', '.join(missing)})")
        for k, (_, typ) in PARAMS.items():
            v = user.get(k)
            if p[k] is None:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or (typ is int and v != int(v)):
                    raise Fail("error", "setup", f"{a.protocol}: field '{k}' missing or not "
                                                 f"{'an integer' if typ is int else 'a number'}")
                p[k] = typ(v)
        utol = user.get("tolerance")
        for dt in DTYPES:
            if dt in tol:
                continue
            t = utol.get(dt) if isinstance(utol, dict) else None
            if not isinstance(t, dict) or not all(isinstance(t.get(k), (int, float)) and t[k] >= 0 for k in ("atol", "rtol")):
                raise Fail("error", "setup", f"{a.protocol}: field 'tolerance.{dt}' missing or not {{\"atol\", \"rtol\"}} >= 0")
            tol[dt] = {"atol": float(t["atol"]), "rtol": float(t["rtol"])}
    p["tolerance"] = tol
    if (p["random_trials"] < 1 or p["timed"] < 3 or p["warmup"] < 0 or p["input_copies"] < 1 or
            p["l2_flush_factor"] < 1 or p["max_spread"] <= 0 or p["spread_repeats"] < 0 or p["ref_slowdown_limit"] < 1):
        raise Fail("error", "setup", "bad protocol: random_trials >= 1, timed >= 3, warmup >= 0, input_copies >= 1, "
                                     "l2_flush_factor >= 1, max_spread > 0, spread_repeats >= 0, ref_slowdown_limit >= 1")
    return p


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def set_seed(torch, seed):
    """KernelBench's set_seed: both the CPU and the CUDA generators."""
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)


def urandom_seed():
    return int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)


def to_cuda(torch, xs):
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]


def as_list(torch, out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise Fail("incorrect", "correct_random", f"forward returned {type(out).__name__}, not tensors")


def numeric_flags(torch):
    b = torch.backends
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "matmul.allow_tf32": b.cuda.matmul.allow_tf32, "cudnn.allow_tf32": b.cudnn.allow_tf32,
            "fp16_reduced": b.cuda.matmul.allow_fp16_reduced_precision_reduction,
            "bf16_reduced": b.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "cudnn.enabled": b.cudnn.enabled, "cudnn.benchmark": b.cudnn.benchmark,
            "cudnn.deterministic": b.cudnn.deterministic,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


def set_numeric_flags(torch, f):
    """Applies a numeric_flags() dict (precision first: it also sets matmul.allow_tf32)."""
    b = torch.backends
    torch.set_float32_matmul_precision(f["float32_matmul_precision"])
    b.cuda.matmul.allow_tf32 = f["matmul.allow_tf32"]
    b.cudnn.allow_tf32 = f["cudnn.allow_tf32"]
    b.cuda.matmul.allow_fp16_reduced_precision_reduction = f["fp16_reduced"]
    b.cuda.matmul.allow_bf16_reduced_precision_reduction = f["bf16_reduced"]
    b.cudnn.enabled = f["cudnn.enabled"]
    b.cudnn.benchmark = f["cudnn.benchmark"]
    b.cudnn.deterministic = f["cudnn.deterministic"]
    torch.use_deterministic_algorithms(f["deterministic_algorithms"])


# Settings that only choose among algorithms of the same precision: what the candidate sets
# applies to the reference too (cudnn.benchmark = True measures cuDNN's fastest algorithm on
# both sides, so the flag alone buys nothing). Every other numeric setting (TF32, reduced-
# precision reductions, matmul precision, cuDNN on/off, determinism) is reset to the
# protocol's values around every reference call: the candidate's results under its own
# settings must still pass the tolerance.
MIRRORED_FLAGS = ("cudnn.benchmark",)


class RefSettings:
    """Around every reference call (outside the timed region): the protocol's numeric settings,
    with the mirrored ones taken from the candidate's current choice; the candidate's settings
    are put back afterwards."""

    def __init__(self, torch, baseline):
        self.torch, self.baseline = torch, dict(baseline)

    def __enter__(self):
        self.saved = numeric_flags(self.torch)
        want = dict(self.baseline)
        for k in MIRRORED_FLAGS:
            want[k] = self.saved[k]
        if want != self.saved:
            set_numeric_flags(self.torch, want)
        return self

    def __exit__(self, *exc):
        if numeric_flags(self.torch) != self.saved:
            set_numeric_flags(self.torch, self.saved)
        return False


def namespace_ids(torch):
    import torch.nn.functional as F
    ids = {}
    spaces = (("torch", torch), ("F", F), ("Tensor", torch.Tensor), ("nn.Module", torch.nn.Module),
              ("time", time), ("os", os), ("json", json))
    for tag, ns in spaces:
        for k in dir(ns):
            if k.startswith("_"):  # dunders are rebuilt on access; private names are not API
                continue
            try:
                ids[f"{tag}.{k}"] = id(getattr(ns, k))
            except Exception:
                continue
    ids["torch.cuda.synchronize"] = id(torch.cuda.synchronize)
    for k in dir(torch.nn):
        cls = getattr(torch.nn, k, None)
        if isinstance(cls, type) and hasattr(cls, "forward"):
            ids[f"nn.{k}.forward"] = id(cls.__dict__.get("forward", cls.forward))
    return ids


class Integrity:
    """torch's functions (and time's, os's, json's) must stay the ones the worker started with.
    Numeric settings are not checked here: RefSettings keeps the reference's fair instead."""

    def __init__(self, torch, profiler=False):
        self.torch = torch
        if profiler:  # --require-kernel, --profile: the profiler imports torch._dynamo, which rebinds torch.manual_seed
            try:
                import torch._dynamo, torch.profiler  # noqa: F401,E401
            except Exception:
                pass
        self.ids = namespace_ids(torch)

    def check(self, res, phase):
        ids = namespace_ids(self.torch)
        changed = [k for k, v in self.ids.items() if k in ids and ids[k] != v]
        if changed:
            raise Fail("cheat", "global_state",
                       f"{phase}: attributes of torch, time, os or json replaced: {', '.join(sorted(changed)[:5])}")
        res.passed("global_state")


def dtype_key(torch, dt):
    """The protocol's tolerance entry for a floating dtype (float64 and others: f32's)."""
    return {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}.get(dt, "f32")


def compare(torch, got, ref, tol, what, check, res):
    """Elementwise tolerance against the reference output (the rule of docs/kernel-env.md)."""
    if got.shape != ref.shape:
        raise Fail("incorrect", check, f"{what}: shape {tuple(got.shape)}, reference {tuple(ref.shape)}")
    if got.dtype != ref.dtype:
        raise Fail("incorrect", check, f"{what}: dtype {got.dtype}, reference {ref.dtype}")
    if got.device != ref.device:
        raise Fail("incorrect", check, f"{what}: on {got.device}, reference on {ref.device}")
    if not ref.is_floating_point():
        bad = (got != ref).sum().item()
        if bad:
            raise Fail("incorrect", check, f"{what}: {bad} elements differ (exact dtype)")
        return
    t = tol[dtype_key(torch, ref.dtype)]
    g, r = got.double().reshape(-1), ref.double().reshape(-1)
    nan_r, inf_r = torch.isnan(r), torch.isinf(r)
    if not torch.equal(torch.isnan(g), nan_r):
        i = int(torch.nonzero(torch.isnan(g) != nan_r)[0])
        raise Fail("incorrect", check, f"{what}: element {i} = {g[i].item()}, reference {r[i].item()} (NaN mismatch)")
    if not torch.equal(g[inf_r], r[inf_r]) or torch.isinf(g[~inf_r]).any():
        raise Fail("incorrect", check, f"{what}: infinities differ from the reference")
    fin = ~(nan_r | inf_r)
    if not fin.any():
        return
    gf, rf = g[fin], r[fin]
    scale = rf.pow(2).mean().sqrt().item() or 1.0
    diff = (gf - rf).abs()
    allowed = t["atol"] * scale + t["rtol"] * rf.abs()
    ratio = torch.where(diff == 0, torch.zeros_like(diff), diff / allowed)
    worst = ratio.max().item()
    res.d["max_err_ratio"] = max(res.d["max_err_ratio"], worst)
    res.d["max_abs_err"] = max(res.d["max_abs_err"], diff.max().item())
    if worst > 1:
        i = int(ratio.argmax())
        raise Fail("incorrect", check, f"{what}: element {i} = {gf[i].item():.9g}, reference {rf[i].item():.9g} "
                                       f"(error {worst:.3g} x tolerance)")


def same_bits(torch, a, b):
    """Bitwise equality (NaN payloads and signed zeros included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.contiguous().view(-1).view(torch.uint8), b.contiguous().view(-1).view(torch.uint8))


def signed(torch, xs, gen_scale):
    """The adversarial draw: floating inputs mapped from [0, 1) to [-2, 2) * scale."""
    return [4.0 * (x - 0.5) * gen_scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]


def finite(torch, outs):
    return all(not o.is_floating_point() or bool(torch.isfinite(o).all()) for o in outs)


def wall_run(sync, fn, flush, settings=None):
    """sync is torch.cuda.synchronize as bound before the candidate was imported; settings (a
    RefSettings, for the reference) is entered before the clock starts and left after it stops."""
    if settings is not None:
        settings.__enter__()
    try:
        flush.fill_(1.0)
        sync()
        t0 = perf_counter()
        out = fn()
        sync()
        return (perf_counter() - t0) * 1e3, out
    finally:
        if settings is not None:
            settings.__exit__(None, None, None)


def stats(ts):
    ts = sorted(ts)
    q = lambda f: ts[min(len(ts) - 1, int(f * (len(ts) - 1) + 0.5))]
    return {"median": q(0.5), "p10": q(0.1), "p90": q(0.9), "n": len(ts)}


def build_only(a, res):
    """Imports the candidate with no GPU needed, so that its load_inline extensions are built
    (into TORCH_EXTENSIONS_DIR) before a GPU is taken. A build failure is compile_error; any
    other import failure is no verdict here (the candidate may need the GPU at import): status
    ok with the reason in "build_note", and the GPU run will judge it. Where its seconds went:
    "build_phases" (import: torch's; build: the candidate's import, load_inline's build in it;
    check: the light build's kernel check)."""
    ph = Phases()
    try:
        build_phases(a, res, ph)
    finally:
        ph.mark("check" if "build" in ph.d else "build")
        res.d["build_phases"] = ph.d


def build_phases(a, res, ph):
    try:
        import torch  # noqa: F401
    except Exception as e:
        raise Fail("error", "setup", f"PyTorch cannot be imported by {sys.executable} ({type(e).__name__}: {e})")
    ph.mark("import")
    if a.drop_build:  # the light build's CUDA objects and modules go: ninja builds them again
        import kb_kernelcheck
        kb_kernelcheck.drop_builds(kb_kernelcheck.objects(os.environ.get("TORCH_EXTENSIONS_DIR") or ""))
    if a.light_check:  # the host passes' light torch/types.h: the operators the text names
        import kb_hostops
        res.d["light_host"] = kb_hostops.for_build(a.cand)
    try:
        load_module(a.cand, "rl_kb_candidate")
    except Exception as e:
        text = f"{type(e).__name__}: {str(e)[-1500:]}"
        if "Error building extension" in str(e) or type(e).__name__ in ("CalledProcessError", "SyntaxError"):
            raise Fail("compile_error", "setup", text)
        res.d["build_note"] = text[-300:]
    ph.mark("build")
    if a.light_check:  # nvcc's device pass had the stand-in: the kernels must be the host's
        import kb_kernelcheck  # the candidate's own directory too: a build_directory= there
        names = kb_kernelcheck.check_and_drop([os.environ.get("TORCH_EXTENSIONS_DIR"), os.path.dirname(os.path.abspath(a.cand))])
        if names:
            res.d["light_mismatch"] = names
            raise Fail("compile_error", "setup", "the light headers' device pass lacks kernels the host code launches: "
                       + ", ".join(names)[:600])
    res.passed("setup")


def run(a, res, proto):
    ph = Phases()
    try:
        run_phases(a, res, proto, ph)
    finally:
        ph.mark("post")
        if getattr(ph, "lock", None) is not None:
            ph.d["lock_wait"] = round(ph.lock.wait, 3)
        res.d["phases"] = ph.d


def run_phases(a, res, proto, ph):
    try:
        import torch
    except Exception as e:  # ImportError, or OSError from a broken CUDA install
        raise Fail("error", "setup", f"PyTorch cannot be imported by {sys.executable} ({type(e).__name__}: {e}); "
                                     "KernelBench tasks need a Python with torch (rlc kernel-eval --python PATH)")
    try:  # torch's extension builder, which a load_inline candidate imports first thing: loaded here,
        # before the GPU lock, its import is not work done while a timed run waits for the lock
        with open(a.cand, encoding="utf-8", errors="replace") as f:
            if "cpp_extension" in f.read():
                import torch.utils.cpp_extension  # noqa: F401
    except Exception:
        pass  # the candidate's own import of it decides
    ph.mark("import")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    lock = GpuLock(a.gpu_lock)
    ph.lock = lock
    lock.shared()
    if not torch.cuda.is_available():
        raise Fail("error", "setup", "no CUDA device")
    sync = torch.cuda.synchronize
    props = torch.cuda.get_device_properties(0)
    res.d["device"], res.d["l2_bytes"] = props.name, props.L2_cache_size
    flush = torch.empty(max(int(proto["l2_flush_factor"] * props.L2_cache_size), 1 << 20) // 4,
                        device="cuda")
    tol = proto["tolerance"]
    if a.atol is not None or a.rtol is not None:
        for t in tol.values():
            t["atol"] = a.atol if a.atol is not None else t["atol"]
            t["rtol"] = a.rtol if a.rtol is not None else t["rtol"]

    # 1. reference side, before the candidate exists
    try:
        ref_mod = load_module(a.ref, "rl_kb_reference")
        init_inputs = to_cuda(torch, ref_mod.get_init_inputs())
        init_seed = a.seed if a.seed is not None else 42
        set_seed(torch, init_seed)
        ref_model = ref_mod.Model(*init_inputs).cuda()  # default (training) mode, as KernelBench runs it
    except Exception as e:
        raise Fail("error", "setup", f"reference {a.ref}: {type(e).__name__}: {e}")

    def draw(kind):
        set_seed(torch, urandom_seed())
        with torch.device("cuda"):  # get_inputs()'s torch.randn(...) draws on the device
            xs = to_cuda(torch, ref_mod.get_inputs())
        if kind == "signed":
            xs = signed(torch, xs, 1.0 + torch.rand(()).item() * 3)
        return xs

    ref_ctx = RefSettings(torch, numeric_flags(torch))

    def ref_call(xs):
        with torch.no_grad(), ref_ctx:
            out = as_list(torch, ref_model(*xs))
        return [o.clone() for o in out]

    def stash(ts):
        """Stored trials move to host memory when they are large (KernelBench inputs reach GBs)."""
        big = sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor)) > STASH_BYTES
        return [t.cpu() if big and isinstance(t, torch.Tensor) else t for t in ts]

    trials = []
    try:
        for k in range(proto["random_trials"]):
            xs = draw("random")
            trials.append(("random", stash(xs), stash(ref_call(xs))))
        xs = draw("signed")
        outs = ref_call(xs)
        if finite(torch, outs) or not finite(torch, trials[0][2]):
            trials.append(("signed", stash(xs), stash(outs)))
        first = to_cuda(torch, trials[0][1])
        lock.exclusive(sync)
        with torch.no_grad():
            solo = [wall_run(sync, lambda: ref_model(*first), flush, ref_ctx)[0]
                    for _ in range(proto["warmup"] + max(5, proto["timed"] // 3))][proto["warmup"]:]
        lock.shared()
        solo_median = stats(solo)["median"]
    except Exception as e:
        raise Fail("error", "setup", f"reference run: {type(e).__name__}: {e}")
    del first
    torch.cuda.synchronize()
    guard = Integrity(torch, a.require_kernel or a.profile)
    ph.mark("setup")  # the GPU's context, the reference, its outputs and its solo timing

    # 2. candidate
    try:
        cand_mod = load_module(a.cand, "rl_kb_candidate")
        set_seed(torch, init_seed)
        model = cand_mod.ModelNew(*init_inputs).cuda()
        rsd, csd = ref_model.state_dict(), model.state_dict()
        if rsd and rsd.keys() == csd.keys() and all(rsd[k].shape == csd[k].shape for k in rsd):
            model.load_state_dict(rsd)
        torch.cuda.synchronize()
    except Fail:
        raise
    except Exception as e:
        raise Fail("compile_error", "setup", f"{type(e).__name__}: {str(e)[-1500:]}")
    res.passed("setup")
    guard.check(res, "after building ModelNew")
    ph.mark("candidate")  # its import (load_inline finds the build done) and ModelNew

    kept = []  # the previous call's outputs, kept alive so that their addresses cannot be reused

    def cand_call(xs, what, check):
        before = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]
        try:
            with torch.no_grad():
                out = as_list(torch, model(*xs))
            torch.cuda.synchronize()
        except Fail:
            raise
        except Exception as e:
            raise Fail("crash", "return_code", f"{what}: {type(e).__name__}: {str(e)[-800:]}")
        res.passed("return_code")
        for x, b in zip(xs, before):
            if isinstance(x, torch.Tensor) and not same_bits(torch, x, b):
                raise Fail("cheat", "inputs_unchanged", f"{what}: an input was modified")
        res.passed("inputs_unchanged")
        in_ptrs = {x.untyped_storage().data_ptr() for x in xs if isinstance(x, torch.Tensor)}
        old_ptrs = {o.untyped_storage().data_ptr() for o in kept}
        for o in out:
            p = o.untyped_storage().data_ptr()
            if p in in_ptrs:
                raise Fail("cheat", "fresh_output", f"{what}: the output shares storage with an input")
            if p in old_ptrs:
                raise Fail("cheat", "fresh_output", f"{what}: the output is a tensor returned by an earlier call")
        res.passed("fresh_output")
        kept[:] = out
        return out

    # 3. correctness
    for n in range(len(trials)):
        kind, xs, ref_out = trials[n]
        trials[n] = None  # one trial on the device at a time
        xs, ref_out = to_cuda(torch, xs), to_cuda(torch, ref_out)
        check = "correct_adversarial" if kind == "signed" else "correct_random"
        out = cand_call(xs, f"trial {n + 1} ({kind})", check)
        res.d["trials"] += 1
        if len(out) != len(ref_out):
            raise Fail("incorrect", check, f"trial {n + 1}: {len(out)} outputs, reference {len(ref_out)}")
        for i, (o, r) in enumerate(zip(out, ref_out)):
            compare(torch, o, r, tol, f"trial {n + 1} ({kind}) output {i}", check, res)
        res.passed(check)
    guard.check(res, "after the correctness trials")
    trials.clear()
    if a.require_kernel:
        # The "no fallback" rule, judged by what ran: one more call under the profiler must
        # launch at least one kernel that the candidate's own code defines.
        xs = draw("random")
        with torch.no_grad():
            ran = {k["name"] for k in kernel_times(torch, sync, lambda: model(*xs))
                   if not k["name"].startswith(("Memcpy", "Memset"))}
        own = own_kernel_names(cand_mod, os.environ.get("TORCH_EXTENSIONS_DIR"))
        mine = sorted(k for k in ran if demangled_qualname(k) in own)
        res.d["kernels"] = {"launched": sorted(ran)[:20], "own": mine[:20]}
        if not mine:
            raise Fail("disallowed", "own_kernel", f"ModelNew launched no kernel of its own (only {len(ran)} of "
                                                   f"PyTorch's: {', '.join(sorted(ran)[:4]) or 'none'})")
        res.passed("own_kernel")
        del xs
    kept.clear()
    ph.mark("correctness")

    if a.check_only:
        return

    # 4. timing: every iteration (warm-up included) draws fresh inputs on the device, outside
    # the timed region, and runs the reference on the same inputs; every candidate output is
    # compared with that iteration's reference output. No timed call sees data an earlier call
    # saw, so a ModelNew that memoises outputs keyed on its inputs' content misses every time.
    def timing_round():
        tr, tc = [], []
        for i in range(proto["warmup"] + proto["timed"]):
            xs = draw("random")
            before = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]
            t_ref, ref_out = wall_run(sync, lambda: ref_model(*xs), flush, ref_ctx)
            ref_out = as_list(torch, ref_out)
            try:
                t_cand, out = wall_run(sync, lambda: model(*xs), flush)
            except Exception as e:
                raise Fail("crash", "return_code", f"timed run {i}: {type(e).__name__}: {str(e)[-800:]}")
            out = as_list(torch, out)
            if len(out) != len(ref_out):
                raise Fail("incorrect", "timed_outputs", f"timed run {i}: {len(out)} outputs, reference {len(ref_out)}")
            for j, (o, r) in enumerate(zip(out, ref_out)):
                compare(torch, o, r, tol, f"timed run {i} output {j}", "timed_outputs", res)
            for x, b in zip(xs, before):
                if isinstance(x, torch.Tensor) and not same_bits(torch, x, b):
                    raise Fail("cheat", "inputs_unchanged", f"timed run {i}: an input was modified")
            if i >= proto["warmup"]:
                tr.append(t_ref)
                tc.append(t_cand)
        return stats(tr), stats(tc)

    def spread(s):
        return (s["p90"] - s["p10"]) / s["median"]

    lock.exclusive(sync)
    with torch.no_grad():
        ref_s, cand_s = timing_round()
        noisy = max(spread(ref_s), spread(cand_s)) > proto["max_spread"]
        for _ in range(proto["spread_repeats"]):
            if not noisy:
                break
            ref_s, cand_s = timing_round()
            noisy = max(spread(ref_s), spread(cand_s)) > proto["max_spread"]
    lock.shared()
    ph.mark("timing")
    res.passed("timed_outputs")
    res.d.update(ref_ms=ref_s, cand_ms=cand_s, speedup=ref_s["median"] / cand_s["median"], noisy=noisy,
                 ref_solo_ms=solo_median)
    if (ref_s["median"] > proto["ref_slowdown_limit"] * solo_median and
            ref_s["median"] - solo_median > proto["ref_slowdown_min_ms"]):
        # The reference ran slower beside the candidate than alone. Timing noise can do that
        # too, so it is no verdict: the result is marked noisy, which caps the rewarded speedup
        # at 1 (docs/kernel-env.md), and whatever slowed the reference buys nothing.
        res.d["noisy"] = True
        res.d["checks"]["reference_speed"] = "fail"
    else:
        res.passed("reference_speed")
    guard.check(res, "after timing")

    # 5. once more on new inputs
    xs = draw("random")
    ref_out = ref_call(xs)
    out = cand_call(xs, "after timing", "correct_after_timing")
    for i, (o, r) in enumerate(zip(out, ref_out)):
        compare(torch, o, r, tol, f"after timing output {i}", "correct_after_timing", res)
    res.passed("correct_after_timing")
    guard.check(res, "at the end")
    if a.profile:  # 6. the profile tool: one more call a side, alone on the GPU; no verdict
        xs, prof = draw("random"), {}
        lock.exclusive(sync)
        try:
            with torch.no_grad():
                prof["candidate"] = kernel_times(torch, sync, lambda: model(*xs))
                with ref_ctx:
                    prof["reference"] = kernel_times(torch, sync, lambda: ref_model(*xs))
        except Exception as e:
            prof = {"error": f"{type(e).__name__}: {str(e)[-200:]}"}
        lock.shared()
        res.d["profile"] = prof


def json_safe(x):
    """JSON has no NaN or infinity: such numbers become null (rlc then rejects an "ok" without them)."""
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    if isinstance(x, (dict, list)):
        return {k: json_safe(v) for k, v in x.items()} if isinstance(x, dict) else [json_safe(v) for v in x]
    return x


def main():
    ap = argparse.ArgumentParser(description="Score a KernelBench candidate (ModelNew) against its problem (Model).")
    ap.add_argument("--ref", required=True)
    ap.add_argument("--cand", required=True)
    ap.add_argument("--protocol", default=os.path.join(HERE, "protocol.json"),
                    help="parameters that no flag gives (default: protocol.json beside this file)")
    ap.add_argument("--trials", type=int, help="random correctness trials (protocol: random_trials)")
    ap.add_argument("--timed", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--copies", type=int, help="protocol: input_copies")
    ap.add_argument("--flush-factor", type=float, help="protocol: l2_flush_factor")
    ap.add_argument("--max-spread", type=float)
    ap.add_argument("--spread-repeats", type=int)
    ap.add_argument("--ref-slowdown-limit", type=float)
    ap.add_argument("--ref-slowdown-min-ms", type=float)
    ap.add_argument("--tol", nargs=3, action="append", metavar=("DTYPE", "ATOL", "RTOL"),
                    help="default tolerance of a dtype (f32, f16, bf16, i32); repeat for each")
    ap.add_argument("--atol", type=float, help="override every dtype's atol")
    ap.add_argument("--rtol", type=float, help="override every dtype's rtol")
    ap.add_argument("--seed", type=int, help="KernelBench init seed for Model and ModelNew (default 42)")
    ap.add_argument("--nonce-stdin", action="store_true")
    ap.add_argument("--build-only", action="store_true",
                    help="import the candidate (its load_inline extensions build) and stop; needs no GPU")
    ap.add_argument("--light-check", action="store_true",
                    help="with --build-only: the device pass had kb_light's stand-in; fail when its kernels "
                         "differ from the host's (kb_kernelcheck.py)")
    ap.add_argument("--drop-build", action="store_true",
                    help="with --build-only: remove the CUDA objects and modules of TORCH_EXTENSIONS_DIR first "
                         "(a light build whose kernels failed to launch)")
    ap.add_argument("--check-only", action="store_true", help="correctness trials only, no timing")
    ap.add_argument("--profile", action="store_true", help="then each side's GPU kernels with their times")
    ap.add_argument("--gpu-lock", help="the GPU's lock file: correctness shared, timing exclusive")
    ap.add_argument("--require-kernel", action="store_true",
                    help="ModelNew must launch at least one GPU kernel its own code defines")
    a = ap.parse_args()
    nonce = sys.stdin.readline().strip() if a.nonce_stdin else None
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    out_fd = os.dup(1)
    os.dup2(2, 1)  # the candidate's prints go to stderr
    res = Result(nonce)
    try:
        if a.build_only:
            build_only(a, res)
        else:
            run(a, res, protocol(a))
    except Fail as f:
        res.fail(f)
    except Exception as e:
        traceback.print_exc()
        res.fail(Fail("crash", "return_code", f"{type(e).__name__}: {str(e)[-800:]}"))
    os.write(out_fd, (json.dumps(json_safe(res.d), separators=(",", ":")) + "\n").encode())
    sys.stderr.flush()
    os._exit(0)  # no interpreter shutdown: a candidate's threads or atexit hooks must not hang the exit


if __name__ == "__main__":
    main()
