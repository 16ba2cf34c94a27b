#!/bin/sh
# fake_reward.sh MODE — a misbehaving (or well-behaved) external reward program for
# tests/reward/test_external.c. Reads one JSON line per completion, answers per MODE.
mode=$1
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
    esac
done
