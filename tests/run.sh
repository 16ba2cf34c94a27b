#!/bin/sh
# Runs each Criterion test binary given as an argument, then prints one closing line
# "N passed, N failed" summed over all of them (CI reads that line). Exit status is non-zero
# if any test failed or crashed, or a binary gave no summary.
passed=0
failed=0
status=0
for bin in "$@"; do
    out=$("$bin" --jobs=2 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -E -v '^\[----\] +$' | grep -E '\[(FAIL|----)\]|Synthesis|Assertion|CRASH|Warning' | sed "s|^|$(basename "$bin"): |"
    line=$(printf '%s\n' "$out" | grep 'Synthesis' | tail -n 1)
    if [ -z "$line" ]; then
        printf '%s\n' "$out" | tail -n 20
        echo "$(basename "$bin"): no Criterion summary (exit $rc)"
        failed=$((failed + 1))
        status=1
        continue
    fi
    p=$(printf '%s' "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
    c=$(printf '%s' "$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
    passed=$((passed + p))
    failed=$((failed + f + c))
    [ "$rc" -ne 0 ] && status=1
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
