"""gen.py — writes kernel_tasks/<name>/{spec.json, reference.cu, prompt.md} from the task tables.

Usage: python3 tools/kernel_tasks_gen/gen.py kernel_tasks
The tables (t_*.py) hold each task's sizes, inputs, tolerance and reference CUDA source; the
shared CUDA fragments are in common.py. Edit them, not the generated files, then run this and
tools/check_kernel_tasks.py (see docs/kernel-tasks.md)."""
import json, os, sys
sys.path.insert(0, os.path.dirname(__file__))
import t_elementwise, t_reduce, t_matmul, t_conv, t_misc

ROOT = sys.argv[1]

HEADER_C = '''typedef struct rl_kernel_args {
    int n_inputs, n_outputs, n_dims;
    const void *inputs[8];   /* device pointers, in the order of the inputs table */
    void *outputs[8];        /* device pointers, in the order of the outputs table */
    int64_t dims[8];         /* the sizes, in the order of the dims table */
} rl_kernel_args;

extern "C" int rl_kernel(const rl_kernel_args *args);'''

DTYPE = {"f32": "float32 (`float`)", "f16": "float16 (`__half`)", "bf16": "bfloat16 (`__nv_bfloat16`)", "i32": "int32 (`int32_t`)"}
LIB = {"cublas": "cuBLAS / cuBLASLt", "cudnn": "cuDNN"}

def shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]" if shape else "scalar (one element)"

def prompt(t):
    dims = t["dims"]
    lines = [f"# Task: {t['name']}", "", t["description"], "", "## Operation", "", "```", t["math"], "```", ""]
    lines += ["## Sizes", "", "`args->dims[i]`, in this order (the timed size; correctness is also checked at other sizes, small and odd ones included):", ""]
    lines += ["| i | name | timed value |", "|---|---|---|"]
    lines += [f"| {i} | `{n}` | {v} |" for i, (n, v) in enumerate(dims)]
    lines += ["", "Other sizes checked (same order): " + ", ".join("(" + ", ".join(str(v) for v in tr) + ")" for tr in t["trial_dims"]) + ".", ""]
    lines += ["## Tensors", "", "Dense, row-major (last index fastest), on the device.", ""]
    lines += ["| pointer | name | dtype | shape |", "|---|---|---|---|"]
    for i, x in enumerate(t["inputs"]):
        lines.append(f"| `args->inputs[{i}]` | `{x['name']}` | {DTYPE[x['dtype']]} | {shape_str(x['shape'])} |")
    for i, x in enumerate(t["outputs"]):
        lines.append(f"| `args->outputs[{i}]` | `{x['name']}` | {DTYPE[x['dtype']]} | {shape_str(x['shape'])} |")
    adv = sorted({a for x in t["inputs"] for a in x.get("adversarial", [])})
    if adv:
        lines += ["", "Inputs may contain these special values in some trials, and the output must match the reference on them: " + ", ".join(a.replace("_", " ") for a in adv) + "."]
    tol = t["tolerance"]
    lines += ["", "## Entry point", "", "Write one CUDA C++ file (compiled by nvcc for sm_90a into a shared object) that defines:", "",
              "```cuda", '#include "rl_kernel.h"   /* provides exactly this: */', "", HEADER_C, "```", "",
              f"`args->n_inputs` is {len(t['inputs'])}, `args->n_outputs` is {len(t['outputs'])}, `args->n_dims` is {len(dims)}. "
              "Return 0 on success and non-zero on failure.", "", "## Rules", ""]
    rules = [
        "Launch all work on the legacy default stream (stream 0). Do not create streams, events, CUDA graphs or host threads; you need not synchronize (the evaluator synchronizes the device after each call).",
        "Read every size from `args->dims`; never hard-code the timed sizes. The same file must work at every size listed above.",
        "Do not write to the inputs. Write every element of the outputs, and do not keep results between calls: each call gets fresh buffers and fresh values.",
        ("Outputs must equal the reference exactly." if tol["atol"] == 0 and tol["rtol"] == 0 else
         f"Outputs are compared with the reference elementwise: |out - ref| <= {tol['atol']:g} * s + {tol['rtol']:g} * |ref|, "
         "where s is the root-mean-square of the reference output; where the reference is NaN or an infinity yours must be the same."),
    ]
    if "library" in t["forbid"] and t["library"]:
        libs = " or ".join(LIB[l] for l in t["library"])
        rules.append(f"Do not call {libs}: the point is your own kernel (the baseline you are measured against uses it).")
    else:
        rules.append("Do not call cuBLAS, cuDNN or other libraries for the computation.")
    if any(x["dtype"] == "f32" for x in t["inputs"]):
        rules.append("Keep float32 accuracy: no TF32, fp16 or bf16 arithmetic for float32 data.")
    rules.append("Score: the reference's median run time over yours (cold L2, whole-device synchronization, every timed output checked), when every correctness check passes; an incorrect kernel, or one that breaks a rule, scores below any correct one.")
    lines += ["- " + r for r in rules]
    lines += ["", f"The reference implementation: {t['baseline']}.", ""]
    return "\n".join(lines)

def spec(t):
    s = {"name": t["name"], "category": t["category"], "description": t["description"]}
    if t.get("kernelbench"):
        s["kernelbench"] = t["kernelbench"]
    s["dims"] = [{"name": n, "value": v} for n, v in t["dims"]]
    s["trial_dims"] = t["trial_dims"]
    s["inputs"] = [dict(name=x["name"], dtype=x["dtype"], shape=x["shape"], dist=x["dist"], adversarial=x.get("adversarial", []), mutable=False) for x in t["inputs"]]
    s["outputs"] = t["outputs"]
    s["tolerance"] = t["tolerance"]
    s["forbid"] = t["forbid"]
    s["library"] = t["library"]
    return s

def dump(s):
    """One key per line; inputs/outputs one tensor per line; everything else compact."""
    out = []
    for k, v in s.items():
        if k in ("inputs", "outputs", "dims", "trial_dims") and v:
            items = ",\n".join("    " + json.dumps(x) for x in v)
            out.append(f'  {json.dumps(k)}: [\n{items}\n  ]')
        else:
            out.append(f"  {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(out) + "\n}\n"

all_tasks = t_elementwise.tasks() + t_reduce.tasks() + t_matmul.tasks() + t_conv.tasks() + t_misc.tasks()
names = [t["name"] for t in all_tasks]
assert len(names) == len(set(names)), "duplicate task names"
for t in all_tasks:
    d = os.path.join(ROOT, t["name"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "spec.json"), "w") as f:
        f.write(dump(spec(t)))
    with open(os.path.join(d, "reference.cu"), "w") as f:
        f.write(t["cu"])
    with open(os.path.join(d, "prompt.md"), "w") as f:
        f.write(prompt(t))
print(len(all_tasks), "tasks")
