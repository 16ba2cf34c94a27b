#!/bin/sh
# torch-headers.sh — torch's C++ headers (no library, no Python package) in
# ~/.cache/rlc-torch-headers/ (or DIR, the argument), kept across clones,
# for the CPU test that compiles KernelBench CUDA text in nvcc's device pass against kb_light's
# stand-in (tests/reward/kernel_env/kb_device_pass.py, test_kb_light.c): the stand-in includes
# torch's at::Tensor and c10 headers, and CI has nvcc but no torch. Takes PyPI's torch wheel of
# the version the GPU machines run (pip download, no dependencies; ~530 MB once) and keeps its
# torch/include (~62 MB). Does nothing when they are there. Exit 1 (and the test skips) when pip
# or the download fails.
set -eu
VERSION=${RLC_TORCH_HEADERS_VERSION:-2.11.0}
DEST=${1:-${HOME:-/root}/.cache/rlc-torch-headers}
[ -f "$DEST/ready-$VERSION" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 -d "$tmp" "torch==$VERSION" || {
    echo "torch-headers: pip could not download torch==$VERSION: the device-pass test will skip" >&2
    exit 1
}
rm -rf "$DEST"
mkdir -p "$DEST"
python3 - "$tmp" "$DEST" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/torch-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("torch/include/")])
PY
: >"$DEST/ready-$VERSION"
echo "torch-headers: torch $VERSION's headers in $DEST/torch/include"
