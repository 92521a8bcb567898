#!/usr/bin/env bash
# Builds the peer engine used for benchmarks and cross-checks (never a product
# dependency): the llama.cpp vendored in the source distribution of the PyPI
# package llama-cpp-python. Nothing of it is committed; fixtures it produces are.
#   PEER_DIR (default build/peer)   where the sdist is unpacked and built
#   PEER_VERSION (default 0.3.36)   llama-cpp-python version
# Prints the vendored llama.cpp commit (from its CMake/build-info or the sdist).
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
targets=(llama-bench llama-quantize llama-perplexity llama-tokenize llama-completion llama-eval-callback)
cmake -S "$src" -B "$PEER_DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_CUDA=OFF >/dev/null
cmake --build "$PEER_DIR/build" -j "${PEER_JOBS:-$(nproc)}" --target "${targets[@]}"
mkdir -p "$PEER_DIR/bin"
for t in "${targets[@]}"; do ln -sf "$PEER_DIR/build/bin/$t" "$PEER_DIR/bin/$t"; done
echo "peer: $PEER_DIR/bin ($(ls "$PEER_DIR/bin" | tr '\n' ' '))"
"$PEER_DIR/bin/llama-completion" --version 2>&1 | grep -i -m2 'version\|commit' || true
