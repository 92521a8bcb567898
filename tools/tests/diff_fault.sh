#!/usr/bin/env bash
# Fault localisation (label "fault"; docs/diff.md): builds `oracle` with one
# planted kernel fault through scripts/fault_check.sh (same fault build folders
# and ccache as the fault_* tests) and asserts that `oracle diff --backend
# cuda-emu` exits 1 and names the expected first divergent op.
# Usage: diff_fault.sh FAULT EXPECTED_OP_REGEX [MIN_POS]   (env FAULT_ROOT, ORACLE_SHARED_DIR)
set -uo pipefail
cd "$(dirname "$0")/../.."
fault=$1 want=$2 min_pos=${3:-0}
root=${FAULT_ROOT:-build/fault}
shared=${ORACLE_SHARED_DIR:-$PWD/../shared}
model="$shared/models/stories260K/stories260K.bin" tok="$shared/models/stories260K/tok512.bin"
[ -e "$model" ] && [ -e "$tok" ] || { echo "FAIL: missing fixture $model / $tok" >&2; exit 1; }
# fault_check.sh exits 0 iff the command fails; its output lands in $root/$fault.oracle.log
bash scripts/fault_check.sh "$fault" oracle diff --backend cuda-emu --mode deterministic \
  --model "$model" --tokenizer "$tok" --prompt "Once upon a time" --max-tokens 72 --json || exit 1
log="$root/$fault.oracle.log"
op=$(jq -r '.first_divergent.op' "$log") pos=$(jq -r '.first_divergent.pos' "$log")
rc_ok=$(jq -r '.within_bound == false and .structure_error == ""' "$log")
[ "$rc_ok" = true ] || { echo "FAIL: unexpected report: $(cat "$log")" >&2; exit 1; }
[[ "$op" =~ ^($want)$ ]] || { echo "FAIL: first divergent op $op (want $want): $(cat "$log")" >&2; exit 1; }
[ "$pos" -ge "$min_pos" ] || { echo "FAIL: first divergent position $pos < $min_pos" >&2; exit 1; }
echo "fault $fault localised: $(jq -c '.first_divergent' "$log")"
