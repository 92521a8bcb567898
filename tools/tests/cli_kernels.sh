#!/usr/bin/env bash
# oracle kernels: the kernel case registry (optimized/kernel_cases.h) from the CLI,
# on the host emulation (docs/cli.md#kernels). The benchmark runs here with two
# repetitions at tiny shapes so it cannot rot; its numbers are not checked.
# Usage: cli_kernels.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3

case $CASE in
  check)  # every check case matches (exit 0), the JSON says so, the text summary too
    "$ORACLE" kernels --check --json >"$WORK/c.json"
    jq -e '.mode == "check" and .backend == "cuda-emu" and .failed == 0 and (.cases | length) == 247
           and all(.cases[]; .pass and .mismatches == 0 and .elements > 0 and (.first_mismatches | length) == 0)' \
      "$WORK/c.json" >/dev/null || fail "check report $(head -c 600 "$WORK/c.json")"
    for op in $("$ORACLE" kernels --list); do  # every op has check cases
      jq -e --arg op "$op" 'any(.cases[]; .op == $op)' "$WORK/c.json" >/dev/null || fail "no check case of $op"
    done
    "$ORACLE" kernels --check --op compact >"$WORK/c.txt"
    grep -qE '^kernels --check \(cuda-emu\): 12 cases, 0 mismatched$' "$WORK/c.txt" || fail "text: $(cat "$WORK/c.txt")"
    ;;
  bench_json)  # --bench --reps 2 --json: one entry per op and version, every field, positive rates
    "$ORACLE" kernels --bench --reps 2 --json >"$WORK/b.json"
    jq -e '.mode == "bench" and .shapes == "tiny" and .reps == 2 and .clock == "steady-clock" and .emulated
           and (.note | test("only prove the path runs")) and .failed == 0' "$WORK/b.json" >/dev/null ||
      fail "bench header $(jq -c 'del(.cases)' "$WORK/b.json")"
    for f in op label seed tolerance bytes flops elements mismatches pass reps us_per_call gb_s gflop_s; do
      jq -e --arg f "$f" 'all(.cases[]; has($f))' "$WORK/b.json" >/dev/null || fail "a case lacks $f"
    done
    jq -e 'all(.cases[]; .pass and .reps == 2 and .us_per_call > 0 and .bytes > 0 and .gb_s > 0
           and (.flops == 0 or .gflop_s > 0)
           and ((.gb_s - .bytes / .us_per_call / 1e3) | fabs) <= 1e-9 * .gb_s)' "$WORK/b.json" >/dev/null ||
      fail "bench cases $(jq -c '.cases[0]' "$WORK/b.json")"
    # the Auto choices are measured beside both versions they choose between
    for v in auto naive tiled; do
      for kind in prefill decode; do
        jq -e --arg l "attention $kind v=$v " 'any(.cases[]; .label | startswith($l))' "$WORK/b.json" >/dev/null ||
          fail "no attention $kind v=$v case"
      done
    done
    for v in auto v1 v2; do
      [ "$(jq --arg l "compact $v " '[.cases[] | select(.label | startswith($l))] | length' "$WORK/b.json")" -eq 3 ] ||
        fail "compact $v: want 3 shapes"
    done
    jq -e '[.cases[] | select(.tolerance == "fast_gemm_bound")] | length == 3' "$WORK/b.json" >/dev/null ||
      fail "want the three fast GEMM precisions"
    ;;
  op_filter)  # --op selects one op; the text table prints the emulation note
    "$ORACLE" kernels --bench --op matmul_stored --reps 1 --json >"$WORK/b.json"
    [ "$(jq '.cases | length' "$WORK/b.json")" -eq 12 ] || fail "matmul_stored: want one case per stored type"
    jq -e 'all(.cases[]; .op == "matmul_stored")' "$WORK/b.json" >/dev/null || fail "--op let another op through"
    "$ORACLE" kernels --bench --op attention --reps 1 >"$WORK/b.txt"
    grep -q "^note: host emulation" "$WORK/b.txt" || fail "no emulation note: $(cat "$WORK/b.txt")"
    [ "$(grep -c '^attention ' "$WORK/b.txt")" -eq 6 ] || fail "attention rows: $(cat "$WORK/b.txt")"
    ;;
  bad_input)  # exit 2, one line naming the option
    expect_input_error "nope" "--op" -- "$ORACLE" kernels --check --op nope
    expect_input_error "command line" "--check" -- "$ORACLE" kernels --op rope
    expect_input_error "command line" "--check" -- "$ORACLE" kernels --check --bench
    expect_input_error "huge" "--shapes" -- "$ORACLE" kernels --bench --shapes huge
    expect_input_error "0" "--reps" -- "$ORACLE" kernels --bench --reps 0
    expect_input_error "reference" "--backend" -- "$ORACLE" kernels --check --backend reference
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
