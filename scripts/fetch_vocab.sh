#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer conformance files (models/ggml-vocab-*.gguf with
# their .inp/.out vectors) from the PyPI source distribution of
# llama-cpp-python, extracting only those files. test_tokenizer_conformance
# reads them from $ORACLE_VOCAB_DIR (CMake default: the folder below). Nothing
# is committed. Idempotent; reuses the sdist scripts/build_peer.sh downloads.
#   PEER_DIR (default build/peer)   PEER_VERSION (default 0.3.36)
set -euo pipefail
cd "$(dirname "$0")/.."
PEER_DIR=${PEER_DIR:-build/peer}
PEER_VERSION=${PEER_VERSION:-0.3.36}
top="llama_cpp_python-$PEER_VERSION"
dest="$PEER_DIR/$top/vendor/llama.cpp/models"
if [ -f "$dest/ggml-vocab-llama-bpe.gguf.out" ] && [ -f "$dest/ggml-vocab-qwen2.gguf" ] &&
   [ -f "$PEER_DIR/$top/vendor/llama.cpp/gguf-py/gguf/__init__.py" ]; then
  echo "vocab: present in $dest"
  exit 0
fi
mkdir -p "$PEER_DIR"
sdist="$PEER_DIR/$top.tar.gz"
if [ ! -f "$sdist" ]; then
  python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$PEER_VERSION" -d "$PEER_DIR"
fi
tar -xzf "$sdist" -C "$PEER_DIR" --wildcards "$top/vendor/llama.cpp/models/ggml-vocab-*"
# gguf-py: writes the FIM-key test vocabularies in the build tree (scripts/fim_vocab_diff.py vocabs).
tar -xzf "$sdist" -C "$PEER_DIR" "$top/vendor/llama.cpp/gguf-py"
echo "vocab: $(ls "$dest"/ggml-vocab-*.gguf | wc -l) vocabularies in $dest"
