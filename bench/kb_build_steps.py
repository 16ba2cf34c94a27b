#!/usr/bin/env python3
"""kb_build_steps.py — where a KernelBench candidate's load_inline build spends its time, and
what the evaluator can cut (issue 13, item 4; docs/kernel-env.md, "Throughput").

A load_inline build with CUDA is three ninja steps: main.cpp (g++, starts with
#include <torch/extension.h>), cuda.cu (nvcc: torch/types.h prepended, and most KernelBench
candidates include torch/extension.h there too) and the link. This script writes the two
sources of a candidate the way load_inline does (default: the CUDA part of
tests/fixtures/kernelbench/candidates/gelu_inline_ok.py), takes load_inline's flags from the
build.ninja of a throwaway probe (kb_pch.ninja_flags), and compiles variants side by side
(one core each, started together; the PCH, when not ready, is built beside the first group),
printing each one's wall time:

  main.cpp                   as load_inline builds it
  main.cpp+pch               with the precompiled torch/extension.h of kb_pch.py (-I<pch>/none first)
  cuda.cu                    as load_inline builds it (nvcc --time: its phases, into --out)
  cuda.cu-dryrun             nvcc -dryrun: the commands of each phase (the host compiler's flags)
  cuda.cu-O0host             NVCC_APPEND_FLAGS="-Xcompiler -O0" (host code unoptimised)
  cuda.cu-O3                 with -O3, as many KernelBench solutions pass it
  cuda.cu-devonly            the device half alone (-cuda: cudafe and cicc, no host g++), for the split
  cuda.cu-lightdev           a torch/extension.h found first through NVCC_PREPEND_FLAGS=-I that is
                             torch/types.h in the device pass only (#include_next elsewhere)
  cuda.cu-lightall           one that is torch/types.h in both passes (what kblight.h does)
  cuda.cu-light*-O0host      the same with the host code unoptimised
  cuda.cu-kblight            the light headers of src/reward/kernel_env/kb_light as the evaluator gives
                             them (kblight.h): torch/extension.h is torch/types.h in both passes, and
                             torch/types.h is the stand-in rlc/device_torch.h in the device pass
  cuda.cu-kblight-devonly    the same, the device half alone (-cuda)
  cuda.cu-kblight-host       kb_light with the candidate's operator list (kb_hostops.py), as the
                             build-only run with --light-check gives it: the host passes get
                             rlc/host_torch.h (torch's own declarations, only the operators named)
  load_inline                the whole candidate build the way the evaluator runs it (import, ninja)
  load_inline+pch[+light*]   the same with CXX=kb_cxx.sh and RLC_KB_PCH (what rlc sets), and the
                             light header (+kblight: kb_light's; +kblight-host: with the operator
                             list, as the build-only run gives it); the ninja log of each says how long
                             each step took

    python3 bench/kb_build_steps.py [--pch DIR] [--out DIR] [--only REGEX]
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
    ap.add_argument("--only", default=None, help="run only the variants whose name matches this regex")
    a = ap.parse_args()
    import kb_pch
    work = tempfile.mkdtemp(prefix="rlc-kb-steps-")
    out = a.out or work
    os.makedirs(out, exist_ok=True)
    pch = a.pch or os.path.join(work, "pch")
    t0 = time.monotonic()
    pch_proc = None
    if not os.path.exists(os.path.join(pch, "ready")):  # built while the variants that need no PCH run
        pch_proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "src", "reward", "kernel_env", "kb_pch.py"), pch],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    probe = os.path.join(work, "probe")
    kb_pch.ninja_flags(probe)
    text = open(os.path.join(probe, "build.ninja")).read()

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
    # Lighter torch/extension.h for nvcc, found first through -I (NVCC_PREPEND_FLAGS): "dev" only
    # in the device pass (__CUDA_ARCH__; the host pass parses the original through #include_next),
    # "all" in both passes.
    shadow = {"dev": "#pragma once\n#if defined(__CUDA_ARCH__)\n#include <torch/types.h>\n#else\n"
                     "#include_next <torch/extension.h>\n#endif\n",
              "all": "#pragma once\n#include <torch/types.h>\n"}
    for k, body in shadow.items():
        os.makedirs(os.path.join(work, "shadow-" + k, "torch"))
        with open(os.path.join(work, "shadow-" + k, "torch", "extension.h"), "w") as f:
            f.write(body)
    light = lambda k: {"NVCC_PREPEND_FLAGS": "-I" + os.path.join(work, "shadow-" + k)}
    kblight = {"NVCC_PREPEND_FLAGS": "-I" + os.path.join(ROOT, "src", "reward", "kernel_env", "kb_light")}
    import kb_hostops  # the operator list of the candidate's text, for the host passes
    kblight_host = dict(kblight)
    inc = re.search(r"-isystem (\S+/torch/include)\b", var("cuda_cflags"))
    if kb_hostops.prepare(open(a.candidate).read(), inc.group(1) if inc else "", work, kblight_host) is None:
        kblight_host = None
    cflags = var("cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    post = var("post_cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    ccflags = var("cuda_cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    cpost = var("cuda_post_cflags").replace("-DTORCH_EXTENSION_NAME=rl_pch_probe", "-DTORCH_EXTENSION_NAME=rl_steps")
    cxx, nvcc = var("cxx") or "c++", var("nvcc") or "nvcc"
    o = lambda n: os.path.join(work, n + ".o")
    nv = lambda n, extra="": f"{nvcc} --time {out}/nvcc-{n}.csv {ccflags} {extra} -c {cuda_cu} -o {o(n)} {cpost}"
    o0 = {"NVCC_APPEND_FLAGS": "-Xcompiler -O0"}
    first = [
        ("main.cpp", f"{cxx} {cflags} -c {main_cpp} -o {o('m1')} {post}", {}),
        ("cuda.cu", nv("cuda"), {}),
        ("cuda.cu-dryrun", f"{nvcc} -dryrun {ccflags} -c {cuda_cu} -o {o('dry')} {cpost}", {}),
        ("cuda.cu-O0host", nv("O0host"), o0),
        ("cuda.cu-O3", nv("O3", "-O3"), {}),
        ("cuda.cu-devonly", f"{nvcc} {ccflags} -cuda {cuda_cu} -o {o('c3')}.ii {cpost}", {}),
        ("cuda.cu-lightdev", nv("lightdev"), light("dev")),
        ("cuda.cu-lightall", nv("lightall"), light("all")),
        ("cuda.cu-lightdev-O0host", nv("lightdev-O0host"), {**light("dev"), **o0}),
        ("cuda.cu-lightall-O0host", nv("lightall-O0host"), {**light("all"), **o0}),
        ("cuda.cu-kblight", nv("kblight"), kblight),
        ("cuda.cu-kblight-devonly", f"{nvcc} {ccflags} -cuda {cuda_cu} -o {o('c4')}.ii {cpost}", kblight),
    ] + ([("cuda.cu-kblight-host", nv("kblight-host"), kblight_host)] if kblight_host else [])

    kb_cxx = os.path.join(ROOT, "src", "reward", "kernel_env", "kb_cxx.sh")
    imp = (f"{sys.executable} -c \"import importlib.util as u; s = u.spec_from_file_location('c', '{a.candidate}'); "
           f"s.loader.exec_module(u.module_from_spec(s))\"")

    def load_inline(tag, env):
        ext = os.path.join(work, "ext-" + tag)
        os.makedirs(ext)
        return (tag, imp, {**env, "TORCH_EXTENSIONS_DIR": ext})
    first.append(load_inline("load_inline", {}))
    with_pch = {"CXX": kb_cxx, "RLC_KB_PCH": pch}  # and the compiler the PCH was built with, as rlc passes it
    if os.environ.get("CXX"):
        with_pch["RLC_KB_CXX"] = os.environ["CXX"]
    second = [
        ("main.cpp+pch", f"{cxx} -I{pch}/none -Winvalid-pch {cflags} -c {main_cpp} -o {o('m2')} {post}", {}),
        load_inline("load_inline+pch", with_pch),
        load_inline("load_inline+pch+lightdev", {**with_pch, **light("dev")}),
        load_inline("load_inline+pch+lightall", {**with_pch, **light("all")}),
        load_inline("load_inline+pch+kblight", {**with_pch, **kblight}),
    ] + ([load_inline("load_inline+pch+kblight-host", {**with_pch, **kblight_host})] if kblight_host else [])
    if a.only:
        first = [v for v in first if re.search(a.only, v[0])]
        second = [v for v in second if re.search(a.only, v[0])]

    def run(v):
        name, cmd, env = v
        t = time.monotonic()
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, env={**os.environ, **env})
        return name, time.monotonic() - t, p.returncode, (p.stderr or "")[-400:] + (p.stdout if "dryrun" in name else "")
    res = {"flags": {"cflags": cflags, "post_cflags": post, "cuda_cflags": ccflags, "cuda_post_cflags": cpost}}

    def show(rows):
        for name, s, rc, err in rows:
            print(f"{name:<26} {s:7.1f} s  rc {rc}  {err.strip()[-300:] if rc or 'pch' in name else ''}", flush=True)
            res[name] = {"seconds": round(s, 1), "rc": rc, "stderr": err}
    with ThreadPoolExecutor(max(1, len(first))) as ex:
        show(list(ex.map(run, first)))
    for name, _, env in first:  # nvcc --time: seconds per phase (cicc is the device pass)
        csv = os.path.join(out, "nvcc-" + name.replace("cuda.cu-", "").replace("cuda.cu", "cuda") + ".csv")
        if name.startswith("cuda.cu") and os.path.exists(csv):
            phases = {}
            for row in open(csv).read().splitlines()[1:]:
                cols = [c.strip() for c in row.split(",")]
                if len(cols) >= 8 and cols[-1] == "ms":
                    try:
                        phases[cols[1]] = phases.get(cols[1], 0) + float(cols[-2]) / 1e3
                    except ValueError:
                        pass
            res.setdefault(name, {})["phases"] = {k: round(v, 2) for k, v in phases.items()}
            print(f"{name:<26} phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()), flush=True)
    if pch_proc:
        pout, perr = pch_proc.communicate()
        print(f"kb_pch.py: {time.monotonic() - t0:.1f} s from the start: {pout.strip()[:600]} {perr.strip()[-300:]}", flush=True)
    with ThreadPoolExecutor(max(1, len(second))) as ex:
        show(list(ex.map(run, second)))
    for tag in [v[0] for v in first + second if v[0].startswith("load_inline")]:
        for root, _, files in os.walk(os.path.join(work, "ext-" + tag)):
            if ".ninja_log" in files:
                steps = [l.split("\t") for l in open(os.path.join(root, ".ninja_log")) if not l.startswith("#")]
                res[tag]["ninja"] = {s[3]: round((int(s[1]) - int(s[0])) / 1e3, 1) for s in steps if len(s) >= 4}
                print(f"{tag:<26} ninja steps (s): {res[tag]['ninja']}", flush=True)
    with open(os.path.join(out, "kb_build_steps.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
