#!/bin/sh
# Installs rlc's build and test dependencies from Debian packages (run as root on a fresh
# Debian 12 machine; gcc, make and optionally nvcc are assumed). Does nothing when all are there.
set -e
pkgs="libcjson-dev libpcre2-dev libutf8proc-dev libcriterion-dev libseccomp-dev pkg-config python3"
# tests/cli/test_report.c renders `rlc report`'s page in a headless browser
browser_pkgs="chromium"
fuzz_pkgs="clang libclang-rt-14-dev"
missing=""
for p in $pkgs $fuzz_pkgs $browser_pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# torch's C++ headers for the device-pass test of KernelBench builds (no torch install needed)
sh "$(dirname "$0")/torch-headers.sh" || true
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
