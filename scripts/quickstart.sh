#!/usr/bin/env bash
# The README's main job on a fresh Debian machine: install the build
# dependencies, build, then show what the oracle is for: the embedded model run
# through the bit-exact reference and the CUDA pipeline (its kernels emulated
# on the CPU) side by side, with the verdict table, and then some text.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
echo
build/bin/oracle diff --backend cuda-emu --max-tokens "${MAX_TOKENS:-16}"
echo
build/bin/oracle run --prompt "${PROMPT:-Once upon a time}" --max-tokens "${MAX_TOKENS:-16}" --echo
