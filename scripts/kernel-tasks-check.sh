#!/bin/sh
# kernel-tasks-check.sh — GPU check of the native task suite (kernel_tasks/*, docs/kernel-tasks.md).
#  1. tools/check_kernel_tasks.py: every reference built, run at the timed and trial sizes
#     (random, adversarial, constant, zero-prefix inputs), compared with torch in float64 and
#     timed beside torch.
#  2. Every reference submitted as a candidate through `rlc kernel-eval --batch`: the evaluator's
#     own protocol must accept it (status ok, speedup near 1) unless the task forbids the library
#     the reference calls, where the static check must reject it (status cheat).
# Needs $BUILD/rlc, $BUILD/rlc-kernel-worker, nvcc, python3 with torch, and a GPU.
# Env: BUILD (default build), OUT (default $BUILD/kernel-tasks-check).
set -u
BUILD=${BUILD:-build}
OUT=${OUT:-$BUILD/kernel-tasks-check}
mkdir -p "$OUT"
status=0

if python3 tools/check_kernel_tasks.py --out "$OUT/tasks.json" >"$OUT/check_kernel_tasks.txt" 2>&1; then
    echo "check_kernel_tasks.py: $(grep -c '"task"' "$OUT/tasks.json" 2>/dev/null || echo '?') tasks ok"
else
    echo "check_kernel_tasks.py FAILED:"; grep -iE "fail|error" "$OUT/check_kernel_tasks.txt" | head -20
    status=1
fi

: >"$OUT/requests.jsonl"
for dir in kernel_tasks/*/; do
    name=$(basename "$dir")
    printf '{"id":"%s","task":"kernel_tasks/%s","candidate":"kernel_tasks/%s/reference.cu"}\n' "$name" "$name" "$name" \
        >>"$OUT/requests.jsonl"
done
t0=$(date +%s)
"$BUILD/rlc" kernel-eval --batch --cache "${KENV_CACHE:-/tmp/rlc-kenv-cache}" <"$OUT/requests.jsonl" >"$OUT/results.jsonl" ||
    { echo "rlc kernel-eval --batch failed"; status=1; }
t1=$(date +%s)
python3 - "$OUT/results.jsonl" kernel_tasks $((t1 - t0)) <<'PY' || status=1
import json, os, sys
bad = 0
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    spec = json.load(open(os.path.join(sys.argv[2], r["id"], "spec.json")))
    uses_lib = "library" in spec.get("forbid", []) and spec.get("library")
    want = "cheat" if uses_lib else "ok"
    sp = r.get("speedup")
    good = r.get("status") == want and (want == "cheat" or (sp is not None and 0.7 <= sp <= 1.4))
    if not good:
        bad += 1
        print(f"  {r['id']}: status {r.get('status')} (want {want}), speedup {sp}, {str(r.get('failure', ''))[:150]}")
ok = sum(r.get("status") == "ok" for r in rows)
sps = sorted(r["speedup"] for r in rows if r.get("status") == "ok" and r.get("speedup"))
med = sps[len(sps) // 2] if sps else float("nan")
print(f"references as candidates: {len(rows)} evaluated in {sys.argv[3]} s, {ok} ok (speedup median {med:.3f}, "
      f"range {sps[0] if sps else 0:.3f}-{sps[-1] if sps else 0:.3f}), {len(rows) - ok} rejected as library calls; {bad} unexpected")
sys.exit(1 if bad or not rows else 0)
PY
exit $status
