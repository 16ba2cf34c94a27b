#!/bin/sh
# dist-bench.sh — the multi-GPU numbers and checks of docs/distributed.md, on one machine with
# 2 GPUs (written for 2 x H200): one command, prints a table. Needs a CUDA build of rlc
# (make, or scripts/gpu-prepare.sh + BUILD=build/cudah), NCCL (docs/distributed.md says where
# rlc finds it) and python3 with torch + transformers (random checkpoints). Nothing is trained
# for real: the models are randomly initialised, the data synthetic.
#
#   1. SFT tokens/s, Qwen3-0.6B, the same per-GPU batch on 1 and on 2 GPUs (target: >= 1.9x)
#   2. GRPO samples/s, Qwen3-0.6B, 8 prompts x 8 samples per GPU, 256 new tokens (>= 1.8x)
#   3. the network path: 2 ranks started by hand as two machines would be (one GPU each,
#      rendezvous at this machine's address), NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
#   4. Qwen3-8B (its real config, random weights) with --zero 2 on 2 GPUs: memory per GPU beside
#      what ZeRO predicts (the plan rlc prints)
#   5. the same model on one GPU: refused with needed vs available memory (exit status 1)
#   6. equivalence: 5 SFT steps on 2 ranks vs 1 rank on the same global batch, largest loss
#      difference
#   7. PPO samples/s (policy + value model + KL reference), Qwen3-0.6B, 8 x 8 per GPU, 256 new
#      tokens, on 1 and 2 GPUs, and the memory in use per GPU
#
# usage: sh scripts/dist-bench.sh          Environment: BUILD (default build), OUT (default
# build/dist-bench), KEEP_MODELS=1 keeps the random checkpoints between runs (8B: 16 GB),
# SECTIONS (default "1 2 3 4 5 6 7": which of the above to run, e.g. "4 5" in a second call).
set -u
# NVLink multicast stays off on the lent multi-GPU machines (it can take the host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BUILD=${BUILD:-build}
OUT=${OUT:-build/dist-bench}
SECTIONS=${SECTIONS:-1 2 3 4 5 6 7}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
RLC=$BUILD/rlc
TOK=examples/demo/tokenizer.json
. scripts/find-nccl.sh
mkdir -p "$OUT"
RES=$OUT/results.txt
: > "$RES"
note() { printf '%s\t%s\n' "$1" "$2" >> "$RES"; }

n_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$n_gpus" -ge 2 ] || { echo "dist-bench: needs 2 GPUs, nvidia-smi lists $n_gpus"; exit 1; }
[ -x "$RLC" ] || { echo "dist-bench: $RLC not built"; exit 1; }
echo "dist-bench: $n_gpus GPUs ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)), results in $OUT"

# ---- models and data ------------------------------------------------------------------------
models=0.6b
if want 4 || want 5; then models="0.6b 8b"; fi
for m in $models; do
    if [ ! -f "$OUT/qwen3-$m/config.json" ]; then
        python3 tools/make_random_model.py bench/configs/qwen3-$m.json "$OUT/qwen3-$m" > "$OUT/make-$m.log" 2>&1 ||
            { echo "dist-bench: making the random Qwen3-$m failed"; tail -5 "$OUT/make-$m.log"; exit 1; }
    fi
done
python3 - "$OUT" <<'PY'
import json, random, sys
out = sys.argv[1]
rng = random.Random(0)
words = "the a of to and in is it for on with as was at by an be this which or from".split()
with open(f"{out}/sft.jsonl", "w") as f:
    for i in range(2000):  # about 1,000 tokens each with the demo tokenizer
        text = " ".join(rng.choice(words) for _ in range(500))
        f.write(json.dumps({"prompt": f"Copy {i}:", "completion": text}) + "\n")
with open(f"{out}/prompts.jsonl", "w") as f:
    for i in range(512):
        f.write(json.dumps({"prompt": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)}) + "\n")
PY

Q06=$OUT/qwen3-0.6b
SFT="sft --tokenizer $TOK --data $OUT/sft.jsonl --max-tokens 16384 --max-len 4096 --lr 1e-5 --device cuda --no-save"
PPO="ppo --tokenizer $TOK --data $OUT/prompts.jsonl --reward math --prompts-per-step 8 --n-samples-per-prompt 8 --max-new-tokens 256 --ppo-epochs 1 --lr 1e-6 --device cuda --no-save"
GRPO="grpo --tokenizer $TOK --data $OUT/prompts.jsonl --reward math --prompts-per-step 8 --group-size 8 --max-new-tokens 256 --max-tokens 16384 --lr 1e-6 --device cuda --no-save"

# mean of a metric over steps from..to of a metrics file
metric() { python3 -c "
import json, sys
rows = [json.loads(l) for l in open('$1')][$3 - 1:$4]
print('%.1f' % (sum(r['$2'] for r in rows) / len(rows)) if rows else 'n/a')"; }

run() { # name, then the rlc command line
    name=$1; shift
    rm -rf "$OUT/$name"
    start=$(date +%s)
    "$@" --out "$OUT/$name" > "$OUT/$name.log" 2>&1
    rc=$?
    echo "  $name: exit $rc, $(( $(date +%s) - start )) s"
    [ $rc -eq 0 ] || tail -5 "$OUT/$name.log"
    return $rc
}

# An RL trainer's samples/s on 1 and on 2 GPUs (64 samples per GPU a step; steps 2-4 timed).
rl_scaling() { # label, name, then the rlc command line
    label=$1 name=$2; shift 2
    run $name-1gpu "$@" --model "$Q06" --steps 4
    run $name-2gpu "$@" --model "$Q06" --steps 4 --gpus 2
    s1=$(metric "$OUT/$name-1gpu/metrics.jsonl" time 2 4)
    s2=$(metric "$OUT/$name-2gpu/metrics.jsonl" time 2 4)
    g1=$(python3 -c "print('%.1f' % (64 / $s1))" 2>/dev/null || echo n/a)
    g2=$(python3 -c "print('%.1f' % (128 / $s2))" 2>/dev/null || echo n/a)
    note "$label samples/s, 1 GPU (64 per step, step $s1 s)" "$g1"
    note "$label samples/s, 2 GPUs (128 per step, step $s2 s), speed-up" "$g2 ($(python3 -c "print('%.2fx' % ($g2 / $g1))" 2>/dev/null))"
}

# ---- 1. SFT throughput ------------------------------------------------------------------------
if want 1; then
echo "1. SFT tokens/s, Qwen3-0.6B"
run sft-1gpu $RLC $SFT --model "$Q06" --steps 12
run sft-2gpu $RLC $SFT --model "$Q06" --steps 12 --gpus 2
t1=$(metric "$OUT/sft-1gpu/metrics.jsonl" tokens_per_s 3 12)
t2=$(metric "$OUT/sft-2gpu/metrics.jsonl" tokens_per_s 3 12)
note "SFT tokens/s, 1 GPU (16384 tokens per step)" "$t1"
note "SFT tokens/s, 2 GPUs (16384 per GPU), speed-up" "$t2 ($(python3 -c "print('%.2fx' % ($t2 / $t1))" 2>/dev/null))"
fi

# ---- 2. GRPO throughput -----------------------------------------------------------------------
if want 2; then
echo "2. GRPO samples/s, Qwen3-0.6B, 8 x 8 per GPU, 256 new tokens"
rl_scaling GRPO grpo $RLC $GRPO
fi

# ---- 3. the network path ----------------------------------------------------------------------
if want 3; then
echo "3. SFT over NCCL's network transport, ranks started as on two machines"
addr=$(hostname -I 2>/dev/null | awk '{print $1}')
[ -n "$addr" ] || addr=127.0.0.1
port=$((29500 + $$ % 1000))
rm -rf "$OUT/sft-net"
for r in 0 1; do
    CUDA_VISIBLE_DEVICES=$r RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=$addr MASTER_PORT=$port \
        NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO \
        $RLC $SFT --model "$Q06" --steps 12 --out "$OUT/sft-net" > "$OUT/sft-net.$r.log" 2>&1 &
done
wait
tn=$(metric "$OUT/sft-net/metrics.jsonl" tokens_per_s 3 12)
transport=$(grep -o 'via NET/[A-Za-z]*' "$OUT/sft-net.0.log" | sort -u | tr '\n' ' ')
note "SFT tokens/s, 2 GPUs over the network path ($addr; NCCL: ${transport:-see log})" "$tn"
fi

# ---- 4. Qwen3-8B, ZeRO 2, 2 GPUs -------------------------------------------------------------
if want 4; then
echo "4. Qwen3-8B --zero 2 on 2 GPUs"
run sft-8b-zero2 $RLC $SFT --model "$OUT/qwen3-8b" --steps 3 --gpus 2 --zero 2 --max-tokens 4096 --recompute
plan=$(grep -o 'memory plan: [0-9.]* GiB' "$OUT/sft-8b-zero2.log" | head -1)
zero=$(grep -o '[0-9.]* GiB as ZeRO counts' "$OUT/sft-8b-zero2.log" | head -1)
used=$(grep -o 'rank [0-9]*: GPU memory in use after training: [0-9.]* GiB' "$OUT/sft-8b-zero2.log" | sed 's/ after training//' | tr '\n' ';')
l8=$(metric "$OUT/sft-8b-zero2/metrics.jsonl" loss 1 3)
note "Qwen3-8B --zero 2, 2 GPUs: in use per GPU" "${used:-n/a}"
note "Qwen3-8B --zero 2, 2 GPUs: ZeRO's figure / rlc's whole plan" "${zero:-n/a} / ${plan:-n/a}"
note "Qwen3-8B --zero 2, 2 GPUs: mean loss of 3 steps" "$l8"
fi

# ---- 5. Qwen3-8B on one GPU -------------------------------------------------------------------
if want 5; then
echo "5. Qwen3-8B on one GPU (must be refused)"
rm -rf "$OUT/sft-8b-1gpu"
$RLC $SFT --model "$OUT/qwen3-8b" --steps 1 --max-tokens 4096 --recompute --out "$OUT/sft-8b-1gpu" > "$OUT/sft-8b-1gpu.log" 2>&1
rc=$?
note "Qwen3-8B on 1 GPU: exit status (1 = refused)" "$rc: $(grep -o 'not enough GPU memory.*' "$OUT/sft-8b-1gpu.log" | head -1)"
fi

# ---- 6. equivalence ---------------------------------------------------------------------------
if want 6; then
echo "6. 5 SFT steps: 2 ranks x grad-accum 1 vs 1 rank x grad-accum 2"
run eq-1gpu $RLC $SFT --model "$Q06" --steps 5 --max-tokens 8192 --grad-accum 2 --lr 1e-4
run eq-2gpu $RLC $SFT --model "$Q06" --steps 5 --max-tokens 8192 --grad-accum 1 --lr 1e-4 --gpus 2
eq=$(python3 -c "
import json
a = [json.loads(l)['loss'] for l in open('$OUT/eq-1gpu/metrics.jsonl')]
b = [json.loads(l)['loss'] for l in open('$OUT/eq-2gpu/metrics.jsonl')]
print('%.2e (losses %s vs %s)' % (max(abs(x - y) / x for x, y in zip(a, b)), ' '.join('%.4f' % x for x in a), ' '.join('%.4f' % y for y in b)))" 2>/dev/null)
note "5 SFT steps, 2 ranks vs 1: largest relative loss difference" "${eq:-n/a}"
fi

# ---- 7. PPO throughput ------------------------------------------------------------------------
if want 7; then
echo "7. PPO samples/s, Qwen3-0.6B policy + value + reference, 8 x 8 per GPU, 256 new tokens"
rl_scaling PPO ppo $RLC $PPO
m2=$(metric "$OUT/ppo-2gpu/metrics.jsonl" peak_mem_gib 1 4)
note "PPO on 2 GPUs: mean peak memory per rank (GiB)" "$m2"
fi

[ "${KEEP_MODELS:-0}" = 1 ] || rm -rf "$OUT/qwen3-8b"
echo
echo "| measurement | value |"
echo "|---|---|"
awk -F '\t' '{ printf "| %s | %s |\n", $1, $2 }' "$RES"
