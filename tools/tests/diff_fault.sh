#!/usr/bin/env bash
# Fault localisation (label "fault"; docs/diff.md): builds `oracle` in the
# instrumented fault build (scripts/fault_check.sh --build-only, shared with
# fault_injection), runs `oracle diff --backend cuda-emu` with ORACLE_FAULT=FAULT
# and asserts that it exits 1 and names the expected first divergent op.
# Usage: diff_fault.sh FAULT EXPECTED_OP_REGEX [MIN_POS]   (env FAULT_ROOT, ORACLE_SHARED_DIR)
set -uo pipefail
cd "$(dirname "$0")/../.."
fault=$1 want=$2 min_pos=${3:-0}
root=${FAULT_ROOT:-build/fault}
shared=${ORACLE_SHARED_DIR:-$PWD/../shared}
model="$shared/models/stories260K/stories260K.bin" tok="$shared/models/stories260K/tok512.bin"
[ -e "$model" ] && [ -e "$tok" ] || { echo "FAIL: missing fixture $model / $tok" >&2; exit 1; }
# the instrumented build (shared with fault_injection), then oracle diff with the fault planted
bash scripts/fault_check.sh --build-only oracle || { echo "FAIL: instrumented build of oracle" >&2; exit 1; }
log="$root/$fault.oracle.log"
ORACLE_FAULT=$fault "$root/build/bin/oracle" diff --backend cuda-emu --mode deterministic \
  --model "$model" --tokenizer "$tok" --prompt "Once upon a time" --max-tokens 72 --json >"$log" 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: oracle diff exited $rc with ORACLE_FAULT=$fault (want 1): $(tail -5 "$log")" >&2; exit 1; }
op=$(jq -r '.first_divergent.op' "$log") pos=$(jq -r '.first_divergent.pos' "$log")
rc_ok=$(jq -r '.within_bound == false and .structure_error == ""' "$log")
[ "$rc_ok" = true ] || { echo "FAIL: unexpected report: $(cat "$log")" >&2; exit 1; }
[[ "$op" =~ ^($want)$ ]] || { echo "FAIL: first divergent op $op (want $want): $(cat "$log")" >&2; exit 1; }
[ "$pos" -ge "$min_pos" ] || { echo "FAIL: first divergent position $pos < $min_pos" >&2; exit 1; }
echo "fault $fault localised: $(jq -c '.first_divergent' "$log")"
