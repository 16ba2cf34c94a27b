#!/bin/sh
# gpu-prepare.sh — builds everything scripts/gpu-check.sh runs, HERE (where the Debian dev
# packages are), for a GPU machine that lacks them (the lent device machine): the CUDA build in
# build/cudah (its own folder, so a CUDA=0 build in build/ never mixes objects with it), the GPU
# test binaries, the benchmarks (bench/bench_*.c, bench/compare_qwen3.c, bench/probe_*.cu), and .devlibs/ with the shared libraries those need
# that a stock CUDA image may not have (criterion and its dependencies, cJSON, PCRE2, utf8proc).
#
# usage: sh scripts/gpu-prepare.sh [-jN]
# Then, on the GPU machine (device tool: carry build/cudah/tests/gpu, build/cudah/bench and
# .devlibs):  LD_LIBRARY_PATH=$PWD/.devlibs BUILD=build/cudah sh scripts/gpu-check.sh --no-build
set -eu
jobs=${1:--j2}
BUILD=build/cudah
command -v nvcc >/dev/null 2>&1 || { echo "gpu-prepare: nvcc not found" >&2; exit 1; }
bins=$(ls tests/gpu/test_*.c | sed "s|^tests/\(.*\)\.c$|$BUILD/tests/\1|")
# shellcheck disable=SC2086
make "$jobs" CUDA=1 BUILD=$BUILD $BUILD/rlc $BUILD/rlc-kernel-worker $BUILD/librlc-kenv-preload.so $bins
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
mkdir -p $BUILD/bench
for prog in bench_attention bench_model_step bench_grpo_update bench_generate bench_grpo_step bench_ppo_step bench_paged compare_qwen3; do
    cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Isrc -I"$cuda_home/include" -fopenmp bench/$prog.c $BUILD/librlc.a \
        -fopenmp -lcjson -lpcre2-8 -lutf8proc -lseccomp -lm -lpthread -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" \
        -lcublasLt -lcublas -lcudart -lnvrtc -lstdc++ -o $BUILD/bench/$prog
done
# Probes of cuBLASLt's behaviour (bench/probe_*.cu: standalone, cuBLASLt and the runtime only).
for prog in probe_lt_configs probe_lt_pdl; do
    nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -Ibench bench/$prog.cu -lcublasLt -o $BUILD/bench/$prog
done
# The GPU's kernel timeline (tools/kernel_timeline.c, a CUPTI injection library), where the
# toolkit has CUPTI; libcupti goes to .devlibs (a stock CUDA image may lack it).
cupti_lib=$(ls "$cuda_home"/lib/libcupti.so "$cuda_home"/lib64/libcupti.so "$cuda_home"/extras/CUPTI/lib64/libcupti.so 2>/dev/null | head -n 1)
cupti_inc=$(dirname "$(ls "$cuda_home"/include/cupti.h "$cuda_home"/extras/CUPTI/include/cupti.h 2>/dev/null | head -n 1)")
mkdir -p .devlibs
if [ -n "$cupti_lib" ] && [ -f "$cupti_inc/cupti.h" ]; then
    mkdir -p $BUILD/tools
    cc -O2 -std=c11 -Wall -Wextra -shared -fPIC -I"$cupti_inc" tools/kernel_timeline.c -L"$(dirname "$cupti_lib")" -lcupti \
        -Wl,-rpath,'$ORIGIN' -o $BUILD/tools/libkernel_timeline.so
    cp -L "$(dirname "$cupti_lib")"/libcupti.so.* .devlibs/ 2>/dev/null || cp -L "$cupti_lib" .devlibs/
fi
# shellcheck disable=SC2086
for lib in $(ldd $bins $BUILD/rlc $BUILD/rlc-kernel-worker $BUILD/bench/* | awk '/=>/ { print $3 }' | sort -u); do
    case $(basename "$lib") in
    # The C runtime and the libraries every distribution ships stay the machine's own.
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux* | libstdc++.so.* | libgcc_s.so.* | \
        libz.so.* | libresolv.so.* | libcrypto.so.* | libssl.so.* | libffi.so.*) ;;
    *) case "$lib" in */cuda*) ;; *) cp -L "$lib" .devlibs/ ;; esac ;;
    esac
done
echo "gpu-prepare: $BUILD ready; .devlibs: $(ls .devlibs | wc -l) libraries"
