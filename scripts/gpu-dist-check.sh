#!/bin/sh
# gpu-dist-check.sh — data parallelism on the GPUs there are (needs a CUDA build and NCCL):
#  1. on one GPU: `rlc sft` as the only rank of a launched run (torchrun-style variables: the
#     NCCL communicator, ZeRO 0, 1 and 2 with their hooks, shards and all-gathers) against the
#     plain single-GPU run on the same data; the per-step losses must agree within 1e-3;
#  2. with 2 GPUs or more: `--gpus 2` (ZeRO 2) against one GPU with twice the batch, within 2e-2
#     (bf16 activations); the numbers of docs/distributed.md come from scripts/dist-bench.sh.
# Environment: BUILD (default build), OUT (default build/gpu-dist-check).
set -u
export NCCL_NVLS_ENABLE=0
BUILD=${BUILD:-build}
OUT=${OUT:-build/gpu-dist-check}
RLC=$BUILD/rlc
. scripts/find-nccl.sh
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
    { echo "rlc demo (the model for the checks) FAILED"; tail -5 "$OUT/init.log"; exit 1; }
SFT="sft --model $OUT/init/sft --data $OUT/sft.jsonl --steps 20 --lr 1e-3 --max-tokens 256 --device cuda --no-save"

compare() { # name, run a, run b, tolerance
    python3 - "$OUT/$2/metrics.jsonl" "$OUT/$3/metrics.jsonl" "$4" "$1" <<'PY'
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])]
assert len(a) == len(b) > 0, (len(a), len(b))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
print(f"{sys.argv[4]}: {len(a)} steps, loss {a[0]:.4f}->{a[-1]:.4f} vs {b[0]:.4f}->{b[-1]:.4f}, "
      f"worst relative step difference {worst:.2e} (limit {sys.argv[3]})")
sys.exit(0 if worst <= float(sys.argv[3]) else 1)
PY
}

run() { # name, then environment assignments and extra options via "$@"
    name=$1; shift
    rm -rf "$OUT/$name"
    env "$@" --out "$OUT/$name" > "$OUT/$name.log" 2>&1 || { echo "$name FAILED"; tail -5 "$OUT/$name.log"; status=1; return 1; }
}

run plain $RLC $SFT --grad-accum 2
for zero in 0 1 2; do
    run one-rank-zero$zero RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 \
        $RLC $SFT --grad-accum 2 --zero $zero &&
        { compare "NCCL, 1 rank, ZeRO $zero vs plain" plain one-rank-zero$zero 1e-3 || status=1; }
done
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
    run two-gpus $RLC $SFT --grad-accum 1 --gpus 2 --zero 2 &&
        { compare "--gpus 2 --zero 2 vs 1 GPU with twice the batch" plain two-gpus 2e-2 || status=1; }
    grep -h "GPU memory in use" "$OUT/two-gpus.log"
else
    echo "one GPU: the 2-GPU checks are skipped (scripts/dist-bench.sh on a machine with 2)"
fi
exit $status
