#!/usr/bin/env python3
"""kernel_eval_throughput.py — how fast `rlc kernel-eval --batch` scores a GRPO step's worth of
kernels (issue 13, item 4: 64 native candidates in <= 30 s, 64 KernelBench-format ones in
<= 3 minutes on one H100 with 16 cores).

Native: 64 distinct candidates made from the honest kernels of tests/fixtures/kernel_env/honest/
(each variant differs by a comment, so each is a fresh nvcc compile), scored against their
tasks; then the same 64 again (modules cached by hash). KernelBench: 64 distinct ModelNew files
with inline CUDA (load_inline; variants of tests/fixtures/kernelbench/candidates/gelu_inline_ok.py
with their own extension names, each a fresh build), against level1/88_MinGPTNewGelu. Prints a
table (wall time, statuses, median speedup) and writes the result lines to --out.

    python3 bench/kernel_eval_throughput.py [--rlc build/rlc] [--jobs 16] [--gpu-workers 4]
        [--native 64] [--kb 64] [--python python3] [--out DIR] [--skip-cached] [-- extra rlc flags]
Needs a GPU, nvcc and (for KernelBench) a Python with torch. Not a test."""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FX = os.path.join(ROOT, "tests", "fixtures", "kernel_env")
KB = os.path.join(ROOT, "tests", "fixtures", "kernelbench")


def native_requests(n, tag):
    honest = sorted(glob.glob(os.path.join(FX, "honest", "*.cu")))
    reqs = []
    for i in range(n):
        path = honest[i % len(honest)]
        src = open(path).read()
        task = re.search(r"task: ([A-Za-z0-9_]+)", src).group(1)
        reqs.append({"id": f"native/{i}/{os.path.basename(path)}", "task": os.path.join(FX, "tasks", task),
                     "source": src + f"\n// throughput variant {tag} {i}\n"})
    return reqs


def kb_requests(n, tag):
    base = open(os.path.join(KB, "candidates", "gelu_inline_ok.py")).read()
    problem = os.path.join(KB, "problems", "88_MinGPTNewGelu.py")
    reqs = []
    for i in range(n):
        src = base.replace("rl_test_gelu_tanh", f"rl_tp_{tag}_{i}") + f"\n# throughput variant {tag} {i}\n"
        reqs.append({"id": f"kb/{i}", "task": problem, "source": src})
    return reqs


def run_batch(args, reqs, cache, progress):
    """Runs one batch; each result line is written to progress with its arrival time as it comes
    (a run cut short still shows how many were done when)."""
    cmd = [args.rlc, "kernel-eval", "--batch", "--jobs", str(args.jobs), "--gpu-workers", str(args.gpu_workers),
           "--cache", cache, "--python", args.python] + args.extra
    t0 = time.time()
    errf = open(progress + ".stderr", "w+")  # a file, not a pipe nobody reads while rlc runs
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, text=True, cwd=ROOT)

    def feed():  # in a thread: rlc reads a request as a job frees, and the results must be read meanwhile
        try:
            p.stdin.write("".join(json.dumps(r) + "\n" for r in reqs))
            p.stdin.close()
        except BrokenPipeError:  # rlc stopped early: its stderr says why
            pass
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    lines = []
    with open(progress, "w") as f:
        for l in p.stdout:
            if not l.strip():
                continue
            d = json.loads(l)
            d["arrived_s"] = round(time.time() - t0, 2)
            lines.append(d)
            f.write(json.dumps(d) + "\n")
            f.flush()
    rc = p.wait()
    errf.seek(0)
    err = errf.read()
    errf.close()
    return time.time() - t0, lines, rc, err[-2000:]


def summary(name, wall, lines, n):
    st = {}
    for l in lines:
        st[l.get("status")] = st.get(l.get("status"), 0) + 1
    sp = [l["speedup"] for l in lines if l.get("status") == "ok" and isinstance(l.get("speedup"), (int, float))]
    med = statistics.median(sp) if sp else float("nan")
    worker = [l.get("worker_seconds", 0) for l in lines]
    row = (f"{name:<28} {n:>4} {wall:>8.1f} {n / wall * 60:>8.1f}  {med:>7.2f}  "
           f"{statistics.median(worker) if worker else 0:>6.2f}  {json.dumps(st, sort_keys=True)}")
    # where the time went (the workers' "phases", the pool's slot wait): medians in seconds
    parts = {}
    for l in lines:
        for k, v in (l.get("phases") or {}).items():
            parts.setdefault(k, []).append(v)
        for k, v in (l.get("build_phases") or {}).items():  # the KernelBench build-only run's
            parts.setdefault("build." + k, []).append(v)
        for k in ("gpu_wait_seconds", "gpu_slot_seconds", "build_seconds"):
            if isinstance(l.get(k), (int, float)):
                parts.setdefault(k.replace("_seconds", ""), []).append(l[k])
        if isinstance(l.get("compile"), dict) and isinstance(l["compile"].get("seconds"), (int, float)):
            parts.setdefault("compile", []).append(l["compile"]["seconds"])
    if parts:
        row += "\n  median s: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in sorted(parts.items()))
    headers = {}
    for l in lines:  # KernelBench: which torch/extension.h nvcc got (kblight.h)
        if l.get("kb_header"):
            headers[l["kb_header"]] = headers.get(l["kb_header"], 0) + 1
    if headers:
        row += "\n  kb_header: " + json.dumps(headers, sort_keys=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlc", default=os.path.join(ROOT, "build", "rlc"))
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--gpu-workers", type=int, default=4)
    ap.add_argument("--native", type=int, default=64)
    ap.add_argument("--kb", type=int, default=64)
    ap.add_argument("--python", default="python3")
    ap.add_argument("--out", default=None, help="directory for the result lines")
    ap.add_argument("--skip-cached", action="store_true", help="no second (cached) pass")
    ap.add_argument("extra", nargs="*", help="more rlc kernel-eval flags (after --)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="rlc-throughput-")
    os.makedirs(out, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="rlc-throughput-cache-")
    tag = f"{os.getpid()}{int(time.time())}"
    rows = []
    print(f"{'set':<28} {'n':>4} {'wall s':>8} {'per min':>8}  {'med x':>7}  {'wrk s':>6}  statuses", flush=True)
    passes = []
    if args.native:
        passes.append(("native, fresh compiles", native_requests(args.native, tag)))
        if not args.skip_cached:
            passes.append(("native, cached modules", None))
    if args.kb:
        passes.append(("kernelbench, fresh builds", kb_requests(args.kb, tag)))
        if not args.skip_cached:
            passes.append(("kernelbench, cached builds", None))
    last = None
    for name, reqs in passes:
        reqs = reqs if reqs is not None else last
        last = reqs
        progress = os.path.join(out, name.replace(", ", "-").replace(" ", "_") + ".jsonl")
        wall, lines, rc, err = run_batch(args, reqs, cache, progress)
        row = summary(name, wall, lines, len(reqs))
        rows.append(row)
        print(row, flush=True)
        if rc != 0 or len(lines) != len(reqs):
            print(f"  rlc exited {rc} with {len(lines)} of {len(reqs)} results: {err}", flush=True)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
