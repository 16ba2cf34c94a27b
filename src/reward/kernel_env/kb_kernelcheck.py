"""kb_kernelcheck.py — did nvcc's two passes of a load_inline build instantiate the same kernels?
(docs/kernel-env.md, "Throughput": the device-pass stand-in for torch/types.h.)

In the build-only run with the light headers (kb_light/), nvcc's device pass parses a stand-in
of torch/types.h and its host pass torch's own. A kernel template that the host code
instantiates and the device code does not (a type that differs between the two) still
compiles: cicc writes the registration and launch stub only for the kernels it made, and the
host's other instantiation launches a null function, "invalid device function" at run time.
In the host object both show: a host instantiation of kernel template K<A> makes a
`__wrapper__device_stub_K<A>` function, and each kernel of the device pass a
`__device_stub_<mangled name>`. missing() lists the instantiations with a wrapper and no
device stub; the worker (kernelbench_worker.py --light-check) then removes the objects, so that
the build is made again with torch's header. Uses nm and c++filt (binutils, there wherever g++
links a module)."""
import glob
import os
import subprocess

WRAPPER = "__wrapper__device_stub_"
STUB = "__device_stub_"


def _callee(demangled):
    """'void ns::k<float, 2>(float*, int)' -> 'ns::k<float, 2>': the name before the top-level
    parameter list, without the return type (a kernel's is void; a template's names it)."""
    s = demangled.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    return s[5:] if s.startswith("void ") else s


def _lines(cmd, text=None):
    p = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[:2])}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return p.stdout.splitlines()


def missing(obj):
    """The kernel instantiations of the host object obj that its device code lacks (sorted)."""
    wrappers, mangled = set(), []
    for line in _lines(["nm", "-C", obj]):
        name = line[19:] if len(line) > 19 else ""
        if WRAPPER in name:
            wrappers.add(_callee(name).replace(WRAPPER, ""))
        elif STUB + "_Z" in name:
            mangled.append(name[name.index(STUB + "_Z") + len(STUB):].split("(")[0])
    made = {_callee(d) for d in _lines(["c++filt"], "\n".join(mangled) + "\n")} if mangled else set()
    return sorted(w for w in wrappers if w not in made)


def objects(root):
    """The CUDA objects of load_inline builds under root (load_inline names them *.cuda.o)."""
    return sorted(glob.glob(os.path.join(root, "**", "*.cuda.o"), recursive=True)) if root else []


def check_tree(root):
    """missing() over every CUDA object of load_inline builds under root: {object: [names]}
    for the objects with any."""
    out = {}
    for obj in objects(root):
        m = missing(obj)
        if m:
            out[obj] = m
    return out


def drop_builds(bad):
    """Removes each object of bad and the modules beside it, so that ninja builds them again."""
    for obj in bad:
        for path in [obj] + glob.glob(os.path.join(os.path.dirname(obj), "*.so")):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def check_and_drop(roots):
    """The worker's --light-check: check_tree() over roots (None or "" skipped); the objects with
    kernels missing are removed with their modules (drop_builds). Returns the missing names
    (at most 20), or the reason the check could not run (no verdict without it: the caller
    builds again with torch's header); [] when all match."""
    bad = {}
    try:
        for root in {r for r in roots if r}:
            bad.update(check_tree(root))
    except Exception as e:
        return [f"(check failed: {type(e).__name__}: {e})"]
    drop_builds(bad)
    return sorted({n for v in bad.values() for n in v})[:20]
