#!/usr/bin/env bash
# Cross-check of every architecture / RoPE-scaling preset against llama.cpp
# (docs/formats.md "Cross-check"): `oracle synth` writes each preset as an F32
# GGUF; a 50-line driver (scripts/peer/llamacpp_logits.c, compiled here against
# the peer's libllama, never part of the product) writes llama.cpp's float32
# logits for the fixed token sequence of reference/tests/test_crosscheck.cpp.
#   scripts/arch_crosscheck.sh ORACLE OUT_DIR            write the fixtures (golden/crosscheck)
#   scripts/arch_crosscheck.sh ORACLE OUT_DIR TEST_BIN...  ...then run each test binary's [llamacpp]
#                                                         cases on them (test_crosscheck, test_tp_crosscheck)
# Exit 77 (CTest: skipped) when the peer is not built.
set -euo pipefail
ORACLE=$1 OUT=$2
shift 2
TESTS=("$@")
PEER=${PEER_DIR:-/work/peer}
SRC="$PEER/llama_cpp_python-0.3.36/vendor/llama.cpp"
LIB="$PEER/build/bin"
if [ ! -e "$LIB/libllama.so" ] || [ ! -e "$SRC/include/llama.h" ]; then
  echo "arch_crosscheck: peer not built ($LIB/libllama.so); see scripts/build_peer.sh" >&2
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -std=c11 -I"$SRC/include" -I"$SRC/ggml/include" "$(dirname "$0")/peer/llamacpp_logits.c" \
  -L"$LIB" -Wl,-rpath,"$LIB" -lllama -lggml -lggml-base -o "$WORK/llamacpp_logits"
tokens=()
for i in $(seq 0 39); do tokens+=($(((i * 97 + 13) % 384))); done
mkdir -p "$OUT"
for p in tiny gqa qwen2-tiny llama3-tiny linear-tiny yarn-tiny llama31-tiny qwen25-yarn-tiny; do
  "$ORACLE" synth --preset "$p" -o "$WORK/$p.gguf" >/dev/null
  "$WORK/llamacpp_logits" "$WORK/$p.gguf" 256 "$WORK/llamacpp_$p.f32" "${tokens[@]}" 2>"$WORK/$p.log" ||
    { cat "$WORK/$p.log" >&2; exit 1; }
  mv "$WORK/llamacpp_$p.f32" "$OUT/llamacpp_$p.f32"
  echo "wrote $OUT/llamacpp_$p.f32"
done
for t in "${TESTS[@]}"; do ORACLE_CROSSCHECK_DIR="$OUT" "$t" "[llamacpp]"; done
