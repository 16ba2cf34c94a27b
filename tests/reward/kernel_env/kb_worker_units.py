#!/usr/bin/env python3
"""kb_worker_units.py — CPU checks of kernelbench_worker.py's pure-Python parts, run by
test_kb_worker.c (no torch needed: a stub stands in for torch's settings):
  - GpuLock (kb_gpulock.py): the turnstile of a waiting timed run, and its wait counted;
  - Phases: where a GPU run's seconds went (the result's "phases");
  - RefSettings: around a reference call the protocol's numeric settings (TF32 off, matmul
    precision highest) with cudnn.benchmark mirrored from the candidate; the candidate's own
    settings back afterwards;
  - the kernel-name matching of --require-kernel: Itanium-mangled symbols (nvcc host stubs,
    namespaces, anonymous namespaces, static) and the profiler's demangled names reduce to the
    same qualified name; ELF symbol tables are read (a real shared object of the system).
Exits 0 when all hold, 1 with a message otherwise."""
import glob
import os
import sys
import types

sys.argv = [sys.argv[0]]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "reward", "kernel_env"))
import kernelbench_worker as k  # noqa: E402


def stub_torch():
    state = {"prec": "highest", "det": False}
    ns = types.SimpleNamespace
    b = ns(cuda=ns(matmul=ns(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                             allow_bf16_reduced_precision_reduction=True)),
           cudnn=ns(allow_tf32=False, enabled=True, benchmark=False, deterministic=False))
    return ns(backends=b, get_float32_matmul_precision=lambda: state["prec"],
              set_float32_matmul_precision=lambda v: state.__setitem__("prec", v),
              are_deterministic_algorithms_enabled=lambda: state["det"],
              use_deterministic_algorithms=lambda v: state.__setitem__("det", v))


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


torch = stub_torch()
ctx = k.RefSettings(torch, k.numeric_flags(torch))
b = torch.backends
b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark = True, True, True
torch.set_float32_matmul_precision("high")
with ctx:
    inside = k.numeric_flags(torch)
after = k.numeric_flags(torch)
check(not inside["matmul.allow_tf32"] and not inside["cudnn.allow_tf32"], "the reference runs without TF32")
check(inside["float32_matmul_precision"] == "highest", "the reference runs at matmul precision highest")
check(inside["cudnn.benchmark"], "cudnn.benchmark is mirrored to the reference")
check(after["matmul.allow_tf32"] and after["float32_matmul_precision"] == "high" and after["cudnn.benchmark"],
      "the candidate's settings are back after the reference call")
b.cudnn.benchmark = False
with ctx:
    check(not k.numeric_flags(torch)["cudnn.benchmark"], "benchmark off on both sides when the candidate has it off")

cases = {"_Z16gelu_tanh_kernelPK6float4PS_l": "gelu_tanh_kernel",
         "__device_stub__Z16gelu_tanh_kernelPK6float4PS_l": "gelu_tanh_kernel",
         "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT_": "at::native::vectorized_elementwise_kernel",
         "_ZN12_GLOBAL__N_13fooEv": "_anon_::foo", "_ZL3barPf": "bar", "plain_c_kernel": "plain_c_kernel"}
for sym, want in cases.items():
    check(k.mangled_qualname(sym) == want, f"mangled {sym} -> {k.mangled_qualname(sym)}, want {want}")
shown = {"gelu_tanh_kernel(float4 const*, float4*, long)": "gelu_tanh_kernel",
         "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
         "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)": "at::native::vectorized_elementwise_kernel",
         "(anonymous namespace)::foo()": "_anon_::foo", "plain_c_kernel": "plain_c_kernel"}
for name, want in shown.items():
    check(k.demangled_qualname(name) == want, f"demangled {name} -> {k.demangled_qualname(name)}, want {want}")
libs = [p for p in glob.glob("/usr/lib/x86_64-linux-gnu/libcjson.so*") + glob.glob("/lib/x86_64-linux-gnu/libc.so.6")]
check(libs, "a shared object to read")
funcs = k.elf_functions(os.path.realpath(libs[0]))
check(any(f.startswith("cJSON_") or f in ("printf", "malloc") for f in funcs), f"ELF functions of {libs[0]}: {len(funcs)}")
# GpuLock's turnstile (kb_gpulock.py): a worker that waits to time holds the gate, so a newcomer
# cannot enter shared meanwhile; the ones inside finish, the timed run gets the lock, and the
# gate opens when it is back to shared.
import fcntl  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from kb_gpulock import GpuLock  # noqa: E402

lock_dir = tempfile.mkdtemp(prefix="rlc-gpulock-")
lock_path = os.path.join(lock_dir, "gpu.lock")
for p in (lock_path, lock_path + ".gate"):
    open(p, "w").close()
timer, inside = GpuLock(lock_path), GpuLock(lock_path)
timer.shared()
inside.shared()
waiting = threading.Thread(target=timer.exclusive, args=(lambda: None,))
waiting.start()
time.sleep(0.3)
check(waiting.is_alive(), "the timed run must wait for the worker inside")
newcomer = os.open(lock_path + ".gate", os.O_RDONLY)
try:
    fcntl.flock(newcomer, fcntl.LOCK_SH | fcntl.LOCK_NB)
    check(False, "a newcomer passed the gate while a timed run waits")
except BlockingIOError:
    pass
fcntl.flock(inside.fd, fcntl.LOCK_UN)  # the worker inside finishes
waiting.join(5)
check(not waiting.is_alive(), "the timed run gets the lock once the worker inside is out")
timer.shared()  # back from timing: the gate opens
fcntl.flock(newcomer, fcntl.LOCK_SH | fcntl.LOCK_NB)
check(timer.wait >= 0.25 and inside.wait < 0.25, f"lock waits counted (phases.lock_wait): timed {timer.wait:.3f} s, "
      f"inside {inside.wait:.3f} s")
# The result's phases: each mark closes the phase since the last mark; a name marked twice adds up.
ph = k.Phases()
time.sleep(0.05)
ph.mark("a")
ph.mark("b")
time.sleep(0.02)
ph.mark("a")
check(ph.d["a"] >= 0.07 and ph.d["b"] < 0.02 and set(ph.d) == {"a", "b"}, f"phases {ph.d}")
print("kernelbench_worker units: ok")
