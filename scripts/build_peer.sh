#!/usr/bin/env bash
# Builds the peer engine used for benchmarks and cross-checks (never a product
# dependency): the llama.cpp vendored in the source distribution of the PyPI
# package llama-cpp-python. Nothing of it is committed; fixtures it produces are.
#   PEER_DIR (default build/peer)   where the sdist is unpacked and built
#   PEER_VERSION (default 0.3.36)   llama-cpp-python version
# Prints the vendored llama.cpp commit (from its CMake/build-info or the sdist),
# then decodes 4 tokens from a quantized model as a smoke check (a peer that
# builds but dies on its first quantized matmul is refused here, not in a test).
#
# AMX: some VMs report amx-tile/amx-int8/amx-bf16 in CPUID but refuse the
# tiles, so ggml's -march=native build dies with SIGILL in tinygemm_kernel_amx
# on every quantized model. When /proc/cpuinfo names AMX the build adds
# -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 (PEER_AMX=on keeps AMX).
set -euo pipefail
cd "$(dirname "$0")/.."
PEER_DIR=${PEER_DIR:-build/peer}
PEER_VERSION=${PEER_VERSION:-0.3.36}
mkdir -p "$PEER_DIR"
PEER_DIR=$(realpath "$PEER_DIR")
sdist="$PEER_DIR/llama_cpp_python-$PEER_VERSION.tar.gz"
if [ ! -f "$sdist" ]; then
  python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$PEER_VERSION" -d "$PEER_DIR"
fi
src="$PEER_DIR/llama_cpp_python-$PEER_VERSION/vendor/llama.cpp"
# A half-extracted tree (interrupted tar) is re-extracted, not built.
if [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$PEER_DIR/llama_cpp_python-$PEER_VERSION"
  tar -xzf "$sdist" -C "$PEER_DIR"
fi
amx_flags=""
if grep -q -m1 -w 'amx_tile' /proc/cpuinfo 2>/dev/null && [ "${PEER_AMX:-off}" != on ]; then
  amx_flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  echo "peer: CPU reports AMX; building without it ($amx_flags)"
fi
targets=(llama-bench llama-quantize llama-perplexity llama-tokenize llama-completion llama-eval-callback llama-server)
cmake -S "$src" -B "$PEER_DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DCMAKE_C_FLAGS="$amx_flags" -DCMAKE_CXX_FLAGS="$amx_flags" \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON -DGGML_CUDA=OFF >/dev/null
cmake --build "$PEER_DIR/build" -j "${PEER_JOBS:-$(nproc)}" --target "${targets[@]}"
mkdir -p "$PEER_DIR/bin"
for t in "${targets[@]}"; do ln -sf "$PEER_DIR/build/bin/$t" "$PEER_DIR/bin/$t"; done
echo "peer: $PEER_DIR/bin ($(ls "$PEER_DIR/bin" | tr '\n' ' '))"
"$PEER_DIR/bin/llama-completion" --version 2>&1 | grep -i -m2 'version\|commit' || true
# Smoke: one quantized decode (SmolLM2 Q4_1 if present, else the Q8_0 stories260K GGUF).
shared=${ORACLE_SHARED_DIR:-../shared}
smoke=""
for m in "$shared"/models/smollm2/*Q4_1*.gguf "$shared"/models/gguf/*q8_0*.gguf "$shared"/models/gguf/*.gguf; do
  [ -f "$m" ] && { smoke=$m; break; }
done
if [ -n "$smoke" ]; then
  if ! timeout 120 "$PEER_DIR/bin/llama-completion" -m "$smoke" -p "Once upon a time" -n 4 -no-cnv \
      --temp 0 -t 1 </dev/null >"$PEER_DIR/smoke.txt" 2>&1; then
    echo "peer: smoke decode of $smoke FAILED (see $PEER_DIR/smoke.txt)" >&2
    exit 1
  fi
  echo "peer: smoke decode of $(basename "$smoke") ok"
fi
