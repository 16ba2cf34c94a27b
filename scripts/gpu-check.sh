#!/bin/sh
# gpu-check.sh — everything that needs a GPU, in one run: build, every GPU test, the GPU
# benchmarks; ends with a short summary table (the last lines of the output).
#
# usage: sh scripts/gpu-check.sh [--no-build]
#   --no-build   use the binaries already in $BUILD (built where the dev packages are, by
#                scripts/gpu-prepare.sh, and carried to the GPU machine with .devlibs/:
#                LD_LIBRARY_PATH=$PWD/.devlibs BUILD=build/cudah sh scripts/gpu-check.sh --no-build)
# Environment: OUT (a folder for the full logs; default $BUILD/gpu-check), BUILD (default build).
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

row() { printf '%-40s %s\n' "$1" "$2" >>"$SUMMARY"; }

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

# Attention fwd/bwd: rlc against torch's flash SDPA, head_dim 128 causal, 16 heads.
section_bench_attention() {
    cc_bin=$BUILD/bench/bench_attention
    cuda_home=${CUDA_HOME:-/usr/local/cuda}
    if [ "${1:-}" != "--no-build" ]; then
        mkdir -p "$BUILD/bench"
        cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -fopenmp bench/bench_attention.c "$BUILD/librlc.a" -fopenmp \
            -lcjson -lpcre2-8 -lutf8proc -lm -lpthread -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" \
            -lcublasLt -lcublas -lcudart -lnvrtc -lstdc++ -o "$cc_bin" >>"$LOG" 2>&1
    fi
    if [ ! -x "$cc_bin" ]; then
        row "bench attention" "NOT BUILT"
        STATUS=1
        return
    fi
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
# model: rlc against PyTorch + transformers (bf16, SDPA).
section_bench_model_step() {
    bin=$BUILD/bench/bench_model_step
    cuda_home=${CUDA_HOME:-/usr/local/cuda}
    if [ "${1:-}" != "--no-build" ]; then
        mkdir -p "$BUILD/bench"
        cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -fopenmp bench/bench_model_step.c "$BUILD/librlc.a" -fopenmp \
            -lcjson -lpcre2-8 -lutf8proc -lm -lpthread -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" \
            -lcublasLt -lcublas -lcudart -lnvrtc -lstdc++ -o "$bin" >>"$LOG" 2>&1
    fi
    if [ ! -x "$bin" ]; then
        row "bench model step" "NOT BUILT"
        STATUS=1
        return
    fi
    res=$LOGDIR/bench_model_step.txt
    cfg=bench/configs/qwen3-0.6b.json
    "$bin" $cfg 8 1024 >"$res" 2>>"$LOG"
    python3 bench/bench_model_step.py $cfg 8 1024 >>"$res" 2>>"$LOG"
    cat "$res" >>"$LOG"
    ours=$(sed -n 's/^rlc step .*tokens_per_s=\([0-9]*\).*/\1/p' "$res")
    ref=$(sed -n 's/^torch step .*tokens_per_s=\([0-9]*\).*/\1/p' "$res")
    if [ -n "$ours" ] && [ -n "$ref" ]; then
        ratio=$(awk -v a="$ours" -v b="$ref" 'BEGIN { printf "%.3f", a / b }')
        row "train step qwen3-0.6b 8x1024" "rlc $ours / torch $ref tokens/s = $ratio"
    else
        row "train step qwen3-0.6b 8x1024" "missing (rlc '${ours}', torch '${ref}')"
        STATUS=1
    fi
}

section_build "$@"
section_gpu_tests
section_bench_attention "$@"
section_bench_model_step "$@"

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
echo "== gpu-check summary (full log: $LOG)"
cat "$SUMMARY"
exit $STATUS
