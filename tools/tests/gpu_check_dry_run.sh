#!/usr/bin/env bash
# scripts/gpu-check.sh --dry-run (CI, no GPU): green with the fixtures present,
# its summary in a temp folder (never docs/gpu-results), every planned step named,
# and red (exit 1) when a model it needs is missing. Usage: gpu_check_dry_run.sh REPO SHARED
set -u
repo=$1 shared=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
before=$(ls -la "$repo/docs/gpu-results" 2>/dev/null | md5sum)
ORACLE_SHARED_DIR=$shared GPU_CHECK_OUT="$work/ok" bash "$repo/scripts/gpu-check.sh" --dry-run >"$work/log" 2>&1 \
  || fail "dry run exit $?: $(tail -5 "$work/log")"
python3 - "$work/ok/summary.json" <<'PY' || fail "bad summary: $(cat "$work/ok/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
names = [st["step"] for st in s["steps"]]
assert s["dry_run"] is True and s["missing"] == [], s
for want in ["configure", "build", "ctest_gpu", "kernels_check_cuda", "kernels_bench_cuda", "golden_verify_cuda_deterministic", "golden_verify_cuda_fast",
             "bench_llama3_8b_4l_bf16_both", "bench_llama3_8b_4l_q4_k_m_both", "quantize_llama3_8b_4l_q4_k_m",
             "bench_llama3_8b_4l_q4_k_m_graphs"]:
    assert want in names, (want, names)
assert sum(n.startswith("diff_") for n in names) == 16, names
assert all(st["command"] for st in s["steps"])
PY
after=$(ls -la "$repo/docs/gpu-results" 2>/dev/null | md5sum)
[ "$before" = "$after" ] || fail "the dry run touched docs/gpu-results"
# a missing fixture makes it red, naming the file
ORACLE_SHARED_DIR="$work/nowhere" GPU_CHECK_OUT="$work/bad" bash "$repo/scripts/gpu-check.sh" --dry-run >"$work/log" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "missing fixtures: exit $rc (want 1)"
grep -q "missing: file:$work/nowhere/models" "$work/log" || fail "missing file not named: $(tail -3 "$work/log")"
echo "ok: $(grep -c '^== ' "$work/log") steps planned; $(tail -1 "$work/log")"
