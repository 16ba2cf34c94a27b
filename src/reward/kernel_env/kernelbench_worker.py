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
 4. Timing: K input copies rotated (no run reuses the previous run's inputs), reference outputs
    for each; warm-up; N runs per side interleaved ref, cand, ...; before every run a 2x-L2
    buffer is written and the whole device synchronized; a run's time is host wall time to the
    end of torch.cuda.synchronize() after it (work on any stream counts). Every timed candidate
    output is checked against its copy's reference. Median, p10, p90; if (p90 - p10) / median
    exceeds max_spread on either side the round is repeated (up to spread_repeats times), then
    `noisy` is set. If the reference's interleaved median exceeds ref_slowdown_limit times its
    solo median (and by ref_slowdown_min_ms; something slowing the reference down, or noise),
    `noisy` is set too, which caps the rewarded speedup at 1.
 5. Integrity: torch's global numeric flags (TF32, reduced-precision reductions, matmul
    precision) and the identity of torch / torch.nn.functional / torch.Tensor attributes are
    snapshotted before the import and checked after every phase (a candidate that patches them
    to change the reference's results or speed is a cheat); so are time's, os's and json's and
    torch.cuda.synchronize. The clock and the synchronize that timing calls are bound before the
    import, so patching time.perf_counter or torch.cuda.synchronize changes no time; a patch
    that undoes itself between checks is what rlc's static checks stop (no sys, gc, frames,
    getattr/setattr, exec, time, open... in a candidate). Then correctness once more on new
    inputs."""
import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from time import perf_counter  # bound before the candidate is imported: patching time.perf_counter misses it

HERE = os.path.dirname(os.path.abspath(__file__))
# protocol.json key -> (flag destination, type); tolerances come as --tol DTYPE ATOL RTOL.
PARAMS = {"random_trials": ("trials", int), "timed": ("timed", int), "warmup": ("warmup", int),
          "input_copies": ("copies", int), "l2_flush_factor": ("flush_factor", float),
          "max_spread": ("max_spread", float), "spread_repeats": ("spread_repeats", int),
          "ref_slowdown_limit": ("ref_slowdown_limit", float),
          "ref_slowdown_min_ms": ("ref_slowdown_min_ms", float)}
DTYPES = ("f32", "f16", "bf16", "i32")
STASH_BYTES = 1 << 30
CHECKS = ["setup", "return_code", "correct_random", "correct_adversarial", "inputs_unchanged", "fresh_output",
          "global_state", "timed_outputs", "reference_speed", "correct_after_timing"]


class Fail(Exception):
    """A candidate failure: status (incorrect, cheat, crash, compile_error, error), check, message."""

    def __init__(self, status, check, msg):
        super().__init__(msg)
        self.status, self.check, self.msg = status, check, msg


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
    return {"matmul.allow_tf32": b.cuda.matmul.allow_tf32, "cudnn.allow_tf32": b.cudnn.allow_tf32,
            "fp16_reduced": b.cuda.matmul.allow_fp16_reduced_precision_reduction,
            "bf16_reduced": b.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cudnn.enabled": b.cudnn.enabled}


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
    def __init__(self, torch):
        self.torch = torch
        self.flags = numeric_flags(torch)
        self.ids = namespace_ids(torch)

    def check(self, res, phase):
        flags = numeric_flags(self.torch)
        for k, v in self.flags.items():
            if flags[k] != v:
                raise Fail("cheat", "global_state", f"{phase}: torch setting {k} changed from {v} to {flags[k]}")
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


def wall_run(sync, fn, flush):
    """sync is torch.cuda.synchronize as bound before the candidate was imported."""
    flush.fill_(1.0)
    sync()
    t0 = perf_counter()
    out = fn()
    sync()
    return (perf_counter() - t0) * 1e3, out


def stats(ts):
    ts = sorted(ts)
    q = lambda f: ts[min(len(ts) - 1, int(f * (len(ts) - 1) + 0.5))]
    return {"median": q(0.5), "p10": q(0.1), "p90": q(0.9), "n": len(ts)}


def run(a, res, proto):
    try:
        import torch
    except Exception as e:  # ImportError, or OSError from a broken CUDA install
        raise Fail("error", "setup", f"PyTorch cannot be imported by {sys.executable} ({type(e).__name__}: {e}); "
                                     "KernelBench tasks need a Python with torch (rlc kernel-eval --python PATH)")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
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
        xs = to_cuda(torch, ref_mod.get_inputs())
        if kind == "signed":
            xs = signed(torch, xs, 1.0 + torch.rand(()).item() * 3)
        return xs

    def ref_call(xs):
        with torch.no_grad():
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
        with torch.no_grad():
            solo = [wall_run(sync, lambda: ref_model(*first), flush)[0]
                    for _ in range(proto["warmup"] + max(5, proto["timed"] // 3))][proto["warmup"]:]
        solo_median = stats(solo)["median"]
    except Exception as e:
        raise Fail("error", "setup", f"reference run: {type(e).__name__}: {e}")
    del first
    torch.cuda.synchronize()
    guard = Integrity(torch)

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
    kept.clear()

    # 4. timing
    copies = []
    for _ in range(proto["input_copies"]):
        xs = draw("random")
        copies.append((xs, ref_call(xs)))
        free, _ = torch.cuda.mem_get_info()
        need = sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))
        if free < 4 * need:
            break

    def timing_round():
        tr, tc = [], []
        for i in range(proto["warmup"] + proto["timed"]):
            xs, ref_out = copies[i % len(copies)]
            t_ref, _ = wall_run(sync, lambda: ref_model(*xs), flush)
            try:
                t_cand, out = wall_run(sync, lambda: model(*xs), flush)
            except Exception as e:
                raise Fail("crash", "return_code", f"timed run {i}: {type(e).__name__}: {str(e)[-800:]}")
            out = as_list(torch, out)
            for j, (o, r) in enumerate(zip(out, ref_out)):
                compare(torch, o, r, tol, f"timed run {i} output {j}", "timed_outputs", res)
            if i >= proto["warmup"]:
                tr.append(t_ref)
                tc.append(t_cand)
        return stats(tr), stats(tc)

    def spread(s):
        return (s["p90"] - s["p10"]) / s["median"]

    with torch.no_grad():
        ref_s, cand_s = timing_round()
        noisy = max(spread(ref_s), spread(cand_s)) > proto["max_spread"]
        for _ in range(proto["spread_repeats"]):
            if not noisy:
                break
            ref_s, cand_s = timing_round()
            noisy = max(spread(ref_s), spread(cand_s)) > proto["max_spread"]
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
    copies.clear()
    xs = draw("random")
    ref_out = ref_call(xs)
    out = cand_call(xs, "after timing", "correct_after_timing")
    for i, (o, r) in enumerate(zip(out, ref_out)):
        compare(torch, o, r, tol, f"after timing output {i}", "correct_after_timing", res)
    res.passed("correct_after_timing")
    guard.check(res, "at the end")


def json_safe(x):
    """JSON has no NaN or infinity: such numbers become null (rlc then rejects an "ok" without them)."""
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [json_safe(v) for v in x]
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
    a = ap.parse_args()
    nonce = sys.stdin.readline().strip() if a.nonce_stdin else None
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    out_fd = os.dup(1)
    os.dup2(2, 1)  # the candidate's prints go to stderr
    res = Result(nonce)
    try:
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
