#!/bin/sh
# gpu-train-check.sh — the trainers end to end on the GPU (needs a CUDA build and a GPU).
#  1. `rlc sft` on a tiny model with the demo tokenizer (made by one CPU step of `rlc demo`),
#     --device cpu and --device cuda, same data and seed: the per-step loss curves must agree
#     within 3% (bf16 activations on the GPU, fp32 on the CPU).
#  2. `rlc demo --device cuda`: SFT then GRPO on the GPU; prints both held-out accuracies.
#  3. With QWEN_DIR set (an HF Qwen3 checkpoint, e.g. the random Qwen3-0.6B that
#     tools/make_qwen3_0p6b.py writes): a few `rlc sft` steps on it on the GPU.
# Environment: BUILD (default build), OUT (default build/gpu-train-check).
set -u
BUILD=${BUILD:-build}
OUT=${OUT:-build/gpu-train-check}
RLC=$BUILD/rlc
mkdir -p "$OUT"
status=0

i=0
while [ $i -lt 96 ]; do
    a=$((i % 17)); b=$((i * 7 % 23))
    echo "{\"prompt\": \"What is $a+$b?\", \"completion\": \" $((a + b))<|im_end|>\"}"
    i=$((i + 1))
done > "$OUT/sft.jsonl"

rm -rf "$OUT/init"
$RLC demo --device cpu --out "$OUT/init" --sft-steps 1 --grpo-steps 0 --held-out 1 > "$OUT/init.log" 2>&1 ||
    { echo "rlc demo (model for the sft check) FAILED"; tail -5 "$OUT/init.log"; status=1; }
for dev in cpu cuda; do
    rm -rf "$OUT/sft-$dev"
    $RLC sft --model "$OUT/init/sft" --data "$OUT/sft.jsonl" --out "$OUT/sft-$dev" --steps 40 --lr 1e-3 --max-tokens 512 \
        --device $dev > "$OUT/sft-$dev.log" 2>&1 || { echo "sft --device $dev FAILED"; tail -5 "$OUT/sft-$dev.log"; status=1; }
done
python3 - "$OUT/sft-cpu/metrics.jsonl" "$OUT/sft-cuda/metrics.jsonl" <<'PY' || status=1
import json, sys
cpu = [json.loads(l)["loss"] for l in open(sys.argv[1])]
gpu = [json.loads(l)["loss"] for l in open(sys.argv[2])]
assert len(cpu) == len(gpu) > 0, (len(cpu), len(gpu))
worst = max(abs(g - c) / abs(c) for c, g in zip(cpu, gpu))
print(f"sft loss curve cpu vs cuda: {len(cpu)} steps, {cpu[0]:.4f}->{cpu[-1]:.4f} (cpu) "
      f"{gpu[0]:.4f}->{gpu[-1]:.4f} (cuda), worst relative step difference {worst:.2e} (limit 3e-2)")
sys.exit(0 if worst <= 3e-2 else 1)
PY

start=$(date +%s)
if timeout 300 $RLC demo --device cuda --out "$OUT/demo" > "$OUT/demo.log" 2>&1; then
    echo "demo on cuda ($(( $(date +%s) - start )) s):"; grep -E "accuracy" "$OUT/demo.log" | tail -3
else
    echo "demo --device cuda FAILED"; tail -5 "$OUT/demo.log"; status=1
fi

if [ -n "${QWEN_DIR:-}" ]; then
    rm -rf "$OUT/sft-qwen"
    if $RLC sft --model "$QWEN_DIR" --tokenizer examples/demo/tokenizer.json --data "$OUT/sft.jsonl" \
        --out "$OUT/sft-qwen" --steps 5 --lr 1e-5 --max-tokens 4096 --device cuda > "$OUT/sft-qwen.log" 2>&1; then
        echo "sft on $QWEN_DIR (cuda):"; tail -2 "$OUT/sft-qwen.log"
    else
        echo "sft on $QWEN_DIR FAILED"; tail -5 "$OUT/sft-qwen.log"; status=1
    fi
fi
exit $status
