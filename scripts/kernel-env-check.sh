#!/bin/sh
# kernel-env-check.sh — GPU check of the kernel environment (docs/kernel-env.md).
#
# Evaluates every cheat in tests/fixtures/kernel_env/cheats/ and every honest kernel in
# tests/fixtures/kernel_env/honest/ against its task (the "task:" line at the top of each file,
# tasks in tests/fixtures/kernel_env/tasks/) through `rlc kernel-eval --batch --keep-going`,
# prints a table and exits non-zero if a cheat is accepted (status ok with a speedup of 1.1 or
# more) or an honest kernel is rejected or not faster than its reference. --keep-going runs
# the GPU protocol even after a fatal static finding, so the table shows what the dynamic
# checks alone make of each cheat (column "dynamic").
#
# KernelBench step: every candidate in tests/fixtures/kernelbench/candidates/ (a ModelNew file
# whose first line is "# expect: STATUS [require-kernel] (PROBLEM) ...") goes through the same
# `rlc kernel-eval --batch --keep-going` against tests/fixtures/kernelbench/problems/PROBLEM.py
# (kernelbench_worker.py under KENV_PYTHON; with --require-kernel for the files so tagged); a
# row fails when its status differs from the expected one. STATUS "nogain" means: anything but
# status ok with a speedup of 1.1 or more (a memoising cheat that must gain nothing). A Python that is missing, cannot import torch or sees no GPU is reported on one
# line and counted as a failure.
#
# Hostile step (the sandbox, src/reward/kernel_env/ksandbox.h): the candidates of
# tests/fixtures/kernel_env/hostile/ (write or delete files outside their directory, open a
# socket, fork, read $HOME, kill rlc, exhaust memory) run in their own batch with
# --keep-going; each must end in a status other than ok (dynamically too), rlc must survive
# (every result line written), and afterwards no file they tried to write may exist and the
# victim file they tried to delete must still be there (the KernelBench hostile candidates
# are checked the same way).
#
# Needs build/rlc, build/rlc-kernel-worker and build/librlc-kenv-preload.so (make; without the
# last the CUDA driver does not start under Landlock and the sandbox is weakened), nvcc, a GPU,
# and Python with torch.
# Env: BUILD (default build), KENV_CACHE (module cache, default /tmp/rlc-kenv-cache),
#      KENV_RESULTS (result lines, default /tmp/rlc-kenv-check.jsonl; the KernelBench step's go
#      to the same name with -kernelbench), KENV_PYTHON (default python3). Extra arguments go to
#      rlc kernel-eval (e.g. --timed 20).
set -u
BUILD=${BUILD:-build}
KE=src/reward/kernel_env
FX=tests/fixtures/kernel_env
CACHE=${KENV_CACHE:-/tmp/rlc-kenv-cache}
RESULTS=${KENV_RESULTS:-/tmp/rlc-kenv-check.jsonl}
KB=tests/fixtures/kernelbench
KB_RESULTS=${RESULTS%.jsonl}-kernelbench.jsonl
PY=${KENV_PYTHON:-python3}
REQ=$(mktemp)
KB_REQ=$(mktemp)
KB_RK_REQ=$(mktemp)
KB_EXPECT=$(mktemp)
ROWS=$(mktemp)
trap 'rm -f "$REQ" "$KB_REQ" "$KB_RK_REQ" "$KB_EXPECT" "$ROWS"' EXIT

for kind in cheats honest; do
    for f in "$FX/$kind"/*.cu; do
        task=$(sed -n 's|^/\* task: \([A-Za-z0-9_]*\).*|\1|p' "$f" | head -n 1)
        name=$(basename "$f" .cu)
        printf '{"id":"%s/%s","task":"%s/tasks/%s","candidate":"%s"}\n' "$kind" "$name" "$FX" "$task" "$f" >>"$REQ"
    done
done

t0=$(date +%s)
"$BUILD/rlc" kernel-eval --batch --keep-going --cache "$CACHE" --include "$KE/include" "$@" <"$REQ" >"$RESULTS"
rc=$?
t1=$(date +%s)
[ $rc -eq 0 ] || { echo "kernel-env-check: rlc kernel-eval --batch failed (exit $rc)"; exit 1; }

# Hostile step: traps the candidates must not spring.
HOSTILE_REQ=$(mktemp)
HOSTILE_RESULTS=${RESULTS%.jsonl}-hostile.jsonl
real_home=$(getent passwd "$(id -u)" | cut -d: -f6)
[ -n "$real_home" ] || real_home=$HOME
rm -f /tmp/rlc-hostile-written /tmp/rlc-hostile-kb-written rlc-hostile-written-cwd
echo victim >/tmp/rlc-hostile-victim
echo secret >"$real_home/.rlc-hostile-secret"
n_hostile=0
for f in "$FX"/hostile/*.cu; do
    printf '{"id":"hostile/%s","task":"%s/tasks/ew_chain","candidate":"%s"}\n' "$(basename "$f" .cu)" "$FX" "$f" >>"$HOSTILE_REQ"
    n_hostile=$((n_hostile + 1))
done
"$BUILD/rlc" kernel-eval --batch --keep-going --cache "$CACHE" --include "$KE/include" "$@" <"$HOSTILE_REQ" >"$HOSTILE_RESULTS"
hostile_rc=$?
rm -f "$HOSTILE_REQ"
hostile_bad=0
if [ $hostile_rc -ne 0 ] || [ "$(wc -l <"$HOSTILE_RESULTS")" -ne "$n_hostile" ]; then
    echo "kernel-env-check: hostile step: rlc exited $hostile_rc with $(wc -l <"$HOSTILE_RESULTS") of $n_hostile results (killed by a candidate?)"
    hostile_bad=1
fi

# KernelBench step.
kb_bad=0
kb_n=0
for f in "$KB"/candidates/*.py; do
    name=$(basename "$f" .py)
    expect=$(sed -n '1s/^# expect: \([a-z_]*\).*/\1/p' "$f")
    problem=$(sed -n '1s/^# expect: [a-z_]* *\(\[require-kernel\]\)\{0,1\} *(\([^)]*\)).*/\2/p' "$f")
    if [ -z "$expect" ] || [ ! -f "$KB/problems/$problem.py" ]; then
        echo "kernel-env-check: $f: first line must be '# expect: STATUS  (PROBLEM) ...' with $KB/problems/PROBLEM.py"
        kb_bad=$((kb_bad + 1))
        continue
    fi
    req=$KB_REQ
    sed -n 1p "$f" | grep -q '\[require-kernel\]' && req=$KB_RK_REQ
    printf '{"id":"kernelbench/%s","task":"%s/problems/%s.py","candidate":"%s"}\n' "$name" "$KB" "$problem" "$f" >>"$req"
    printf 'kernelbench/%s %s\n' "$name" "$expect" >>"$KB_EXPECT"
    kb_n=$((kb_n + 1))
done
kb_t0=$(date +%s)
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "kernel-env-check: KernelBench step: '$PY' not found (set KENV_PYTHON to a Python with torch); counted as a failure"
    kb_bad=$((kb_bad + 1))
    : >"$KB_RESULTS"
elif ! torch_msg=$("$PY" -c 'import sys, torch; ok = torch.cuda.is_available(); print(torch.__version__, "CUDA", ok); sys.exit(0 if ok else 1)' 2>&1); then
    echo "kernel-env-check: KernelBench step: $PY cannot use torch on a GPU ($(printf '%s' "$torch_msg" | tail -n 1)); counted as a failure"
    kb_bad=$((kb_bad + 1))
    : >"$KB_RESULTS"
else
    "$BUILD/rlc" kernel-eval --batch --keep-going --python "$PY" "$@" <"$KB_REQ" >"$KB_RESULTS"
    rc=$?
    if [ -s "$KB_RK_REQ" ]; then
        "$BUILD/rlc" kernel-eval --batch --keep-going --require-kernel --python "$PY" "$@" <"$KB_RK_REQ" >>"$KB_RESULTS"
        [ $? -eq 0 ] || rc=1
    fi
    if [ $rc -ne 0 ]; then
        echo "kernel-env-check: KernelBench step: rlc kernel-eval --batch failed (exit $rc); counted as a failure"
        kb_bad=$((kb_bad + 1))
    fi
fi
kb_t1=$(date +%s)

field() { # field NAME LINE: a string or number field of a compact JSON line
    printf '%s' "$2" | sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[-0-9.eE+]*\|null\|true\|false\).*/\1/p" | tr -d '"'
}

# Side effects of the hostile candidates (native and KernelBench).
for f in /tmp/rlc-hostile-written /tmp/rlc-hostile-kb-written rlc-hostile-written-cwd; do
    if [ -e "$f" ]; then
        echo "kernel-env-check: SANDBOX FAILURE: a hostile candidate created $f"
        hostile_bad=$((hostile_bad + 1))
        rm -f "$f"
    fi
done
if [ ! -e /tmp/rlc-hostile-victim ]; then
    echo "kernel-env-check: SANDBOX FAILURE: a hostile candidate deleted /tmp/rlc-hostile-victim"
    hostile_bad=$((hostile_bad + 1))
fi
rm -f /tmp/rlc-hostile-victim "$real_home/.rlc-hostile-secret"

cat "$RESULTS" "$HOSTILE_RESULTS" "$KB_RESULTS" | while IFS= read -r line; do
    [ -n "$line" ] || continue
    id=$(field id "$line")
    status=$(field status "$line")
    dyn=$(field dynamic_status "$line")
    [ -n "$dyn" ] || dyn=$status
    speed=$(field speedup "$line")
    fail=$(printf '%s' "$line" | sed -n 's/.*"failure":"\([^"]*\)".*/\1/p' | cut -c1-110)
    verdict=PASS
    case "$id" in
    cheats/*)
        if [ "$status" = ok ] && awk "BEGIN{exit !(${speed:-0} >= 1.1)}"; then verdict=FAIL; fi
        [ "$status" = error ] && verdict=FAIL
        ;;
    hostile/*)
        if [ "$status" = ok ] || [ "$dyn" = ok ] || [ "$status" = error ]; then verdict=FAIL; fi
        ;;
    honest/*)
        if [ "$status" != ok ] || ! awk "BEGIN{exit !(${speed:-0} > 1.0)}"; then verdict=FAIL; fi
        ;;
    kernelbench/*)
        expect=$(awk -v id="$id" '$1 == id {print $2}' "$KB_EXPECT")
        if [ "$expect" = nogain ]; then
            if [ "$status" = error ] || { [ "$status" = ok ] && awk "BEGIN{exit !(${speed:-0} >= 1.1)}"; }; then
                verdict=FAIL
                fail="expected no gain; $fail"
            fi
        elif [ "$status" != "$expect" ] || { case "$id" in kernelbench/hostile_*) [ "$dyn" = ok ] ;; *) false ;; esac; }; then
            verdict=FAIL
            fail="expected $expect; $fail"
        fi
        ;;
    esac
    printf '%-34s %-14s %-14s %-9s %-8s %s\n' "$id" "$status" "$dyn" "${speed:--}" "$verdict" "$fail" >>"$ROWS"
done
# A KernelBench candidate without a result line (the step did not run, or rlc lost it) fails.
if [ -s "$KB_RESULTS" ]; then
    while read -r id expect; do
        grep -q "^$id " "$ROWS" || printf '%-34s %-14s %-14s %-9s %-8s %s\n' "$id" "-" "-" "-" "FAIL" "no result (expected $expect)" >>"$ROWS"
    done <"$KB_EXPECT"
fi
printf '%-34s %-14s %-14s %-9s %-8s %s\n' "candidate" "status" "dynamic" "speedup" "verdict" "failure"
sort "$ROWS"
n=$(wc -l <"$ROWS")
bad=$(awk '$5 == "FAIL"' "$ROWS" | wc -l)
bad=$((bad + kb_bad + hostile_bad))
echo "$n candidates in $((t1 - t0)) s (native) + $((kb_t1 - kb_t0)) s (KernelBench, $kb_n candidates); $bad failed"
# The sandbox as applied (after calibration: which layers the GPU driver allowed).
echo "sandbox: native $(sed -n 's/.*"sandbox":"\([^"]*\)".*/\1/p' "$HOSTILE_RESULTS" | tail -n 1); KernelBench $(sed -n 's/.*"sandbox":"\([^"]*\)".*/\1/p' "$KB_RESULTS" | tail -n 1)"
[ "$bad" -eq 0 ]
