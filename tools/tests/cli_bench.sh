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
  context_too_small)  # more positions than the context holds is bad input
    expect_input_error "context" "context" -- "$ORACLE" bench --prompt-tokens 200 --decode-tokens 100
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
