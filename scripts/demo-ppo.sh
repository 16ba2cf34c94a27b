#!/bin/sh
# demo-ppo.sh — `make demo-ppo`: PPO against GRPO on the demo's addition task, on the CPU, from
# the same SFT checkpoint, with the same rollouts per step (8 prompts x 8 completions of at most
# 6 tokens, temperature 0.3), the demo's GRPO schedule for both (lr 1.5e-4, cosine to 10% after a
# 5% warmup, seed 1) and the held-out greedy accuracy every EVERY steps (--eval-data).
#
# 1. `rlc demo --grpo-steps 0`: the demo's tiny Qwen3, its data split and its SFT phase;
# 2. `rlc grpo` (the demo's GRPO phase, as a command), `rlc grpo --variant rloo` (the critic-free
#    leave-one-out baseline) and `rlc ppo` (a value model from the SFT trunk) from OUT/sft;
# 3. OUT/curves.tsv: algorithm, step, completion tokens generated so far, held-out accuracy.
#
# usage: sh scripts/demo-ppo.sh [RLC] [OUT]   (env: STEPS=250 EVERY=25 SEED=1 DEVICE=cpu PPO_ARGS=...
#        ALGOS="grpo rloo ppo"); an existing OUT/sft (the SFT phase is deterministic) is reused
set -eu
# OpenMP threads that spin at barriers cost PPO's small mini-batches dearly on a busy machine
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
rlc=${1:-build/cpu/rlc}
out=${2:-runs/demo-ppo}
steps=${STEPS:-250}
every=${EVERY:-25}
seed=${SEED:-1}
device=${DEVICE:-cpu}
algos=${ALGOS:-grpo rloo ppo}
common="--model $out/sft --data $out/train.jsonl --reward math --prompts-per-step 8 --max-new-tokens 6
        --temperature 0.3 --device $device --steps $steps --lr 1.5e-4 --schedule cosine --warmup $((steps / 20))
        --min-lr-ratio 0.1 --seed $seed --eval-data $out/heldout.jsonl --eval-every $every"
ppo_args=${PPO_ARGS:---n-samples-per-prompt 8 --vf-lr 3e-4 --critic-warmup 5 --kl-coef 0 --ppo-epochs 1 --num-mini-batches 1}

[ -f "$out/sft/config.json" ] || "$rlc" demo --out "$out" --grpo-steps 0 --device cpu
sft=$("$rlc" eval --model "$out/sft" --data "$out/heldout.jsonl" --reward math --max-new-tokens 6 --device cpu --json |
    sed 's/.*"accuracy": \([0-9.e-]*\).*/\1/')
for algo in $algos; do
    rm -rf "${out:?}/$algo"
    # shellcheck disable=SC2086
    case $algo in
    grpo) "$rlc" grpo $common --group-size 8 --out "$out/grpo" ;;
    rloo) "$rlc" grpo $common --group-size 8 --variant rloo --loss-norm sequence --out "$out/rloo" ;;
    ppo) "$rlc" ppo $common $ppo_args --out "$out/ppo" ;;
    *) echo "demo-ppo: unknown algorithm '$algo' in ALGOS (grpo, rloo, ppo)" >&2; exit 2 ;;
    esac
done
printf 'algorithm\tstep\ttokens\taccuracy\n' > "$out/curves.tsv"
for algo in $algos; do
    printf '%s\t0\t0\t%s\n' "$algo" "$sft" >> "$out/curves.tsv"
    awk -v algo="$algo" '{
        match($0, /"completion_len": [0-9.e+-]+/); tokens += 64 * substr($0, RSTART + 18, RLENGTH - 18)
        if (match($0, /"eval_accuracy": [0-9.e+-]+/)) {
            acc = substr($0, RSTART + 17, RLENGTH - 17)
            match($0, /"step": [0-9]+/); printf "%s\t%s\t%.0f\t%s\n", algo, substr($0, RSTART + 8, RLENGTH - 8), tokens, acc
        }
    }' "$out/$algo/metrics.jsonl" >> "$out/curves.tsv"
done
echo "demo-ppo: held-out accuracy curves in $out/curves.tsv"
cat "$out/curves.tsv"
