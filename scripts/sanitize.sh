#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the unit and property
# suites: builds build/asan with -DORACLE_SANITIZE=ON (RelWithDebInfo, no
# -march=native) and runs `ctest -L "unit|property"` there. Any ASan report
# or UB (-fno-sanitize-recover) fails the test that hit it.
# Environment: SANITIZE_DIR (default build/asan), ORACLE_SHARED_DIR, extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SANITIZE_DIR:-build/asan}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORACLE_SANITIZE=ON -DORACLE_NATIVE=OFF \
  -DORACLE_ENABLE_CUDA=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$dir"
ctest --output-on-failure -j "$(nproc)" -L "unit|property" -LE "soak" "$@"
