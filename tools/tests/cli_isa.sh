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
  prefetch_refused)  # an unknown ORACLE_PREFETCH: exit 2 naming it and the value, before any work
    export ORACLE_PREFETCH=sideways
    expect_input_error "ORACLE_PREFETCH" "sideways" -- "$ORACLE" version
    grep -qF "auto, span or ahead" "$WORK/err" || fail "the error does not list the values: $(cat "$WORK/err")"
    expect_input_error "ORACLE_PREFETCH" "sideways" -- "$ORACLE" run --prompt "Once" --max-tokens 2
    ;;
  prefetch_reported)  # version and bench name the vendor and the prefetch; the variable is honoured
    vendor=$(awk -F': ' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
    case $vendor in GenuineIntel) want=intel def=ahead ;; AuthenticAMD) want=amd def=span ;; *) want=other def=span ;; esac
    j=$(env -u ORACLE_PREFETCH "$ORACLE" version --json)
    [ "$(jq -r .cpu_vendor <<<"$j")" = "$want" ] || fail "cpu_vendor $(jq -r .cpu_vendor <<<"$j"), /proc/cpuinfo says $vendor"
    [ "$(jq -r .decode_prefetch <<<"$j")" = "$def" ] || fail "default decode_prefetch $(jq -r .decode_prefetch <<<"$j"), want $def"
    for p in span ahead; do
      [ "$(ORACLE_PREFETCH=$p "$ORACLE" version --json | jq -r .decode_prefetch)" = $p ] || fail "ORACLE_PREFETCH=$p not honoured"
    done
    ORACLE_PREFETCH=span "$ORACLE" version | grep -q "decode prefetch span)" || fail "text: $(ORACLE_PREFETCH=span "$ORACLE" version)"
    ORACLE_PREFETCH=ahead "$ORACLE" bench --prompt-tokens 4 --decode-tokens 2 --repetitions 1 --json >"$WORK/b.json"
    jq -e ".decode_prefetch == \"ahead\" and .cpu_vendor == \"$want\"" "$WORK/b.json" >/dev/null || fail "bench json: $(cat "$WORK/b.json")"
    ;;
  prefetch_same_bits)  # a hint only: SmolLM2 Q4_1 (32-element blocks, the ones it changes) decodes the same logits
    m=$SHARED/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    [ -f "$m" ] || { echo "skip: no $m"; exit 77; }
    for p in span ahead; do
      ORACLE_PREFETCH=$p "$ORACLE" run -m "$m" --prompt "Once upon a time" --max-tokens 6 --threads 2 --json >"$WORK/$p.json" ||
        fail "ORACLE_PREFETCH=$p run failed"
    done
    bits() { jq -c '[.output_ids, [.steps[].logits_sha256]]' "$WORK/$1.json"; }
    [ "$(bits span | jq 'first | length')" -eq 6 ] || fail "no output: $(cat "$WORK/span.json" | head -c 300)"
    [ "$(bits span)" = "$(bits ahead)" ] || fail "span and ahead differ: $(bits span) vs $(bits ahead)"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
