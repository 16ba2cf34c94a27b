#!/bin/sh
# demo-ppo.sh — `make demo-ppo`: PPO against GRPO on the demo's addition task, on the CPU, from
# the same SFT checkpoint and with the same number of generated completions per step
# (8 prompts x 8 samples of at most 6 tokens), held-out greedy accuracy every CHUNK steps.
#
# 1. `rlc demo --grpo-steps 0`: the demo's tiny Qwen3, its data split and its SFT phase;
# 2. `rlc grpo` and `rlc ppo` from OUT/sft, CHUNK steps at a time (each chunk resumes the last:
#    bit-identical to one run; constant learning rate, so chunking changes nothing), then
#    `rlc eval` on OUT/heldout.jsonl after each chunk;
# 3. OUT/curves.tsv: algorithm, step, completions generated so far, completion tokens generated
#    so far (from metrics.jsonl), held-out accuracy.
#
# usage: sh scripts/demo-ppo.sh [RLC] [OUT]   (env: STEPS=250 CHUNK=50 PPO_ARGS=... GRPO_ARGS=...)
set -eu
# OpenMP threads that spin at barriers cost PPO's small mini-batches dearly on a busy machine
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
rlc=${1:-build/cpu/rlc}
out=${2:-runs/demo-ppo}
steps=${STEPS:-250}
chunk=${CHUNK:-50}
common="--data $out/train.jsonl --reward math --prompts-per-step 8 --max-new-tokens 6 --temperature 0.3 --device cpu"
grpo_args=${GRPO_ARGS:---group-size 8 --lr 1.5e-4}
ppo_args=${PPO_ARGS:---n-samples-per-prompt 8 --lr 1.5e-4 --vf-lr 1e-3 --kl-coef 0 --ppo-epochs 2 --num-mini-batches 2}

"$rlc" demo --out "$out" --grpo-steps 0 --device cpu
printf 'algorithm\tstep\tcompletions\ttokens\taccuracy\n' > "$out/curves.tsv"
for algo in grpo ppo; do
    acc=$("$rlc" eval --model "$out/sft" --data "$out/heldout.jsonl" --reward math --max-new-tokens 6 --device cpu --json |
        sed 's/.*"accuracy": \([0-9.e-]*\).*/\1/')
    printf '%s\t0\t0\t0\t%s\n' "$algo" "$acc" >> "$out/curves.tsv"
    if [ "$algo" = grpo ]; then args=$grpo_args; else args=$ppo_args; fi
    rm -rf "${out:?}/$algo"
    step=0
    while [ "$step" -lt "$steps" ]; do
        step=$((step + chunk))
        if [ "$step" -gt "$steps" ]; then step=$steps; fi
        if [ -d "$out/$algo/model" ]; then from="--resume $out/$algo/model"; else from="--model $out/sft"; fi
        # shellcheck disable=SC2086
        "$rlc" "$algo" $from --out "$out/$algo" --steps "$step" $common $args
        acc=$("$rlc" eval --model "$out/$algo/model" --data "$out/heldout.jsonl" --reward math --max-new-tokens 6 \
            --device cpu --json | sed 's/.*"accuracy": \([0-9.e-]*\).*/\1/')
        tokens=$(sed 's/.*"completion_len": \([0-9.e+-]*\).*/\1/' "$out/$algo/metrics.jsonl" | awk '{s += $1 * 64} END {printf "%.0f", s}')
        printf '%s\t%d\t%d\t%s\t%s\n' "$algo" "$step" $((step * 64)) "$tokens" "$acc" >> "$out/curves.tsv"
        echo "demo-ppo: $algo step $step: held-out accuracy $acc"
    done
done
echo "demo-ppo: held-out accuracy curves in $out/curves.tsv"
cat "$out/curves.tsv"
