#!/bin/sh
# fake_reward.sh MODE — a misbehaving (or well-behaved) external reward program for
# tests/reward/test_external.c and tests/cli/test_train.c. Reads one JSON line per completion,
# answers per MODE; ARG: the line count after which garbage_after answers garbage, or the period
# of every_third-style modes.
mode=$1
arg=$2
n=0
while IFS= read -r line; do
    n=$((n + 1))
    case $mode in
    ok)
        case $line in
        *'"completion":"good"'*) echo '{"reward": 1}' ;;
        *'"level":3'*) echo '{"reward": 3, "note": "extra keys are fine"}' ;;
        *) echo '{"reward": 0.25}' ;;
        esac ;;
    blank) echo; echo '{"reward": 2}' ;;
    exit_second) [ $n -ge 2 ] && exit 3; echo '{"reward": 1}' ;;
    segv) kill -SEGV $$ ;;
    hang) sleep 30 ;;
    garbage) echo 'hello there' ;;
    missing) echo '{"score": 1}' ;;
    string) echo '{"reward": "high"}' ;;
    inf) echo '{"reward": 1e999}' ;;
    partial) printf '{"rew'; exit 0 ;;
    stderr) echo "fake_reward: diagnostics on stderr" >&2; echo '{"reward": 1}' ;;
    len) echo "{\"reward\": ${#line}}" ;; # the request's length: differs between completions
    garbage_after) # as len for the first ARG lines, then garbage
        if [ $n -gt "$arg" ]; then echo 'hello there'; else echo "{\"reward\": ${#line}}"; fi ;;
    broken_every) # line k: k % ARG == 1 garbage, == 2 infinite, == 3 crash; else 0.5 + k / 1000
        case $((n % arg)) in
        1) echo 'not json' ;;
        2) echo '{"reward": 1e999}' ;;
        3) exit 5 ;;
        *) echo "{\"reward\": 0.$((500 + n))}" ;;
        esac ;;
    huge) # rewards beyond what a float sum can hold: +-3e38 alternating
        if [ $((n % 2)) -eq 0 ]; then echo '{"reward": 3e38}'; else echo '{"reward": -3e38}'; fi ;;
    esac
done
