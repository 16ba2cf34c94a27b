#!/bin/sh
# kb_cxx.sh — the C++ compiler of KernelBench candidates' load_inline builds (rlc sets CXX to
# this file, RLC_KB_PCH to the directory kb_pch.py filled and RLC_KB_CXX to the CXX it was
# given, kbpch.h): $RLC_KB_CXX (default c++, as load_inline without CXX; split into words as
# ninja's shell would) with -I$RLC_KB_PCH/KEY first when a precompiled torch/extension.h was
# built for the command's optimization level KEY (its last -O flag; none without one), so that
# g++ loads it instead of parsing torch's headers. g++ ignores a PCH that does not fit the
# command (other flags, another compiler) and parses the header as before, so the result never
# depends on this file, only the time.
key=none
for a in "$@"; do
    case $a in -O*) key=${a#-} ;; esac
done
# shellcheck disable=SC2086
if [ -n "${RLC_KB_PCH:-}" ] && [ -f "$RLC_KB_PCH/$key/torch/extension.h.gch" ]; then
    exec ${RLC_KB_CXX:-c++} "-I$RLC_KB_PCH/$key" "$@"
fi
# shellcheck disable=SC2086
exec ${RLC_KB_CXX:-c++} "$@"
