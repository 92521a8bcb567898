#!/usr/bin/env bash
# The test command: install deps, build, run the default CTest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch_vocab.sh  # llama.cpp tokenizer vectors (PyPI sdist; test_tokenizer_conformance)
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" -LE "soak|fault|sanitize|fuzz|matrix|smollm2|peer" "$@"
