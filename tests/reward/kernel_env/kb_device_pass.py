#!/usr/bin/env python3
"""kb_device_pass.py — nvcc's device pass of KernelBench CUDA text against kb_light's stand-in
for torch/types.h (src/reward/kernel_env/kb_light/rlc/device_torch.h; docs/kernel-env.md,
"Throughput"). Every CUDA source of tests/fixtures/kernelbench/candidates/ (the cuda_src of
those using load_inline) and of tests/fixtures/kernelbench/device_pass/ is written as
load_inline writes it (torch/types.h, cuda.h, cuda_runtime.h first) and compiled by the device
pass alone (nvcc --cubin, one -gencode) with -I<kb_light> first, as the build-only run gets it.
Each must compile. With --compare, each is compiled with torch's headers too (its own
torch/extension.h) and the kernels of the two cubins (their global functions, read by
readelf) must be the same, except in a source whose name says light_mismatch (made to differ:
they must differ there).

    python3 tests/reward/kernel_env/kb_device_pass.py [--compare] [--arch 90a] [--jobs N]
        [--torch-include DIR] [--out DIR]
Torch's headers: --torch-include DIR (a torch/include directory), else $RLC_TORCH_INCLUDE, else
~/.cache/rlc-torch-headers/torch/include (scripts/torch-headers.sh), else the torch Python imports.
None found: prints why and exits 77 (test_kb_light.c skips). Needs nvcc and readelf. Exits 0
when all hold, 1 with the failures."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
KB_LIGHT = os.path.join(ROOT, "src", "reward", "kernel_env", "kb_light")
FIX = os.path.join(ROOT, "tests", "fixtures", "kernelbench")
PRELUDE = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"  # load_inline's
SKIP = 77


def torch_include(given):
    cache = os.path.join(os.path.expanduser("~"), ".cache", "rlc-torch-headers", "torch", "include")
    for d in (given, os.environ.get("RLC_TORCH_INCLUDE"), cache):
        if d and os.path.exists(os.path.join(d, "torch", "csrc", "api", "include", "torch", "types.h")):
            return d
    try:
        import torch.utils.cpp_extension as ce
        return ce.include_paths()[0]
    except Exception:
        return None


def sources():
    """(name, CUDA text) of every fixture, as load_inline would write cuda.cu."""
    out = []
    for path in sorted(glob.glob(os.path.join(FIX, "candidates", "*.py"))):
        text = open(path).read()
        for i, m in enumerate(re.finditer(r'cuda_src = r"""(.*?)"""', text, re.S)):
            out.append((f"{os.path.basename(path)[:-3]}{'-%d' % i if i else ''}", PRELUDE + m.group(1)))
    for path in sorted(glob.glob(os.path.join(FIX, "device_pass", "*.cu"))):
        out.append((os.path.basename(path)[:-3], PRELUDE + open(path).read()))
    return out


def kernels(cubin):
    """The global functions of a cubin (its kernels), sorted."""
    p = subprocess.run(["readelf", "-sW", cubin], capture_output=True, text=True)
    names = set()
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL":
            names.add(f[-1])
    return sorted(names)


def arg_parser(doc, out_help):
    """The options both header checks take (this one and kb_host_pass.py)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--arch", default="90a")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--torch-include")
    ap.add_argument("--out", help=out_help)
    return ap


def load_inline_flags(inc, ext_name, arch):
    """load_inline's CUDA flags (torch.utils.cpp_extension, torch 2.11) for torch's headers in inc."""
    return ["-isystem", inc, "-isystem", os.path.join(inc, "torch", "csrc", "api", "include"),
            "-isystem", sysconfig.get_paths()["include"], f"-DTORCH_EXTENSION_NAME={ext_name}",
            "-DTORCH_API_INCLUDE_EXTENSION_H", "-D_GLIBCXX_USE_CXX11_ABI=1", "-D__CUDA_NO_HALF_OPERATORS__",
            "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
            "--expt-relaxed-constexpr", "-std=c++17", "-Xcompiler", "-fPIC",
            f"-gencode=arch=compute_{arch},code=sm_{arch}"]


def main():
    ap = arg_parser(__doc__, "keep the sources and cubins here")
    ap.add_argument("--compare", action="store_true", help="also with torch's headers: the same kernels")
    a = ap.parse_args()
    nvcc = shutil.which("nvcc")
    inc = torch_include(a.torch_include)
    if not nvcc or not inc:
        print(f"kb_device_pass: skipped: {'no nvcc on PATH' if not nvcc else 'no torch headers'} "
              "(--torch-include, RLC_TORCH_INCLUDE, scripts/torch-headers.sh or a Python with torch)")
        return SKIP
    work = a.out or tempfile.mkdtemp(prefix="rlc-kb-device-pass-")
    os.makedirs(work, exist_ok=True)
    # load_inline's CUDA flags (torch.utils.cpp_extension, torch 2.11), the device pass only
    flags = load_inline_flags(inc, "rl_device_pass", a.arch) + ["--cubin"]
    jobs = []
    for name, text in sources():
        src = os.path.join(work, name + ".cu")
        with open(src, "w") as f:
            f.write(text)
        jobs.append((name, "light", [nvcc, "-I" + KB_LIGHT] + flags + [src, "-o", os.path.join(work, name + ".light.cubin")]))
        if a.compare:
            jobs.append((name, "torch", [nvcc] + flags + [src, "-o", os.path.join(work, name + ".torch.cubin")]))

    def run(job):
        t = time.monotonic()
        p = subprocess.run(job[2], capture_output=True, text=True)
        return job[0], job[1], p.returncode, time.monotonic() - t, (p.stderr or p.stdout)[-1500:]
    with ThreadPoolExecutor(max(1, a.jobs)) as ex:
        done = list(ex.map(run, jobs))
    bad, rc = 0, {}
    for name, kind, code, secs, err in done:
        rc[(name, kind)] = code
        print(f"{name:<28} {kind:<6} {'ok' if code == 0 else 'FAILED'} {secs:6.1f} s")
        if code:
            bad += 1
            print("  " + err.strip().replace("\n", "\n  "))
    if a.compare:
        for name, _ in sources():
            if rc.get((name, "light")) or rc.get((name, "torch")):
                continue
            light = kernels(os.path.join(work, name + ".light.cubin"))
            real = kernels(os.path.join(work, name + ".torch.cubin"))
            differ = "light_mismatch" in name
            same = light == real and bool(real)
            if same == differ:
                bad += 1
                print(f"{name}: kernels {'the same, made to differ' if same else 'differ'}: light {light}, torch {real}")
            else:
                print(f"{name:<28} {len(real)} kernels, {'differ as made to' if differ else 'the same'}")
    print(f"kb_device_pass: {len(jobs)} compiles, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
