#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the unit and property
# suites: builds build/asan with clang++ -DORACLE_SANITIZE=ON (RelWithDebInfo,
# no -march=native) and runs `ctest -L "unit|property"` there. The folder is
# configured exactly as scripts/fuzz_smoke.sh configures it (ORACLE_FUZZ=ON,
# -fsanitize=fuzzer-no-link: coverage counters only), so the two share one
# instrumented build of the library. Any ASan report
# or UB (-fno-sanitize-recover) fails the test that hit it.
# Environment: SANITIZE_DIR (default build/asan), ORACLE_SHARED_DIR, extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch_vocab.sh  # llama.cpp tokenizer vectors for test_tokenizer_conformance (as scripts/test.sh)
dir=${SANITIZE_DIR:-build/asan}
CXX=clang++ CC=clang cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DORACLE_FUZZ=ON \
  -DORACLE_SANITIZE=ON -DORACLE_NATIVE=OFF -DORACLE_ENABLE_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
# Build only what the run executes: the executable of each unit|property test
# (not the fuzz targets or the CLI), so a loaded 2-core machine finishes sooner.
# CTest names a test's command only once its executable exists, so the
# executable is found by name instead: the longest executable target equal to
# the test's name or a prefix of it followed by "_" (test_crosscheck runs as
# test_crosscheck_exact and _llamacpp); tests whose command is a script are
# covered by the executables they call.
targets=$(cd "$dir" && ctest -L "unit|property" -LE soak --show-only=json-v1 |
  python3 -c '
import json, subprocess, sys
lines = subprocess.run(["ninja", "-t", "targets", "all"], capture_output=True, text=True).stdout.splitlines()
exes = {l.split(":")[0][4:] for l in lines if l.startswith("bin/") and "EXECUTABLE_LINKER" in l}
picked = set()
for t in json.load(sys.stdin)["tests"]:
    name = t["name"]
    match = [e for e in exes if name == e or name.startswith(e + "_")]
    if match: picked.add(max(match, key=len))
print(" ".join(sorted(picked)))')
# shellcheck disable=SC2086
cmake --build "$dir" -j "$(nproc)" --target $targets
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$dir"
ctest --output-on-failure -j "$(nproc)" -L "unit|property" -LE "soak" "$@"
