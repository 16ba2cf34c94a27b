#!/usr/bin/env python3
"""kb_pch.py — builds the precompiled torch/extension.h that KernelBench candidates' load_inline
builds reuse (docs/kernel-env.md, "Throughput").

    python3 kb_pch.py DIR [--keys none,O2,O3]

Every load_inline build compiles a main.cpp that starts with `#include <torch/extension.h>`:
about 20 CPU seconds of parsing torch's headers, the same each time. rlc runs this script once
per machine (trusted: no candidate code is involved), outside the sandbox, before the first
KernelBench build. It asks load_inline for the flags of a main.cpp (a throwaway extension whose
source stops at an #error, so nothing heavy compiles), then builds for each optimization level
in --keys DIR/KEY/torch/extension.h.gch with exactly those flags (-O2 / -O3 added, none: as
load_inline gives them; TORCH_EXTENSION_NAME left out: the header does not use it), and checks
that g++ accepts it (-Winvalid-pch made an error, on a file that includes the header the way
load_inline's main.cpp does). Candidates' builds then run with CXX=kb_cxx.sh, which puts -IDIR/KEY
first for the -O level of the command, so g++ loads the PCH instead of parsing the headers; a
PCH that does not fit a command (other flags) is ignored by g++ and the header parsed as before.
DIR/ready is written last (rlc waits for it). Prints one JSON line: {"status": "ok" | "error",
"keys": [...], "seconds": S, "failure": ...}; exit 0 if at least one key was built."""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def ninja_flags(probe_dir):
    """cxx, cflags, post_cflags of load_inline's main.cpp rule, from a throwaway extension."""
    import torch.utils.cpp_extension as ce
    src = "#error rlc kb_pch: flags probe, nothing to build\n"
    os.makedirs(probe_dir, exist_ok=True)  # load_inline takes a lock file in it first
    why = None
    try:
        ce.load_inline("rl_pch_probe", cpp_sources=[src], build_directory=probe_dir, with_cuda=True,
                       no_implicit_headers=True)
    except TypeError:  # a torch without no_implicit_headers: the #error still stops the build
        try:
            ce.load_inline("rl_pch_probe", cpp_sources=[src], build_directory=probe_dir, with_cuda=True)
        except Exception as e:
            why = e
    except Exception as e:  # the #error: expected
        why = e
    path = os.path.join(probe_dir, "build.ninja")
    if not os.path.exists(path):
        raise RuntimeError(f"load_inline wrote no build.ninja ({type(why).__name__}: {str(why)[-300:]})")
    text = open(path).read()

    def var(name):
        m = re.search(r"^%s = (.*)$" % name, text, re.M)
        return shlex.split(m.group(1)) if m else []
    cxx = var("cxx") or ["c++"]
    flags = [f for f in var("cflags") + var("post_cflags") if not f.startswith("-DTORCH_EXTENSION_NAME")]
    return cxx, flags


def build_key(cxx, flags, header, out_dir, key):
    """Builds and checks one PCH; returns (key, error or None, seconds)."""
    t0 = time.monotonic()
    d = os.path.join(out_dir, key)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    opt = [] if key == "none" else ["-" + key]
    gch = os.path.join(d, "torch", "extension.h.gch")
    cmd = cxx + ["-x", "c++-header", header, "-o", gch + ".tmp"] + flags + opt
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return key, f"building the PCH failed: {p.stderr[-400:]}", time.monotonic() - t0
    os.replace(gch + ".tmp", gch)
    check = os.path.join(d, "check.cpp")
    with open(check, "w") as f:
        f.write("#include <torch/extension.h>\nint rl_pch_check(void) { return 1; }\n")
    cmd = cxx + ["-I" + d, "-Winvalid-pch", "-Werror=invalid-pch", "-DTORCH_EXTENSION_NAME=rl_pch_check"] + flags + \
        opt + ["-c", check, "-o", os.path.join(d, "check.o")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        os.remove(gch)
        return key, f"g++ does not accept the PCH: {p.stderr[-400:]}", time.monotonic() - t0
    return key, None, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--keys", default="none,O2,O3", help="optimization levels to build for (none: no -O flag)")
    a = ap.parse_args()
    t0 = time.monotonic()
    res = {"status": "error", "keys": [], "failure": None}
    try:
        import torch.utils.cpp_extension as ce
        os.makedirs(a.dir, exist_ok=True)
        cxx, flags = ninja_flags(os.path.join(a.dir, "probe"))
        header = os.path.join(os.path.dirname(ce.__file__), "..", "include", "torch", "extension.h")
        header = os.path.realpath(header)
        keys = [k for k in a.keys.split(",") if k]
        with ThreadPoolExecutor(max_workers=len(keys)) as ex:
            done = list(ex.map(lambda k: build_key(cxx, flags, header, a.dir, k), keys))
        res["keys"] = [k for k, e, _ in done if e is None]
        res["key_seconds"] = {k: round(s, 1) for k, _, s in done}
        errors = [f"{k}: {e}" for k, e, _ in done if e]
        res["failure"] = "; ".join(errors) or None
        res["cxx"], res["flags"] = cxx, flags
        if res["keys"]:
            res["status"] = "ok"
            with open(os.path.join(a.dir, "ready"), "w") as f:
                f.write(" ".join(res["keys"]) + "\n")
    except Exception as e:  # torch missing, no build.ninja, ...
        res["failure"] = f"{type(e).__name__}: {str(e)[-400:]}"
    res["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(res))
    return 0 if res["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
