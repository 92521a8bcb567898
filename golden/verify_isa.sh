#!/usr/bin/env bash
# `oracle golden verify` under one ISA path of the dispatch (reference/compute/isa.h):
# every path must reproduce the same bits. Exits 77 (CTest SKIP) with the reason
# when this CPU lacks the path.
# Usage: verify_isa.sh ORACLE PATH TRANSCRIPT_OR_DIR... [-- verify options]
set -euo pipefail
oracle=$1 path=$2
shift 2
set +e
why=$(ORACLE_ISA=$path "$oracle" version 2>&1 >/dev/null)
rc=$?
set -e
if [ "$rc" -eq 2 ]; then echo "skip: $why"; exit 77; fi
[ "$rc" -eq 0 ] || { echo "FAIL: oracle version exit $rc: $why"; exit 1; }
targets=() opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do targets+=("$1"); shift; done
[ $# -gt 0 ] && shift && opts=("$@")
for t in "${targets[@]}"; do
  echo "== ORACLE_ISA=$path golden verify $t ${opts[*]}"
  ORACLE_ISA=$path "$oracle" golden verify "$t" --quiet "${opts[@]}"
done
