#!/bin/sh
# kb_cxx.sh — the C++ compiler of KernelBench candidates' load_inline builds (rlc sets CXX to
# this file and RLC_KB_PCH to the directory kb_pch.py filled): $RLC_KB_CXX (default c++) with
# -I$RLC_KB_PCH/KEY first when a precompiled torch/extension.h was built for the command's
# optimization level KEY (its last -O flag; none without one), so that g++ loads it instead of
# parsing torch's headers. g++ ignores a PCH that does not fit the command and parses the
# header as before, so the result never depends on this file, only the time.
key=none
for a in "$@"; do
    case $a in -O*) key=${a#-} ;; esac
done
if [ -n "${RLC_KB_PCH:-}" ] && [ -f "$RLC_KB_PCH/$key/torch/extension.h.gch" ]; then
    exec "${RLC_KB_CXX:-c++}" "-I$RLC_KB_PCH/$key" "$@"
fi
exec "${RLC_KB_CXX:-c++}" "$@"
