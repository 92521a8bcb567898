#!/usr/bin/env bash
# The ISA dispatch at the command line (reference/compute/isa.h, docs/performance.md
# "One binary for every x86-64 CPU"): ORACLE_ISA forces a path, a bad or unavailable
# one is refused with exit 2 naming ORACLE_ISA, `version` and `bench` name the path.
# Usage: cli_isa.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3

features() { env -u ORACLE_ISA "$ORACLE" version --json | jq -r '.cpu_features | join(" ")'; }
has() { case " $(features) " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

case $CASE in
  bogus_refused)  # an unknown name: exit 2, one line naming ORACLE_ISA and the value, for any command
    export ORACLE_ISA=bogus
    expect_input_error "ORACLE_ISA" "bogus" -- "$ORACLE" version
    grep -qF "scalar, avx2 or avx512" "$WORK/err" || fail "the error does not list the paths: $(cat "$WORK/err")"
    expect_input_error "ORACLE_ISA" "bogus" -- "$ORACLE" run --prompt "Once" --max-tokens 2
    run_capture "$ORACLE" version --json
    [ "$RC" -eq 2 ] || fail "version --json exit $RC"
    jq -e '.error.file == "ORACLE_ISA" and .error.field == "bogus" and .error.exit_code == 2' "$WORK/out" >/dev/null ||
      fail "--json error object does not name ORACLE_ISA: $(cat "$WORK/out")"
    ;;
  unavailable_refused)  # a path this CPU lacks: exit 2 naming ORACLE_ISA and the missing feature
    if ! has avx512f; then want=avx512 missing=avx512f
    elif ! has avx2; then want=avx2 missing=avx2
    else echo "skip: this CPU has every path (avx512f present)"; exit 77; fi
    ORACLE_ISA=$want expect_input_error "ORACLE_ISA" "$want" -- "$ORACLE" version
    grep -qF "lacks $missing" "$WORK/err" || fail "the error does not name $missing: $(cat "$WORK/err")"
    ORACLE_ISA=$want expect_input_error "ORACLE_ISA" "$missing" -- "$ORACLE" run --prompt "Once" --max-tokens 2
    ;;
  version_names_path)  # the default is the widest path the CPU has; ORACLE_ISA=scalar is honoured
    j=$(env -u ORACLE_ISA "$ORACLE" version --json)
    if has avx512f; then best=avx512; elif has avx2 && has f16c; then best=avx2; else best=scalar; fi
    [ "$(jq -r .isa <<<"$j")" = "$best" ] || fail "default path $(jq -r .isa <<<"$j"), want $best ($j)"
    [ "$(ORACLE_ISA=scalar "$ORACLE" version --json | jq -r .isa)" = scalar ] || fail "ORACLE_ISA=scalar not honoured"
    ORACLE_ISA=scalar "$ORACLE" version | grep -q "ISA path scalar; CPU features: .*sse2" ||
      fail "text output: $(ORACLE_ISA=scalar "$ORACLE" version)"
    ;;
  bench_names_path)  # bench reports the path it ran on (json and text)
    ORACLE_ISA=scalar "$ORACLE" bench --prompt-tokens 4 --decode-tokens 2 --repetitions 1 --json >"$WORK/b.json"
    jq -e '.isa == "scalar" and (.cpu_features | index("sse2"))' "$WORK/b.json" >/dev/null || fail "bench json: $(cat "$WORK/b.json")"
    ORACLE_ISA=scalar "$ORACLE" bench --prompt-tokens 4 --decode-tokens 2 --repetitions 1 | grep -q "^ISA path scalar" ||
      fail "bench text output does not name the path"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
