#!/usr/bin/env bash
# oracle bench: the JSON report is complete and self-consistent.
# Usage: cli_bench.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3

case $CASE in
  json_report)  # stories260K via GGUF (mapped F32): every field present, numbers sane
    GGUF="$MODELS/gguf/stories260K.gguf"
    need_fixture "$GGUF"
    "$ORACLE" bench --model "$GGUF" --prompt-tokens 32 --decode-tokens 16 --threads 2 --json >"$WORK/b.json"
    for f in model threads prefill_tokens prefill_tok_s decode_tokens decode_tok_s ttft_ms tpot_ms \
             kv_bytes_formula kv_bytes_allocated peak_rss_bytes rss_file_backed rss_anon \
             probe_read_bytes_s decode_bandwidth_ratio; do
      jq -e "has(\"$f\")" "$WORK/b.json" >/dev/null || fail "missing field $f"
    done
    # 2 * L * T * H_kv * D_h * 4 bytes: 5 layers, 4 KV heads of 8; T = 32 + 16 stored tokens
    # (the cache is sized by the run), and T = 128 (the context) for the full-context figure
    [ "$(jq .kv_bytes_formula "$WORK/b.json")" -eq $((2 * 5 * 48 * 4 * 8 * 4)) ] ||
      fail "kv_bytes_formula $(jq .kv_bytes_formula "$WORK/b.json")"
    [ "$(jq .kv_bytes_full_context "$WORK/b.json")" -eq $((2 * 5 * 128 * 4 * 8 * 4)) ] ||
      fail "kv_bytes_full_context $(jq .kv_bytes_full_context "$WORK/b.json")"
    jq -e '.kv_bytes_allocated == .kv_bytes_formula' "$WORK/b.json" >/dev/null ||
      fail "contiguous cache allocates a different size than the run needs"
    jq -e '.prefill_tok_s > 0 and .decode_tok_s > 0 and .threads == 2 and .peak_rss_bytes > 0
           and .rss_file_backed > 0 and (.tpot_ms - 1000 / .decode_tok_s | fabs) < 1e-6' \
      "$WORK/b.json" >/dev/null || fail "inconsistent report $(cat "$WORK/b.json")"
    ;;
  weights_residency)  # ORACLE_WEIGHTS (docs/cli.md): the file mapped or copied onto 2 MiB pages, named in
    # bench's report (whole 2 MiB pages, as many as the kernel granted: none where THP is off); the
    # generated text the same either way; any other spelling refused with exit 2
    m="$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    need_fixture "$m"
    for w in mapped huge_pages; do
      ORACLE_WEIGHTS=$w "$ORACLE" bench --model "$m" --prompt-tokens 4 --decode-tokens 2 --repetitions 1 --json >"$WORK/$w.json"
      jq -e --arg w $w --argjson size "$(stat -c %s "$m")" '.weights_residency == $w
          and .weights_huge_page_bytes <= ($size + 2097151) and .weights_huge_page_bytes % 2097152 == 0
          and ($w == "huge_pages" or .weights_huge_page_bytes == 0)' \
        "$WORK/$w.json" >/dev/null || fail "ORACLE_WEIGHTS=$w: $(jq -c '{weights_residency, weights_huge_page_bytes}' "$WORK/$w.json")"
      ORACLE_WEIGHTS=$w "$ORACLE" bench --model "$m" --prompt-tokens 4 --decode-tokens 2 --repetitions 1 -q |
        grep -q "^weights $w (" || fail "ORACLE_WEIGHTS=$w: the text report does not say 'weights $w'"
      ORACLE_WEIGHTS=$w "$ORACLE" run --model "$m" --prompt "Once upon a time" --max-tokens 12 >"$WORK/$w.txt"
    done
    cmp -s "$WORK/mapped.txt" "$WORK/huge_pages.txt" || fail "the text depends on ORACLE_WEIGHTS"
    jq -e '.weights_residency == "mapped"' <("$ORACLE" bench --model "$MODELS/gguf/stories260K.gguf" \
      --prompt-tokens 4 --decode-tokens 2 --repetitions 1 --json) >/dev/null || fail "a 1 MB file is not mapped under auto"
    set +e
    ORACLE_WEIGHTS=huge "$ORACLE" run --model "$m" --prompt "x" --max-tokens 1 >/dev/null 2>"$WORK/e.txt"; rc=$?
    set -e
    [ $rc -eq 2 ] && grep -q "ORACLE_WEIGHTS" "$WORK/e.txt" && grep -q "huge_pages" "$WORK/e.txt" ||
      fail "ORACLE_WEIGHTS=huge: rc $rc: $(cat "$WORK/e.txt")"
    ;;
  rss_bound)  # peak RSS of a 16-token run <= file + KV formula + 64 MB (docs/performance.md "Memory"),
    # for `run` (GNU time's maximum resident set) and for bench's own report, on a quantized
    # GGUF (SmolLM2 Q4_1), a mapped F32 GGUF (synthetic stories15m, 61 MB) and a llama2.c file
    "$ORACLE" synth --preset stories15m -o "$WORK/s15.gguf" >/dev/null
    for m in "$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$WORK/s15.gguf" "$MODELS/stories260K/stories260K.bin"; do
      need_fixture "$m"
      "$ORACLE" bench --model "$m" --prompt-tokens 5 --decode-tokens 16 --repetitions 1 --json >"$WORK/b.json"
      bound=$(jq .rss_bound_bytes "$WORK/b.json")
      [ "$bound" -eq $(( $(stat -c %s "$m") + $(jq .kv_bytes_formula "$WORK/b.json") + 64 * 1024 * 1024 )) ] ||
        fail "$m: rss_bound_bytes $bound is not file + kv_bytes_formula + 64 MiB"
      [ "$(jq .rss_within_bound "$WORK/b.json")" = true ] ||
        fail "$m: bench peak RSS $(jq .peak_rss_bytes "$WORK/b.json") exceeds $bound"
      /usr/bin/time -f %M -o "$WORK/rss" "$ORACLE" run --model "$m" --prompt "Once upon a time" --max-tokens 16 >/dev/null
      peak=$(( $(tail -1 "$WORK/rss") * 1024 ))
      [ "$peak" -le "$bound" ] || fail "$m: oracle run peak RSS $peak exceeds file + KV + 64 MiB = $bound"
      echo "  $(basename "$m"): run peak $((peak >> 20)) MiB, bench peak $(( $(jq .peak_rss_bytes "$WORK/b.json") >> 20 )) MiB, bound $((bound >> 20)) MiB"
    done
    if command -v readelf >/dev/null && readelf -d "$ORACLE" | grep -q 'NEEDED.*libcublas'; then
      fail "oracle links libcublas (fast mode dlopens it; linked it costs every process ~146 MB)"
    fi
    ;;
  certify_rss_bound)  # oracle certify's peak RSS <= the two model files + 64 MiB (docs/performance.md
    # "Certify (2026-12-04)"): SmolLM2 Q4_1 (vocabulary 49152, the logits that dominate) against
    # itself, 2 chunks of 128 on 2 threads, greedy prompts batched; GNU time's maximum resident set
    m="$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" corpus="$SHARED/corpus/llama2xs-samples.txt"
    need_fixture "$m"; need_fixture "$corpus"
    /usr/bin/time -f %M -o "$WORK/rss" "$ORACLE" certify --reference "$m" --candidate "$m" --corpus "$corpus" \
      --protocol llamacpp --ctx 128 --max-chunks 2 --threads 2 --greedy-prompts 2 --greedy-steps 4 --quiet \
      --no-png --out "$WORK/cert" >"$WORK/cert.log" || fail "certify failed: $(tail -3 "$WORK/cert.log")"
    peak=$(( $(tail -1 "$WORK/rss") * 1024 ))
    bound=$(( 2 * $(stat -c %s "$m") + 64 * 1024 * 1024 ))
    [ "$peak" -le "$bound" ] || fail "certify peak RSS $((peak >> 20)) MiB exceeds 2 files + 64 MiB = $((bound >> 20)) MiB"
    [ -s "$WORK/cert/certificate.json" ] || fail "no certificate.json"
    echo "  certify peak $((peak >> 20)) MiB, bound $((bound >> 20)) MiB"
    ;;
  context_too_small)  # more positions than the context holds is bad input
    expect_input_error "context" "context" -- "$ORACLE" bench --prompt-tokens 200 --decode-tokens 100
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
