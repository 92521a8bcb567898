#!/usr/bin/env bash
# The README's main job on a fresh Debian machine: install the build
# dependencies, build, then generate text with the embedded default model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/oracle run --prompt "${PROMPT:-Once upon a time}" --max-tokens "${MAX_TOKENS:-64}" --temperature 0
