"""kb_hostops.py — the per-operator headers a KernelBench candidate's CUDA text needs in nvcc's
host passes with the light torch/types.h (kb_light/rlc/host_torch.h; docs/kernel-env.md,
"Throughput").

torch/types.h declares every ATen operator (ATen/Functions.h, ~2,500 per-operator headers):
about half of what cudafe++ and the host compiler parse. The light host header declares, of
the operators, only those whose per-operator header (torch's own ATen/ops/<name>.h) names an
identifier of the candidate's text: every identifier the text contains, qualified or not,
called or passed, so a name the text can reach is declared as torch declares it. The worker's
build-only run writes them into <TORCH_EXTENSIONS_DIR>/rlc_kb_ops/rlc_kb_ops.h and adds that
directory to NVCC_PREPEND_FLAGS (after kb_light's -I); without the file the light header is
torch's own (kb_light/torch/types.h: __has_include). A text that needs an operator the scan
misses fails to build and is built again with torch's header (kenv.c)."""
import os
import re

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DIR = "rlc_kb_ops"
# The macros torch/types.h defines and host_torch.h does not (torch 2.11: g++ -E -dM of the two,
# tests/reward/kernel_env/kb_host_pass.py checks the list against the headers at hand): those
# of torch/library.h, the profiler's, the structured-kernel ones of NativeFunctions.h, and
# headers of libstdc++ that only the left-out parts include. A text naming one of them gets
# torch's own header: an #ifdef of it must see what it would see with torch's.
TORCH_ONLY_MACROS = frozenset("""
BUILD_FEATURE_AVAILABLE BUILD_FEATURE_REQUIRED HAS_IMPL_ABSTRACT_PYSTUB HAS_PT2_COMPLIANT_TAG
MAKE_TORCH_LIBRARY MAKE_TORCH_LIBRARY_IMPL RECORD_CUSTOM_CLASS RECORD_EDGE_SCOPE_WITH_DEBUG_HANDLE_AND_INPUTS
RECORD_FUNCTION RECORD_FUNCTION_WITH_INPUTS_OUTPUTS RECORD_FUNCTION_WITH_SCOPE
RECORD_FUNCTION_WITH_SCOPE_INPUTS_OUTPUTS RECORD_OUTPUTS RECORD_TORCHSCRIPT_FUNCTION RECORD_USER_SCOPE
RECORD_USER_SCOPE_WITH_INPUTS RECORD_USER_SCOPE_WITH_KWARGS_ONLY RECORD_WITH_SCOPE_DEBUG_HANDLE_AND_INPUTS
TORCH_FN TORCH_FN_TYPE TORCH_IMPL_FUNC TORCH_LIBRARY TORCH_LIBRARY_FRAGMENT TORCH_LIBRARY_IMPL TORCH_META_FUNC
TORCH_META_FUNC2 TORCH_PRECOMPUTE_META_FUNC TORCH_PRECOMPUTE_META_FUNC2 TORCH_PRECOMPUTE_STRUCT
TORCH_PRECOMPUTE_STRUCT2 TORCH_SELECTIVE_CLASS TORCH_SELECTIVE_NAME TORCH_SELECTIVE_SCHEMA _GLIBCXX_LIST
_GLIBCXX_THIS_THREAD_SLEEP_H _GLIBCXX_THREAD _GLIBCXX_THREAD_H _LIST_TCC _STL_LIST_H _TORCH_LIBRARY_FRAGMENT
_TORCH_LIBRARY_IMPL""".split())
HEADER = "rlc_kb_ops.h"
# A text including any torch/ header but torch/extension.h and torch/types.h (kb_light's) gets
# torch's own header: the C++ frontend (torch/torch.h, torch/script.h, torch/nn, ...) includes
# torch/csrc/api/include/torch/types.h by its full path, which would declare torch/types.h's
# names a second time beside host_torch.h's, and needs operators no scan of the text sees.
OTHER_TORCH_INCLUDE = re.compile(r'#\s*include\s*[<"]torch/(?!(?:extension|types)\.h[>"])')


def operators(text, include_dir):
    """The sorted names of text's identifiers that have a per-operator header
    (include_dir/ATen/ops/<name>.h with its <name>_ops.h beside it: an operator's, not a helper
    header's)."""
    ops = os.path.join(include_dir, "ATen", "ops")
    names = set(IDENT.findall(text))
    return sorted(n for n in names if os.path.isfile(os.path.join(ops, n + ".h"))
                  and os.path.isfile(os.path.join(ops, n + "_ops.h")))


def write_header(root, names):
    """Writes root/rlc_kb_ops/rlc_kb_ops.h including ATen/ops/<name>.h for each of names (not
    when it already says that: ninja compares its mtime with the build's); returns the directory
    (for -I)."""
    d = os.path.join(root, DIR)
    os.makedirs(d, exist_ok=True)
    body = "/* written by kb_hostops.py: the operators the candidate's text names */\n#pragma once\n"
    body += "".join(f"#include <ATen/ops/{n}.h>\n" for n in names)
    try:  # the same list again (a cached build): left as it is, or ninja would rebuild on its mtime
        with open(os.path.join(d, HEADER)) as f:
            if f.read() == body:
                return d
    except OSError:
        pass
    tmp = os.path.join(d, HEADER + ".tmp")
    with open(tmp, "w") as f:
        f.write(body)
    os.replace(tmp, os.path.join(d, HEADER))
    return d


def prepare(text, include_dir, root, env):
    """For the build-only run with kb_light (--light-check: env's NVCC_PREPEND_FLAGS has its -I):
    when root (TORCH_EXTENSIONS_DIR) is a path nvcc can take (no blank or quote), writes the
    header for text under root and appends -I<its dir> to env's NVCC_PREPEND_FLAGS. Returns the
    operators, or None when it does not apply (or text names a macro of TORCH_ONLY_MACROS, or
    includes another torch/ header: OTHER_TORCH_INCLUDE) (the host passes then get torch's own
    torch/types.h)."""
    flags = env.get("NVCC_PREPEND_FLAGS", "")
    if not root or not include_dir or not flags or re.search(r"[\s\"'\\]", root):
        return None
    if TORCH_ONLY_MACROS & set(IDENT.findall(text)) or OTHER_TORCH_INCLUDE.search(text):
        return None
    names = operators(text, include_dir)
    d = write_header(root, names)
    env["NVCC_PREPEND_FLAGS"] = flags + " -I" + d
    return names


def for_build(cand):
    """The worker's build-only run with --light-check: prepare() for the candidate file cand,
    torch's include directory, TORCH_EXTENSIONS_DIR and os.environ. Returns what the host passes
    get, for the result's "light_host": "<n> operators", or "torch's header: <why>" (any failure
    leaves them torch's own header: a slower build, the same verdict)."""
    try:
        import torch.utils.cpp_extension as ce
        with open(cand, errors="replace") as f:
            text = f.read()
        names = prepare(text, ce.include_paths()[0], os.environ.get("TORCH_EXTENSIONS_DIR"), os.environ)
        if names is None:
            return "torch's header: a macro of TORCH_ONLY_MACROS, or no usable TORCH_EXTENSIONS_DIR or NVCC_PREPEND_FLAGS"
        return f"{len(names)} operators"
    except Exception as e:
        return f"torch's header: {type(e).__name__}: {str(e)[-200:]}"
