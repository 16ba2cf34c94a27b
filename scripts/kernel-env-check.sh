#!/bin/sh
# kernel-env-check.sh — GPU check of the kernel environment (docs/kernel-env.md).
#
# Evaluates every cheat in src/reward/kernel_env/cheats/ and every honest kernel in
# src/reward/kernel_env/honest/ against its task (the "task:" line at the top of each file,
# tasks in src/reward/kernel_env/test_tasks/) through `rlc kernel-eval --batch --keep-going`,
# prints a table and exits non-zero if a cheat is accepted (status ok with a speedup of 1.1 or
# more) or an honest kernel is rejected or not faster than its reference. --keep-going runs
# the GPU protocol even after a fatal static finding, so the table shows what the dynamic
# checks alone make of each cheat (column "dynamic").
#
# Needs build/rlc and build/rlc-kernel-worker (make), nvcc and a GPU.
# Env: BUILD (default build), KENV_CACHE (module cache, default /tmp/rlc-kenv-cache),
#      KENV_RESULTS (result lines, default /tmp/rlc-kenv-check.jsonl). Extra arguments go to
#      rlc kernel-eval (e.g. --timed 20).
set -u
BUILD=${BUILD:-build}
KE=src/reward/kernel_env
CACHE=${KENV_CACHE:-/tmp/rlc-kenv-cache}
RESULTS=${KENV_RESULTS:-/tmp/rlc-kenv-check.jsonl}
REQ=$(mktemp)
trap 'rm -f "$REQ"' EXIT

for kind in cheats honest; do
    for f in "$KE/$kind"/*.cu; do
        task=$(sed -n 's|^/\* task: \([A-Za-z0-9_]*\).*|\1|p' "$f" | head -n 1)
        name=$(basename "$f" .cu)
        printf '{"id":"%s/%s","task":"%s/test_tasks/%s","candidate":"%s"}\n' "$kind" "$name" "$KE" "$task" "$f" >>"$REQ"
    done
done

t0=$(date +%s)
"$BUILD/rlc" kernel-eval --batch --keep-going --cache "$CACHE" --include "$KE/include" "$@" <"$REQ" >"$RESULTS"
rc=$?
t1=$(date +%s)
[ $rc -eq 0 ] || { echo "kernel-env-check: rlc kernel-eval --batch failed (exit $rc)"; exit 1; }

field() { # field NAME LINE: a string or number field of a compact JSON line
    printf '%s' "$2" | sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[-0-9.eE+]*\|null\|true\|false\).*/\1/p" | tr -d '"'
}

ROWS=$(mktemp)
trap 'rm -f "$REQ" "$ROWS"' EXIT
while IFS= read -r line; do
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
    honest/*)
        if [ "$status" != ok ] || ! awk "BEGIN{exit !(${speed:-0} > 1.0)}"; then verdict=FAIL; fi
        ;;
    esac
    printf '%-34s %-14s %-14s %-9s %-8s %s\n' "$id" "$status" "$dyn" "${speed:--}" "$verdict" "$fail" >>"$ROWS"
done <"$RESULTS"
printf '%-34s %-14s %-14s %-9s %-8s %s\n' "candidate" "status" "dynamic" "speedup" "verdict" "failure"
sort "$ROWS"
n=$(wc -l <"$ROWS")
bad=$(awk '$5 == "FAIL"' "$ROWS" | wc -l)
echo "$n candidates in $((t1 - t0)) s; $bad failed"
[ "$bad" -eq 0 ]
