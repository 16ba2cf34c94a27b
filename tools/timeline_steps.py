#!/usr/bin/env python3
"""Decode steps of a tools/kernel_timeline.c timeline: per step, the period (one
decode_advance_kernel's end to the next's) and, per kernel name, its share of the critical
path (its end minus the previous kernel's end, so PDL overlap counts once), over the middle
40% of the steps; then the attention's share at chosen steps (it grows with the context); with
--positions N, the first N kernels of a step one by one (median share and duration over the
middle steps that launch the usual number of kernels), which tells apart kernels of one name
(at batch 1 every product is a gemv_kernel).

usage: timeline_steps.py TIMELINE [--steps 2,50,100,150,200,250] [--positions N]"""
import argparse
import collections
import re
import statistics
import sys


def short(name):
    """A kernel's name without its mangling's length prefix and arguments."""
    if name.startswith("nvjet"):
        return name[:60]
    m = re.match(r"_Z(?:N\d+\w+?)?(\d+)", name)
    if m:
        n = int(m.group(1))
        return name[m.end():m.end() + n]
    return name[:60]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("timeline")
    ap.add_argument("--steps", default="2,50,100,150,200,250")
    ap.add_argument("--positions", type=int, default=0)
    args = ap.parse_args()
    kernels = []
    with open(args.timeline) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 5)
            if len(parts) == 6 and parts[0] == "k":
                kernels.append((int(parts[1]), int(parts[2]), short(parts[5])))
    kernels.sort()
    ends = [i for i, k in enumerate(kernels) if k[2] == "decode_advance_kernel"]
    if len(ends) < 10:
        sys.exit(f"{args.timeline}: {len(ends)} decode steps (decode_advance_kernel), too few to summarise")
    lo, hi = max(1, int(len(ends) * 0.3)), int(len(ends) * 0.7)
    share, count = collections.defaultdict(int), collections.Counter()
    periods = []
    for s in range(lo, hi):
        a, b = ends[s - 1], ends[s]
        periods.append(kernels[b][1] - kernels[a][1])
        prev = kernels[a][1]
        for k in kernels[a + 1:b + 1]:
            share[k[2]] += k[1] - prev
            count[k[2]] += 1
            prev = k[1]
    n = hi - lo
    print(f"{len(kernels)} kernels, {len(ends)} decode steps; steps {lo}..{hi - 1}: period median "
          f"{statistics.median(periods) / 1e3:.1f} us (the first kernel's share holds the host's gap)")
    print(f"{'us/step':>9} {'us each':>8} {'x/step':>7}  kernel")
    for name, t in sorted(share.items(), key=lambda x: -x[1]):
        print(f"{t / n / 1e3:9.1f} {t / count[name] / 1e3:8.2f} {count[name] / n:7.1f}  {name}")
    for s in (int(x) for x in args.steps.split(",")):
        if not 1 <= s < len(ends):
            continue
        a, b = ends[s - 1], ends[s]
        step = kernels[a + 1:b + 1]
        crit = [k[1] - step[i - 1][1] for i, k in enumerate(step) if i and k[2].startswith("paged_decode")]
        if crit:
            print(f"step {s}: attention {statistics.median(crit) / 1e3:.1f} us a layer (median of {len(crit)})")
    if args.positions > 0:
        positions(kernels, ends, lo, hi, args.positions)


def positions(kernels, ends, lo, hi, n):
    """The first n kernels of a step by position: median share of the critical path and duration."""
    sizes = collections.Counter(ends[s] - ends[s - 1] for s in range(lo, hi))
    usual = sizes.most_common(1)[0][0]
    share, dur, names = collections.defaultdict(list), collections.defaultdict(list), {}
    for s in range(lo, hi):
        a, b = ends[s - 1], ends[s]
        if b - a != usual:
            continue
        for j in range(1, min(n, usual) + 1):
            k = kernels[a + j]
            share[j].append(k[1] - kernels[a + j - 1][1])
            dur[j].append(k[1] - k[0])
            names[j] = k[2]
    print(f"positions: {usual} kernels a step, {len(share[1])} such steps")
    for j in sorted(share):
        print(f"{j:4d} {names[j][:44]:44s} share {statistics.median(share[j]) / 1e3:7.2f} us  "
              f"duration {statistics.median(dur[j]) / 1e3:7.2f} us")


if __name__ == "__main__":
    main()
