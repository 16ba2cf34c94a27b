#!/bin/sh
# gpu-check.sh — everything that needs a GPU, in one run: build, every GPU test, the GPU
# benchmarks; ends with a short summary table (the last lines of the output).
#
# usage: sh scripts/gpu-check.sh [--no-build]
#   SECTIONS="tests attention step grpo parity generate kenv ktasks train dist" (the default: all) selects what runs.
#   --no-build   use the binaries already in $BUILD (built where the dev packages are, by
#                scripts/gpu-prepare.sh, and carried to the GPU machine with .devlibs/:
#                LD_LIBRARY_PATH=$PWD/.devlibs BUILD=build/cudah sh scripts/gpu-check.sh --no-build)
# Environment: OUT (a folder for the full logs; default $BUILD/gpu-check), BUILD (default build),
# PARITY_DIR (where tools/make_qwen3_0p6b.py writes the 0.6B checkpoint and references, about
# 5 GB; default /tmp/rlc-qwen3-0p6b; reused when it already holds ref.safetensors), HF_MAX_SECONDS
# (transformers' generate skips a workload estimated to take longer; default 300).
#
# To extend: write one function per section that runs its part, appends its full output to
# "$LOG" and adds rows with `row NAME RESULT`; then call it in the list at the bottom.
set -u
BUILD=${BUILD:-build}
LOGDIR=${OUT:-$BUILD/gpu-check}
mkdir -p "$LOGDIR"
LOG=$LOGDIR/gpu-check.log
SUMMARY=$LOGDIR/summary.txt
: >"$LOG"
: >"$SUMMARY"
STATUS=0
SECTIONS=${SECTIONS:-tests attention step grpo parity generate kenv ktasks train dist}
CONFIG=bench/configs/qwen3-0.6b.json

row() { printf '%-50s %s\n' "$1" "$2" >>"$SUMMARY"; }

section_build() {
    if [ "${1:-}" = "--no-build" ]; then
        row "build" "skipped (--no-build)"
        return
    fi
    bins=$(ls tests/gpu/test_*.c | sed "s|^tests/\(.*\)\.c$|$BUILD/tests/\1|")
    # shellcheck disable=SC2086
    if make -j16 all $bins >>"$LOG" 2>&1; then
        row "build" "ok"
    else
        row "build" "FAILED (see $LOG)"
        STATUS=1
    fi
}

# Each GPU test binary: pass/fail counts, and the largest error it printed ("[err]" lines).
section_gpu_tests() {
    for bin in "$BUILD"/tests/gpu/test_*; do
        case "$bin" in *.d) continue ;; esac
        [ -x "$bin" ] || continue
        name=$(basename "$bin")
        out=$("$bin" --jobs=4 2>&1)
        printf '== %s\n%s\n' "$name" "$out" >>"$LOG"
        line=$(printf '%s\n' "$out" | grep 'Synthesis' | tail -n 1)
        p=$(printf '%s' "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
        f=$(printf '%s' "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
        c=$(printf '%s' "$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
        if [ -z "$line" ]; then
            row "$name" "NO SUMMARY (crashed?)"
            STATUS=1
        elif [ "$f" != 0 ] || [ "$c" != 0 ]; then
            row "$name" "$p passed, $f failed, $c crashed"
            STATUS=1
        else
            row "$name" "$p passed"
        fi
    done
}

want() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

# Builds bench/$1.c into $BUILD/bench/$1 unless --no-build; 1 when the binary is missing.
bench_bin() {
    cuda_home=${CUDA_HOME:-/usr/local/cuda}
    if [ "${2:-}" != "--no-build" ]; then
        mkdir -p "$BUILD/bench"
        cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -I"$cuda_home/include" -fopenmp "bench/$1.c" "$BUILD/librlc.a" -fopenmp \
            -lcjson -lpcre2-8 -lutf8proc -lm -lpthread -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" \
            -lcublasLt -lcublas -lcudart -lnvrtc -lstdc++ -o "$BUILD/bench/$1" >>"$LOG" 2>&1
    fi
    if [ ! -x "$BUILD/bench/$1" ]; then
        row "bench $1" "NOT BUILT"
        STATUS=1
        return 1
    fi
    return 0
}

# Prints KEY's value (key=value) from the first line of file $1 that matches the regex $2.
field() { grep -m 1 -- "$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "?"; else printf "%.2f", a / b }'; }

# Attention fwd/bwd: rlc against torch's flash SDPA, head_dim 128 causal, 16 heads.
section_bench_attention() {
    bench_bin bench_attention "$@" || return
    cc_bin=$BUILD/bench/bench_attention
    res=$LOGDIR/bench_attention.txt
    : >"$res"
    for shape in "8 1024" "1 8192"; do
        # shellcheck disable=SC2086
        "$cc_bin" $shape >>"$res" 2>>"$LOG"
        # shellcheck disable=SC2086
        python3 bench/bench_attention.py $shape >>"$res" 2>>"$LOG"
    done
    cat "$res" >>"$LOG"
    for dir in fwd bwd; do
        for shape in "b=8 s=1024" "b=1 s=8192"; do
            ours=$(grep "^rlc $dir $shape " "$res" | sed -n 's/.*tflops=\([0-9.]*\).*/\1/p')
            ref=$(grep "^torch $dir $shape " "$res" | sed -n 's/.*tflops=\([0-9.]*\).*/\1/p')
            if [ -n "$ours" ] && [ -n "$ref" ]; then
                ratio=$(awk -v a="$ours" -v b="$ref" 'BEGIN { printf "%.3f", a / b }')
                row "attention $dir $shape hd128" "rlc $ours / torch $ref TFLOP/s = $ratio"
            else
                row "attention $dir $shape hd128" "missing (rlc '${ours}', torch '${ref}')"
                STATUS=1
            fi
        done
    done
}

# One training step (forward, backward, AdamW) of a randomly initialised Qwen3-0.6B-shaped
# model, 8 x 1024 tokens: rlc (all activations kept / checkpointed) against PyTorch +
# transformers (bf16, bf16 with gradient checkpointing, fp32 masters with bf16 autocast):
# tokens/s, MFU and peak device memory.
section_bench_model_step() {
    bench_bin bench_model_step "$@" || return
    res=$LOGDIR/bench_model_step.txt
    "$BUILD/bench/bench_model_step" $CONFIG 8 1024 >"$res" 2>>"$LOG"
    "$BUILD/bench/bench_model_step" $CONFIG 8 1024 --checkpoint >>"$res" 2>>"$LOG"
    python3 bench/bench_model_step.py $CONFIG 8 1024 >>"$res" 2>>"$LOG"
    cat "$res" >>"$LOG"
    for pair in "train bf16" "checkpoint bf16-checkpoint" "train amp"; do
        # shellcheck disable=SC2086
        set -- $pair
        r_rate=$(field "$res" "^rlc step mode=$1 " tokens_per_s)
        t_rate=$(field "$res" "^torch step mode=$2 " tokens_per_s)
        r_mem=$(field "$res" "^rlc step mode=$1 " peak_gib)
        t_mem=$(field "$res" "^torch step mode=$2 " peak_gib)
        r_mfu=$(field "$res" "^rlc step mode=$1 " mfu)
        t_mfu=$(field "$res" "^torch step mode=$2 " mfu)
        if [ -z "$r_rate" ] || [ -z "$t_rate" ]; then
            row "train step rlc $1 / torch $2" "missing (rlc '$r_rate', torch '$t_rate')"
            STATUS=1
            continue
        fi
        row "train step rlc $1 / torch $2" "tokens/s $r_rate / $t_rate = $(ratio "$r_rate" "$t_rate") (target >= 2.5)"
        row "  MFU rlc / torch" "$r_mfu / $t_mfu"
        row "  peak GiB rlc / torch" "$r_mem / $t_mem = $(ratio "$r_mem" "$t_mem") (target <= 0.5)"
    done
}

# A GRPO policy update (64 sequences x 384 tokens, micro-batches of 16, no generation): rlc
# against PyTorch + transformers with the same clipped objective.
section_bench_grpo() {
    bench_bin bench_grpo_update "$@" || return
    res=$LOGDIR/bench_grpo_update.txt
    "$BUILD/bench/bench_grpo_update" $CONFIG 64 384 16 >"$res" 2>>"$LOG"
    python3 bench/bench_grpo_update.py $CONFIG 64 384 16 >>"$res" 2>>"$LOG"
    cat "$res" >>"$LOG"
    r_ms=$(field "$res" "^rlc grpo " ms)
    for mode in bf16 amp; do
        t_ms=$(field "$res" "^torch grpo mode=$mode " ms)
        if [ -n "$r_ms" ] && [ -n "$t_ms" ]; then
            row "grpo update 64x384 rlc / torch $mode" "ms $r_ms / $t_ms, torch/rlc = $(ratio "$t_ms" "$r_ms")"
        else
            row "grpo update 64x384 rlc / torch $mode" "missing (rlc '$r_ms', torch '$t_ms')"
            STATUS=1
        fi
    done
}

# Generation (issue 10): the workloads of bench/bench_generate.c (a: nano-vllm's bench.py
# protocol, b: long, c: 256 x 128 -> 256, d: batch-1 latency, e: a GRPO rollout of 8 x 8) on a
# randomly initialised Qwen3-0.6B, beside transformers' generate on the same requests.
# cuBLASLt's products at a programmatic edge (bench/probe_lt_pdl.cu): while they do not wait at
# one, the decode graphs keep plain edges into them (docs/benchmarks.md, "Five ways around ...").
probe_lt_pdl() {
    if [ "${1:-}" != "--no-build" ]; then
        nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -Ibench bench/probe_lt_pdl.cu -lcublasLt \
            -o "$BUILD/bench/probe_lt_pdl" >>"$LOG" 2>&1
    fi
    if [ ! -x "$BUILD/bench/probe_lt_pdl" ]; then
        row "bench probe_lt_pdl" "NOT BUILT"
        STATUS=1
        return
    fi
    out=$("$BUILD/bench/probe_lt_pdl" 2>&1)
    printf '== probe_lt_pdl\n%s\n' "$out" >>"$LOG"
    row "cuBLASLt products that wait at a PDL edge" "$(printf '%s\n' "$out" | grep -c ': waits$') of 4"
}

section_bench_generate() {
    bench_bin bench_generate "$@" || return
    probe_lt_pdl "$@"
    res=$LOGDIR/bench_generate.txt
    wl=$LOGDIR/generate-workloads
    "$BUILD/bench/bench_generate" $CONFIG a b c d e --write "$wl" >"$res" 2>>"$LOG"
    python3 bench/bench_generate_hf.py $CONFIG "$wl" a b c d e --max-seconds "${HF_MAX_SECONDS:-300}" >>"$res" 2>>"$LOG"
    cat "$res" >>"$LOG"
    for pair in "a >=18000" "b >=5000" "c >=40000" "e -"; do
        # shellcheck disable=SC2086
        set -- $pair
        ours=$(field "$res" "^rlc generate workload=$1 " tokens_per_s)
        theirs=$(field "$res" "^hf generate workload=$1 " tokens_per_s)
        if [ -z "$ours" ]; then
            row "generate $1 tok/s rlc / transformers" "missing (see $LOG)"
            STATUS=1
            continue
        fi
        row "generate $1 tok/s rlc / transformers" "$ours / ${theirs:-skipped} (target $2)"
    done
    # The GRPO step of the issue (8 x 8, ~130-token prompts, 256 new tokens), with the real Qwen3
    # tokenizer (QWEN_TOKENIZER, default ../shared/data/qwen3-tokenizer/tokenizer.json).
    tok=${QWEN_TOKENIZER:-../shared/data/qwen3-tokenizer/tokenizer.json}
    if [ -f "$tok" ] && bench_bin bench_grpo_step "$@"; then
        "$BUILD/bench/bench_grpo_step" $CONFIG "$tok" 5 >>"$res" 2>>"$LOG"
        "$BUILD/bench/bench_grpo_step" $CONFIG "$tok" 5 --no-share-prompts >>"$res" 2>>"$LOG"
        "$BUILD/bench/bench_grpo_step" $CONFIG "$tok" 5 --deterministic >>"$res" 2>>"$LOG"
        for mode in cuda "cuda whole prompts" "cuda deterministic"; do
            line=$(grep -m 1 "^rlc grpo_step median .*($mode," "$res")
            row "grpo step 8x8 ~130->256 ($mode)" \
                "s $(echo "$line" | tr ' ' '\n' | sed -n 's/^seconds=//p') (target <=0.8), generation $(echo "$line" | tr ' ' '\n' | sed -n 's/^gen_seconds=//p') (target <=0.35), peak GiB $(echo "$line" | tr ' ' '\n' | sed -n 's/^peak_used_gib=//p')"
        done
    else
        row "grpo step 8x8 ~130->256" "skipped (no tokenizer at $tok)"
    fi
    ours=$(field "$res" "^rlc generate workload=d " ms_per_token)
    theirs=$(field "$res" "^hf generate workload=d " ms_per_token)
    row "generate d batch-1 ms/token rlc / transformers" "${ours:-missing} / ${theirs:-skipped} (target <=0.8)"
    # Greedy agreement on the parity section's Qwen3-0.6B (when it was made): 16 prompts of
    # workload c, 64 tokens, first divergence from transformers bf16 and fp32.
    model=${PARITY_DIR:-/tmp/rlc-qwen3-0p6b}/model
    [ -f "$model/config.json" ] || return
    head -n 16 "$wl/c.jsonl" | sed 's/, "max_tokens".*$/}/' >"$wl/greedy.jsonl"
    "$BUILD/rlc" generate --model "$model" --device cuda --temperature 0 --max-tokens 64 --ignore-eos \
        <"$wl/greedy.jsonl" >"$wl/greedy.rlc.jsonl" 2>>"$LOG"
    for dtype in bf16 fp32; do
        python3 tools/check_greedy_hf.py "$model" "$wl/greedy.jsonl" "$wl/greedy.rlc.jsonl" --dtype $dtype \
            --max-tokens 64 >>"$res" 2>>"$LOG"
        row "generate greedy vs transformers-$dtype (64 tokens)" \
            "identical $(field "$res" "^greedy summary .*dtype=$dtype" identical)/16, mean first divergence $(field "$res" "^greedy summary .*dtype=$dtype" mean_first_divergence)"
    done
}

# Whole-model parity on a randomly initialised Qwen3-0.6B (tools/make_qwen3_0p6b.py writes it and
# transformers' fp32 / bf16 references): per-token log-probs and every parameter's gradient.
section_parity() {
    bench_bin compare_qwen3 "$@" || return
    dir=${PARITY_DIR:-/tmp/rlc-qwen3-0p6b}
    res=$LOGDIR/parity.txt
    if [ ! -f "$dir/ref.safetensors" ]; then
        mkdir -p "$dir"
        if ! python3 tools/make_qwen3_0p6b.py "$dir" >>"$LOG" 2>&1; then
            row "parity qwen3-0.6b" "FAILED making the references (see $LOG)"
            STATUS=1
            return
        fi
    fi
    if ! "$BUILD/bench/compare_qwen3" "$dir" >"$res" 2>>"$LOG"; then
        row "parity qwen3-0.6b" "FAILED (see $LOG)"
        STATUS=1
    fi
    cat "$res" >>"$LOG"
    for which in rlc-cuda-bf16_vs_hf-fp32 hf-bf16_vs_hf-fp32 rlc-cpu-fp32_vs_hf-fp32; do
        row "parity logp $which" "max $(field "$res" "^parity logp $which " max) mean $(field "$res" "^parity logp $which " mean)"
    done
    ours=$(field "$res" "^parity logp rlc-cuda-bf16_vs_hf-fp32 " mean)
    ref=$(field "$res" "^parity logp hf-bf16_vs_hf-fp32 " mean)
    verdict=$(awk -v a="$ours" -v b="$ref" 'BEGIN { if (a == "" || b == "") print "missing"; else if (a + 0 <= b + 0) print "yes"; else print "NO" }')
    [ "$verdict" = yes ] || STATUS=1
    row "parity rlc-bf16 mean logp err <= hf-bf16's" "$verdict ($ours vs $ref)"
    row "parity grad rel err (rlc-cuda vs hf-fp32)" "median $(field "$res" '^parity grad median' median), worst $(field "$res" '^parity grad worst1 ' rel) ($(grep -m 1 '^parity grad worst1 ' "$res" | awk '{ print $4 }'))"
}

# The kernel environment's cheat and honest suites (scripts/kernel-env-check.sh): every cheat
# rejected or without speedup, every honest kernel accepted and faster.
section_kenv() {
    res=$LOGDIR/kernel-env-check.txt
    BUILD=$BUILD KENV_RESULTS=$LOGDIR/kernel-env-check.jsonl sh scripts/kernel-env-check.sh >"$res" 2>&1
    rc=$?
    cat "$res" >>"$LOG"
    [ $rc -eq 0 ] || STATUS=1
    row "kernel env cheats + honest" "$(tail -n 1 "$res")"
}

# The native task suite (scripts/kernel-tasks-check.sh): references against torch, and through
# the evaluator as candidates.
section_ktasks() {
    res=$LOGDIR/kernel-tasks-check.txt
    BUILD=$BUILD OUT=$LOGDIR/ktasks sh scripts/kernel-tasks-check.sh >"$res" 2>&1
    rc=$?
    cat "$res" >>"$LOG"
    [ $rc -eq 0 ] || STATUS=1
    while IFS= read -r line; do row "kernel tasks" "$line"; done <"$res"
}

# The trainers on the GPU (scripts/gpu-train-check.sh): SFT loss curve cpu vs cuda, the demo on
# cuda, a few SFT steps on the Qwen3-0.6B of the parity section when it exists.
section_train() {
    res=$LOGDIR/gpu-train-check.txt
    dir=${PARITY_DIR:-/tmp/rlc-qwen3-0p6b}
    qwen=""
    [ -f "$dir/model/config.json" ] && qwen="$dir/model"
    [ -z "$qwen" ] && [ -f "$dir/config.json" ] && qwen="$dir"
    BUILD=$BUILD OUT=$LOGDIR/train QWEN_DIR=$qwen sh scripts/gpu-train-check.sh >"$res" 2>&1
    rc=$?
    cat "$res" >>"$LOG"
    [ $rc -eq 0 ] || STATUS=1
    while IFS= read -r line; do row "train" "$line"; done <"$res"
}

# Data parallelism on the GPUs there are (scripts/gpu-dist-check.sh): NCCL as the only rank
# (ZeRO 0, 1, 2) against the plain trainer; with 2 GPUs, --gpus 2 against one GPU.
section_dist() {
    res=$LOGDIR/gpu-dist-check.txt
    BUILD=$BUILD OUT=$LOGDIR/dist sh scripts/gpu-dist-check.sh >"$res" 2>&1
    rc=$?
    cat "$res" >>"$LOG"
    [ $rc -eq 0 ] || STATUS=1
    while IFS= read -r line; do row "dist" "$line"; done <"$res"
}

section_build "$@"
want tests && section_gpu_tests
want attention && section_bench_attention "$@"
want step && section_bench_model_step "$@"
want grpo && section_bench_grpo "$@"
want parity && section_parity "$@"
want generate && section_bench_generate "$@"
want kenv && section_kenv
want ktasks && section_ktasks
want train && section_train
want dist && section_dist

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
echo "== gpu-check summary (full log: $LOG)"
cat "$SUMMARY"
exit $STATUS
