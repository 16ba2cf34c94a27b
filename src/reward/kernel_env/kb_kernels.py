"""kb_kernels.py — the GPU kernels of a KernelBench run, for kernelbench_worker.py: which kernels a
call launched and their times (the torch profiler's CUDA activity: --profile, --require-kernel),
and which of them the candidate's own code defines (the functions of the shared objects
load_inline built, its Triton kernels), matched by qualified name: Itanium-mangled symbols (nvcc's
host stubs carry the kernel's name) and the profiler's demangled names reduce to the same one."""
import os


def elf_functions(path):
    """Names of the functions an ELF shared object defines (.symtab and .dynsym), mangled."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return set()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for sh in secs:
        if sh[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        stroff = secs[sh[6]][4]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", data, off)
            if st_info & 0xF == 2 and st_shndx != 0:  # STT_FUNC, defined
                end = data.index(b"\0", stroff + st_name)
                names.add(data[stroff + st_name:end].decode("ascii", "replace"))
    return names


def mangled_qualname(sym):
    """The qualified name of an Itanium-mangled function ("_ZN2ns1kEPf" -> "ns::k"); an
    unmangled (extern "C") name is itself. nvcc's host stubs of kernels carry the kernel's name."""
    if sym.startswith("__device_stub_"):
        sym = sym[len("__device_stub_"):]
    if not sym.startswith("_Z"):
        return sym
    i, parts = 2, []
    nested = sym.startswith("_ZN")
    if nested:
        i = 3
        while i < len(sym) and sym[i] in "rVK":
            i += 1
    if i < len(sym) and sym[i] == "L":
        i += 1
    while i < len(sym) and sym[i].isdigit():
        j = i
        while j < len(sym) and sym[j].isdigit():
            j += 1
        n = int(sym[i:j])
        ident = sym[j:j + n]
        parts.append("_anon_" if ident.startswith("_GLOBAL__N") else ident)
        i = j + n
        if not nested:
            break
    return "::".join(parts)


def demangled_qualname(name):
    """The qualified name of a demangled kernel name as the profiler shows it
    ("void ns::k<4>(float*)" -> "ns::k")."""
    name = name.replace("(anonymous namespace)", "_anon_").split("(", 1)[0]
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    if name.startswith("void "):
        name = name[5:]
    return name.replace(" ", "")


def own_kernel_names(cand_mod, ext_dir):
    """Qualified names of the functions in the candidate's own native code (the shared objects
    load_inline built under ext_dir) and of its Triton kernels."""
    names = set()
    for root, _, files in os.walk(ext_dir) if ext_dir else ():
        for fn in files:
            if fn.endswith(".so"):
                try:
                    names |= {mangled_qualname(s).replace(" ", "") for s in elf_functions(os.path.join(root, fn))}
                except (OSError, ValueError, IndexError):
                    continue
    for v in list(vars(cand_mod).values()):
        if type(v).__name__ in ("JITFunction", "Autotuner", "Heuristics"):
            fn = getattr(v, "fn", v)
            while hasattr(fn, "fn") and not hasattr(fn, "__name__"):
                fn = fn.fn
            if hasattr(fn, "__name__"):
                names.add(fn.__name__)
    names.discard("")
    return names


def kernel_times(torch, sync, call):
    """The GPU kernels (and copies) launched during call(), from the torch profiler's CUDA
    activity: [{"name", "calls", "ms"}], the slowest first."""
    from torch.profiler import ProfilerActivity, profile
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        sync()
    acc = {}
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            c = acc.setdefault(e.name, [0, 0.0])
            c[0], c[1] = c[0] + 1, c[1] + (e.time_range.end - e.time_range.start) / 1e3
    return sorted(({"name": n[:300], "calls": c, "ms": round(ms, 6)} for n, (c, ms) in acc.items()),
                  key=lambda d: -d["ms"])[:64]
