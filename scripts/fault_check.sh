#!/usr/bin/env bash
# Fault injection check: scripts/fault_check.sh FAULT TEST [ARGS...]
# Configures build/fault/<FAULT> with -DORACLE_FAULT=<FAULT> (Release, no
# -march=native), builds only the TEST executable, runs it and exits 0 iff it
# FAILS (the fault is caught). FAULT "NONE" builds the clean variant and
# exits 0 iff the test PASSES. The fault build folders share a ccache
# (build/fault/ccache): a fault changes one source file, so every other object
# is a cache hit and each variant costs one compile + link.
# Environment: FAULT_ROOT (default build/fault), ORACLE_SHARED_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 FAULT TEST [ARGS...]" >&2; exit 2; }
fault=$1 test=$2; shift 2
root=${FAULT_ROOT:-build/fault}
dir="$root/$fault"
mkdir -p "$root"
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$(realpath "$root")/ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
value=$fault; [ "$fault" = NONE ] && value=""
if ! cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORACLE_NATIVE=OFF -DORACLE_ENABLE_CUDA=OFF \
     -DORACLE_FAULT="$value" "${launcher[@]}" >"$root/$fault.configure.log" 2>&1; then
  echo "fault_check: configure failed ($root/$fault.configure.log)" >&2; exit 2
fi
if ! cmake --build "$dir" --target "$test" -j "$(nproc)" >"$root/$fault.build.log" 2>&1; then
  tail -30 "$root/$fault.build.log" >&2
  echo "fault_check: build of $test failed with ORACLE_FAULT=$fault" >&2; exit 2
fi
export ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR:-$PWD/../shared}
"$dir/bin/$test" "$@" >"$root/$fault.$test.log" 2>&1
rc=$?
summary=$(grep -E "test cases|Falsifiable|reproduce" "$root/$fault.$test.log" | head -3)
if [ "$fault" = NONE ]; then
  [ $rc -eq 0 ] && { echo "clean build: $test passes"; exit 0; }
  echo "clean build: $test FAILS (rc $rc): $summary" >&2; exit 1
fi
if [ $rc -ne 0 ]; then
  echo "fault $fault: caught by $test (rc $rc)"; echo "$summary"; exit 0
fi
echo "fault $fault: NOT caught by $test (it passed; log $root/$fault.$test.log)" >&2
exit 1
