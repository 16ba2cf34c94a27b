#!/usr/bin/env python3
"""kb_light_units.py — CPU checks of kb_kernelcheck.py and kernelbench_worker.py --light-check,
run by test_kb_light.c (no torch: a stub module stands in for it; needs nvcc, nm and c++filt):
  - objects built by nvcc whose two passes made the same kernels (templates with type and
    non-type arguments, a namespace, an anonymous namespace, extern "C") report none missing;
  - one whose host code launches k<float> where the device code made k<double> (the two
    passes see different code through __CUDA_ARCH__, as under the light headers' stand-in)
    reports k<float>, and only that object;
  - the build-only run with --light-check fails that build as compile_error with
    "light_mismatch", removes the object and the module beside it (ninja builds them again),
    and passes the matching build; --drop-build removes every CUDA object and module first.
  - kb_hostops.py: the operators of a text are its identifiers with a per-operator header
    (and its _ops.h) in torch's include directory; the header lists them; prepare() appends
    -I<its dir> to NVCC_PREPEND_FLAGS, and does nothing for a text naming TORCH_LIBRARY or
    including torch/torch.h or torch/script.h, a directory with a blank, or no kb_light flags; the build-only run with --light-check writes
    it under TORCH_EXTENSIONS_DIR.
Exits 0 when all hold, 1 with a message otherwise; 77 without nvcc."""
import os
import shutil
import subprocess
import sys
import tempfile
import types

sys.argv = [sys.argv[0]]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "reward", "kernel_env"))
import kb_hostops  # noqa: E402
import kb_kernelcheck as kc  # noqa: E402

SAME = r"""
namespace { template <typename T, int N> __global__ void k(T *p) { p[0] = T(N); } }
namespace ns { template <typename T> __global__ void j(T *p, T v) { p[0] = v; } }
extern "C" __global__ void plain(int *p) { *p = 2; }
__global__ void over(float *p) { *p = 1; }
__global__ void over(int *p) { *p = 1; }
void launch(void *p)
{
    k<float, 3><<<1, 1>>>((float *)p);
    k<int, 1><<<1, 1>>>((int *)p);
    ns::j<double><<<1, 1>>>((double *)p, 1.0);
    plain<<<1, 1>>>((int *)p);
    over<<<1, 1>>>((float *)p);
}
"""
DIFFER = r"""
template <typename T> __global__ void k(T *p) { p[0] = T(1); }
void launch(void *p)
{
#ifdef __CUDA_ARCH__
    k<double><<<1, 1>>>((double *)p);
#else
    k<float><<<1, 1>>>((float *)p);
#endif
    k<int><<<1, 1>>>((int *)p);
}
"""


def check(cond, what):
    if not cond:
        print("kb_light_units: FAILED: " + what)
        sys.exit(1)


def build(src, obj):
    cu = obj[:-len(".cuda.o")] + ".cu"
    with open(cu, "w") as f:
        f.write(src)
    p = subprocess.run(["nvcc", "-arch=sm_80", "-Xcompiler", "-fPIC", "-c", cu, "-o", obj], capture_output=True, text=True)
    check(p.returncode == 0, f"nvcc {cu}: {p.stderr[-800:]}")


def hostops(root):
    """kb_hostops.py against a fake torch include directory under root; returns it."""
    inc = os.path.join(root, "inc")
    ops = os.path.join(inc, "ATen", "ops")
    os.makedirs(ops)
    for n in ("empty_like", "empty_like_ops", "sigmoid", "sigmoid_ops", "helper"):  # helper.h: no helper_ops.h
        open(os.path.join(ops, n + ".h"), "w").close()
    text = "auto y = torch::empty_like(x); at::sigmoid(y); helper(y); sigmoidal(y); // empty"
    check(kb_hostops.operators(text, inc) == ["empty_like", "sigmoid"], f"operators {kb_hostops.operators(text, inc)}")
    env = {"NVCC_PREPEND_FLAGS": "-I/x/kb_light"}
    text = "#include <torch/extension.h>\n#include <torch/types.h>\n#include <ATen/cuda/CUDAContext.h>\n" + text
    check(kb_hostops.prepare(text, inc, os.path.join(root, "ext"), env) == ["empty_like", "sigmoid"], "prepare")
    d = os.path.join(root, "ext", "rlc_kb_ops")
    check(env["NVCC_PREPEND_FLAGS"] == "-I/x/kb_light -I" + d, f"flags {env['NVCC_PREPEND_FLAGS']}")
    with open(os.path.join(d, "rlc_kb_ops.h")) as f:
        body = f.read()
    check("#include <ATen/ops/empty_like.h>\n#include <ATen/ops/sigmoid.h>\n" in body and "helper" not in body, body)
    h = os.path.join(d, "rlc_kb_ops.h")
    os.utime(h, (1, 1))
    kb_hostops.prepare(text, inc, os.path.join(root, "ext"), {"NVCC_PREPEND_FLAGS": "-Ik"})
    check(os.stat(h).st_mtime == 1, "the same list again must leave the header (and its mtime) as it is")
    kb_hostops.prepare("at::sigmoid(x)", inc, os.path.join(root, "ext"), {"NVCC_PREPEND_FLAGS": "-Ik"})
    check(os.stat(h).st_mtime != 1, "another list must be written")
    for t, r, e in (("#ifdef TORCH_LIBRARY\n" + text, os.path.join(root, "e2"), {"NVCC_PREPEND_FLAGS": "-Ik"}),
                    ("#include <torch/torch.h>\n" + text, os.path.join(root, "e4"), {"NVCC_PREPEND_FLAGS": "-Ik"}),
                    ('# include "torch/script.h"\n' + text, os.path.join(root, "e5"), {"NVCC_PREPEND_FLAGS": "-Ik"}),
                    (text, os.path.join(root, "a b"), {"NVCC_PREPEND_FLAGS": "-Ik"}), (text, os.path.join(root, "e3"), {})):
        before = dict(e)
        check(kb_hostops.prepare(t, inc, r, e) is None and e == before and not os.path.exists(os.path.join(r, "rlc_kb_ops")),
              f"prepare must not apply: {r} {before}")
    return inc


def main():
    if not shutil.which("nvcc"):
        print("kb_light_units: skipped: no nvcc on PATH")
        return 77
    check(kc._callee("void ns::k<float, 2>(float*, int)") == "ns::k<float, 2>", "callee of a template")
    check(kc._callee("(anonymous namespace)::k<int, 1>(int*)") == "(anonymous namespace)::k<int, 1>", "anonymous")
    check(kc._callee("void f<void (*)(int)>(void (*)(int))") == "f<void (*)(int)>", "function-pointer argument")
    root = tempfile.mkdtemp(prefix="rlc-kb-light-")
    same_dir, differ_dir = os.path.join(root, "ext_same"), os.path.join(root, "ext_differ")
    os.makedirs(same_dir)
    os.makedirs(differ_dir)
    same, differ = os.path.join(same_dir, "cuda.cuda.o"), os.path.join(differ_dir, "cuda.cuda.o")
    build(SAME, same)
    build(DIFFER, differ)
    check(kc.missing(same) == [], f"same kernels: {kc.missing(same)}")
    check(kc.missing(differ) == ["k<float>"], f"k<float> missing: {kc.missing(differ)}")
    check(kc.check_tree(root) == {differ: ["k<float>"]}, f"check_tree: {kc.check_tree(root)}")

    # the worker's build-only run, torch stubbed (the candidate builds nothing itself)
    sys.modules["torch"] = types.ModuleType("torch")
    import kernelbench_worker as k
    cand = os.path.join(root, "cand.py")
    with open(cand, "w") as f:
        f.write("x = 1\n")
    for so in (os.path.join(differ_dir, "ext_differ.so"), os.path.join(same_dir, "ext_same.so")):
        open(so, "w").close()
    os.environ["TORCH_EXTENSIONS_DIR"] = root
    inc = hostops(root)
    cpp_ext = types.ModuleType("torch.utils.cpp_extension")
    cpp_ext.include_paths = lambda *a, **k: [inc]
    sys.modules["torch.utils"] = types.ModuleType("torch.utils")
    sys.modules["torch.utils.cpp_extension"] = cpp_ext
    sys.modules["torch.utils"].cpp_extension = cpp_ext
    sys.modules["torch"].utils = sys.modules["torch.utils"]
    with open(cand, "w") as f:
        f.write("x = 1  # torch.sigmoid\n")
    os.environ["NVCC_PREPEND_FLAGS"] = "-I/x/kb_light"
    a = types.SimpleNamespace(cand=cand, light_check=True, drop_build=False)
    res = k.Result(None)
    try:
        k.build_only(a, res)
        check(False, "a build whose passes differ passed --light-check")
    except k.Fail as f:
        check(f.status == "compile_error" and "k<float>" in f.msg, f"status {f.status}: {f.msg}")
    check(res.d.get("light_mismatch") == ["k<float>"], f"light_mismatch {res.d.get('light_mismatch')}")
    check(res.d.get("light_host") == "1 operators", f"light_host {res.d.get('light_host')}")
    with open(os.path.join(root, "rlc_kb_ops", "rlc_kb_ops.h")) as f:
        check(f.read().endswith("#include <ATen/ops/sigmoid.h>\n"), "the build-only run writes the operator list")
    check(os.environ["NVCC_PREPEND_FLAGS"] == "-I/x/kb_light -I" + os.path.join(root, "rlc_kb_ops"),
          f"the build-only run's NVCC_PREPEND_FLAGS: {os.environ['NVCC_PREPEND_FLAGS']}")
    os.environ.pop("NVCC_PREPEND_FLAGS")
    check(not os.path.exists(differ) and not os.path.exists(os.path.join(differ_dir, "ext_differ.so")),
          "the mismatched object and its module must be removed")
    check(os.path.exists(same) and os.path.exists(os.path.join(same_dir, "ext_same.so")), "the good build stays")
    res = k.Result(None)
    k.build_only(a, res)  # only the matching build is left
    check(res.d["status"] == "ok" and "light_mismatch" not in res.d, f"matching build: {res.d}")
    k.build_only(types.SimpleNamespace(cand=cand, light_check=False, drop_build=True), k.Result(None))
    check(not os.path.exists(same) and not os.path.exists(os.path.join(same_dir, "ext_same.so")),
          "--drop-build removes every CUDA object and module")
    shutil.rmtree(root)
    print("kb_light units: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
