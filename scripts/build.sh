#!/usr/bin/env bash
# Configure + build into build/ (Release, baseline x86-64: the SIMD kernels are chosen at
# start-up from CPUID, reference/compute/isa.h; CMAKE_ARGS=-DORACLE_NATIVE=ON for -march=native).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
