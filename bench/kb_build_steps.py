#!/usr/bin/env python3
"""kb_build_steps.py — where a KernelBench candidate's load_inline build spends its time, and
what the evaluator can cut (issue 13, item 4; docs/kernel-env.md, "Throughput").

A load_inline build with CUDA is three ninja steps: main.cpp (g++, starts with
#include <torch/extension.h>), cuda.cu (nvcc: torch/types.h prepended, and most KernelBench
candidates include torch/extension.h there too) and the link. This script writes the two
sources of a candidate the way load_inline does (default: the CUDA part of
tests/fixtures/kernelbench/candidates/gelu_inline_ok.py), takes load_inline's flags from the
build.ninja of kb_pch.py's probe, and compiles variants side by side (one core each, started
together), printing each one's wall time:

  main.cpp            as load_inline builds it
  main.cpp+pch        with the precompiled torch/extension.h of kb_pch.py (-I<pch>/none first)
  cuda.cu             as load_inline builds it (nvcc --time: its phases, into --out)
  cuda.cu-O0host      NVCC_APPEND_FLAGS="-Xcompiler -O0" (host code unoptimised)
  cuda.cu-devonly     the device half alone (-cuda: cudafe and cicc, no host g++), for the split
  load_inline         the whole candidate build the way the evaluator runs it (import, ninja)
  load_inline+pch     the same with CXX=kb_cxx.sh and RLC_KB_PCH (what rlc sets); the ninja
                      log of each says how long each step took inside it

    python3 bench/kb_build_steps.py [--pch DIR] [--out DIR] [--python python3]
Needs torch and nvcc. Not a test."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src", "reward", "kernel_env"))


def candidate_parts(path):
    text = open(path).read()
    cuda = re.search(r'cuda_src = r"""(.*?)"""', text, re.S).group(1)
    cpp = re.search(r'cpp_sources="([^"]*)"', text).group(1)
    fns = re.findall(r'functions=\[([^\]]*)\]', text)[0]
    names = [n.strip().strip('"\'') for n in fns.split(",") if n.strip()]
    return cpp, cuda, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidate", default=os.path.join(ROOT, "tests", "fixtures", "kernelbench", "candidates",
                                                        "gelu_inline_ok.py"))
    ap.add_argument("--pch", help="kb_pch.py's directory (built here when it is not ready)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import kb_pch
    work = tempfile.mkdtemp(prefix="rlc-kb-steps-")
    out = a.out or work
    os.makedirs(out, exist_ok=True)
    pch = a.pch or os.path.join(work, "pch")
    t0 = time.monotonic()
    if not os.path.exists(os.path.join(pch, "ready")):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "src", "reward", "kernel_env", "kb_pch.py"), pch],
                           capture_output=True, text=True)
        print(f"kb_pch.py: {time.monotonic() - t0:.1f} s: {p.stdout.strip()[:600]} {p.stderr.strip()[-300:]}", flush=True)
    text = open(os.path.join(pch, "probe", "build.ninja")).read()

    def var(name):
        m = re.search(r"^%s = (.*)$" % name, text, re.M)
        return m.group(1) if m else ""
    cpp, cuda, names = candidate_parts(a.candidate)
    main_cpp = os.path.join(work, "main.cpp")
    with open(main_cpp, "w") as f:
        f.write("#include <torch/extension.h>\n" + cpp + "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" +
                "".join(f'm.def("{n}", torch::wrap_pybind_function({n}), "{n}");\n' for n in names) + "}\n")
    cuda_cu = os.path.join(work, "cuda.cu")
    with open(cuda_cu, "w") as f:
        f.write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + cuda)
    cflags = var("cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    post = var("post_cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    ccflags = var("cuda_cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    cpost = var("cuda_post_cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    cxx, nvcc = var("cxx") or "c++", var("nvcc") or "nvcc"
    o = lambda n: os.path.join(work, n + ".o")
    variants = [
        ("main.cpp", f"{cxx} {cflags} -c {main_cpp} -o {o('m1')} {post}", {}),
        ("main.cpp+pch", f"{cxx} -I{pch}/none -Winvalid-pch {cflags} -c {main_cpp} -o {o('m2')} {post}", {}),
        ("cuda.cu", f"{nvcc} --time {out}/nvcc-time.csv {ccflags} -c {cuda_cu} -o {o('c1')} {cpost}", {}),
        ("cuda.cu-O0host", f"{nvcc} {ccflags} -c {cuda_cu} -o {o('c2')} {cpost}", {"NVCC_APPEND_FLAGS": "-Xcompiler -O0"}),
        ("cuda.cu-devonly", f"{nvcc} {ccflags} -cuda {cuda_cu} -o {o('c3')}.ii {cpost}", {}),
    ]

    kb_cxx = os.path.join(ROOT, "src", "reward", "kernel_env", "kb_cxx.sh")
    imp = (f"{sys.executable} -c \"import importlib.util as u; s = u.spec_from_file_location('c', '{a.candidate}'); "
           f"s.loader.exec_module(u.module_from_spec(s))\"")
    for tag, env in (("load_inline", {}), ("load_inline+pch", {"CXX": kb_cxx, "RLC_KB_PCH": pch})):
        ext = os.path.join(work, "ext-" + tag)
        os.makedirs(ext)
        variants.append((tag, imp, {**env, "TORCH_EXTENSIONS_DIR": ext}))

    def run(v):
        name, cmd, env = v
        t = time.monotonic()
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, env={**os.environ, **env})
        return name, time.monotonic() - t, p.returncode, (p.stderr or "")[-400:]
    with ThreadPoolExecutor(len(variants)) as ex:
        rows = list(ex.map(run, variants))
    res = {"flags": {"cflags": cflags, "post_cflags": post, "cuda_cflags": ccflags, "cuda_post_cflags": cpost}}
    for name, s, rc, err in rows:
        print(f"{name:<18} {s:7.1f} s  rc {rc}  {err.strip()[-300:] if rc or 'pch' in name else ''}", flush=True)
        res[name] = {"seconds": round(s, 1), "rc": rc, "stderr": err}
    for tag in ("load_inline", "load_inline+pch"):
        for root, _, files in os.walk(os.path.join(work, "ext-" + tag)):
            if ".ninja_log" in files:
                steps = [l.split("\t") for l in open(os.path.join(root, ".ninja_log")) if not l.startswith("#")]
                res[tag]["ninja"] = {s[3]: round((int(s[1]) - int(s[0])) / 1e3, 1) for s in steps if len(s) >= 4}
                print(f"{tag:<18} ninja steps (s): {res[tag]['ninja']}", flush=True)
    with open(os.path.join(out, "kb_build_steps.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
