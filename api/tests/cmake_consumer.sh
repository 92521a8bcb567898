#!/usr/bin/env bash
# The installed package as a consumer meets it: cmake --install the build into
# a prefix under build/, configure examples/cmake-consumer with
# find_package(LLMOracle CONFIG REQUIRED) against it alone, build, run.
# Usage: cmake_consumer.sh BUILD_DIR SOURCE_DIR SHARED CXX VERSION NUMERICS_VERSION
set -euo pipefail
BUILD=$1 SRC=$2 SHARED=$3 CXX=$4 VERSION=$5 NUMERICS=$6
WORK=$BUILD/package_test
rm -rf "$WORK"
cmake --install "$BUILD" --prefix "$WORK/prefix" --component llm_oracle_cpp >/dev/null
test -f "$WORK/prefix/include/llm_oracle/llm_oracle.h"
test -f "$WORK/prefix/lib/cmake/LLMOracle/LLMOracleConfigVersion.cmake"
grep -q "LLMOracle_NUMERICS_VERSION $NUMERICS" "$WORK/prefix/lib/cmake/LLMOracle/LLMOracleConfigVersion.cmake"
# No internal header but the one InputError header is installed.
extra=$(cd "$WORK/prefix/include" && find . -type f | grep -v '^./llm_oracle/[a-z_]*\.h$' | grep -v '^./llm_oracle/internal/base/errors.h$' || true)
[ -z "$extra" ] || { echo "internal headers installed: $extra"; exit 1; }
cmake -S "$SRC/examples/cmake-consumer" -B "$WORK/consumer" -G Ninja -DCMAKE_CXX_COMPILER="$CXX" \
      -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$WORK/configure.log"
grep "LLMOracle $VERSION, numerics $NUMERICS" "$WORK/configure.log"
cmake --build "$WORK/consumer" >/dev/null
out=$("$WORK/consumer/consumer" "$SHARED/models/stories260K/stories260K.bin")
echo "$out"
grep -q "^llm_oracle $VERSION numerics $NUMERICS$" <<<"$out"
grep -q "^rmsnorm ok$" <<<"$out"
grep -q "^logits 3 x 512$" <<<"$out"
grep -q "^error .*: context_length: " <<<"$out"
echo "cmake consumer: ok"
