#!/usr/bin/env python3
"""kb_host_pass.py — nvcc's host passes of KernelBench CUDA text against kb_light's light
torch/types.h for the host (src/reward/kernel_env/kb_light/rlc/host_torch.h: torch's own
declarations, only the operators the text names; docs/kernel-env.md, "Throughput"). Every CUDA
source of tests/fixtures/kernelbench/candidates/ and device_pass/ (kb_device_pass.sources()) is
written as load_inline writes it, its operator list made by kb_hostops.py from its text (a
candidate's whole file, as the worker does) and compiled whole (nvcc -c: cudafe++, the host
compiler and the device pass with the stand-in) with -I<kb_light> -I<operator list>, as the
build-only run gets them. Each must compile with the host passes on the light header (the
source asserts RLC_KB_LIGHT_HOST outside __CUDA_ARCH__), and its object's kernels must be its
host code's (kb_kernelcheck.missing), except a source named light_mismatch (made to differ).
The macros torch/types.h defines and the light header does not (g++ -E -dM of both) must be in
kb_hostops.TORCH_ONLY_MACROS (libstdc++'s own aside), and the light header none but
RLC_KB_LIGHT_HOST that torch's lacks. And a text whose operator the scan cannot see (its name pasted by the preprocessor) must fail
to build, which sends the build to torch's header (kenv.c; test_kenv_kernelbench.c's
light_fails).

    python3 tests/reward/kernel_env/kb_host_pass.py [--arch 90a] [--jobs N] [--torch-include DIR] [--out DIR]
Torch's headers as kb_device_pass.py finds them; none: exits 77 (test_kb_light.c skips). Needs
nvcc, nm and c++filt. Exits 0 when all hold, 1 with the failures."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "src", "reward", "kernel_env"))
import kb_device_pass as dp  # noqa: E402
import kb_hostops  # noqa: E402
import kb_kernelcheck  # noqa: E402

ASSERT = "\n#if !defined(__CUDA_ARCH__) && !defined(RLC_KB_LIGHT_HOST)\n#error \"host pass without rlc/host_torch.h\"\n#endif\n"
ASSERT_TORCH = "\n#if !defined(__CUDA_ARCH__) && defined(RLC_KB_LIGHT_HOST)\n#error \"host pass on rlc/host_torch.h\"\n#endif\n"
HIDDEN = ("hidden_op", dp.PRELUDE + "#define RLC_PASTE(a, b) a##b\n"
          "torch::Tensor f(torch::Tensor x) { return at::RLC_PASTE(sigm, oid)(x); }\n")


def texts():
    """(name, CUDA source, the text the worker scans) of every fixture, and the hidden operator."""
    out = []
    for name, src in dp.sources():
        base = name.split("-")[0]
        py = os.path.join(dp.FIX, "candidates", base + ".py")
        out.append((name, src, open(py).read() if os.path.exists(py) else src))
    return out + [(HIDDEN[0], HIDDEN[1], HIDDEN[1])]


def macros(flags, env_flags, work):
    """The macro names g++ -E -dM gives for #include <torch/types.h> with flags."""
    src = os.path.join(work, "macros.cpp")
    with open(src, "w") as f:
        f.write("#include <torch/types.h>\n")
    p = subprocess.run(["g++", "-E", "-dM", "-std=c++17"] + env_flags + flags + [src], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("g++ -E -dM: " + p.stderr[-800:])
    return {line.split()[1].split("(")[0] for line in p.stdout.splitlines() if line.startswith("#define ")}


def check_macros(inc, work):
    """[] when the macro sets of torch's torch/types.h and the light host header differ only as
    kb_hostops.TORCH_ONLY_MACROS says, else what is wrong."""
    flags = ["-isystem", inc, "-isystem", os.path.join(inc, "torch", "csrc", "api", "include"), "-D_GLIBCXX_USE_CXX11_ABI=1"]
    gen = kb_hostops.write_header(work, [])
    full, light = macros(flags, [], work), macros(flags, ["-I" + dp.KB_LIGHT, "-I" + gen], work)
    lib = re.compile(r"^_(GLIBCXX|STL|LIST)")  # libstdc++'s headers: what the host compiler at hand has
    errs = [f"torch/types.h defines {m}, the light header does not: add it to TORCH_ONLY_MACROS"
            for m in sorted(full - light - kb_hostops.TORCH_ONLY_MACROS) if not lib.match(m)]
    errs += [f"the light header defines {m}, torch/types.h does not" for m in sorted(light - full - {"RLC_KB_LIGHT_HOST"})]
    return errs


def main():
    a = dp.arg_parser(__doc__, "keep the sources and objects here").parse_args()
    nvcc = shutil.which("nvcc")
    inc = dp.torch_include(a.torch_include)
    if not nvcc or not inc or not shutil.which("nm"):
        print(f"kb_host_pass: skipped: {'no nvcc on PATH' if not nvcc else 'no nm' if inc else 'no torch headers'}")
        return dp.SKIP
    work = a.out or tempfile.mkdtemp(prefix="rlc-kb-host-pass-")
    os.makedirs(work, exist_ok=True)
    bad = 0
    for e in check_macros(inc, work):
        bad += 1
        print("kb_host_pass: macros: " + e)
    flags = dp.load_inline_flags(inc, "rl_host_pass", a.arch) + ["-c"]
    jobs, ops = [], {}
    for name, src, scanned in texts():
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        env = dict(os.environ, NVCC_PREPEND_FLAGS="-I" + dp.KB_LIGHT)
        ops[name] = kb_hostops.prepare(scanned, inc, d, env)
        with open(os.path.join(d, "cuda.cu"), "w") as f:  # None: a TORCH_ONLY_MACROS name, torch's header
            f.write(src + (ASSERT if ops[name] is not None else ASSERT_TORCH))
        jobs.append((name, env, [nvcc] + flags + [os.path.join(d, "cuda.cu"), "-o", os.path.join(d, "cuda.cuda.o")]))

    def run(job):
        t = time.monotonic()
        p = subprocess.run(job[2], env=job[1], capture_output=True, text=True)
        return job[0], p.returncode, time.monotonic() - t, (p.stderr or p.stdout)[-1500:]
    with ThreadPoolExecutor(max(1, a.jobs)) as ex:
        done = list(ex.map(run, jobs))
    for name, code, secs, err in done:
        obj = os.path.join(work, name, "cuda.cuda.o")
        if name == HIDDEN[0]:
            ok = code != 0 and "sigmoid" in err
            print(f"{name:<28} {'fails as it must' if ok else 'BUILT (or failed for another reason)'} {secs:6.1f} s")
            bad += not ok
            if not ok:
                print("  " + err.strip().replace("\n", "\n  "))
            continue
        if code:
            bad += 1
            print(f"{name:<28} FAILED {secs:6.1f} s (operators {ops[name]})\n  " + err.strip().replace("\n", "\n  "))
            continue
        miss = kb_kernelcheck.missing(obj)
        differ = "light_mismatch" in name
        if bool(miss) != differ:
            bad += 1
            print(f"{name:<28} kernels {'missing: ' + ', '.join(miss) if miss else 'the same, made to differ'}")
            continue
        print(f"{name:<28} ok {secs:6.1f} s, operators {ops[name]}{', kernels differ as made to' if differ else ''}")
    print(f"kb_host_pass: {len(jobs)} builds, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
