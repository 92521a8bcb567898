#!/usr/bin/env bash
# oracle run / bench with speculative decoding (docs/speculative.md).
# Usage: cli_spec.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
TARGET="$MODELS/stories260K/stories260K.bin"
DRAFT="$MODELS/llama2xs/llama2xs.bin"
need_fixture "$TARGET"; need_fixture "$DRAFT"
ids() { jq -c '.output_ids' "$1"; }

case $CASE in
  greedy_equals_plain)  # greedy speculative ids = plain greedy ids, for a draft model and n-gram drafts
    "$ORACLE" run --model "$TARGET" --prompt "Once upon a time" --max-tokens 100 --json >"$WORK/plain.json"
    for k in 1 3 8; do
      "$ORACLE" run --model "$TARGET" --draft-model "$DRAFT" --spec-k $k --prompt "Once upon a time" \
        --max-tokens 100 --json >"$WORK/spec.json"
      [ "$(ids "$WORK/spec.json")" = "$(ids "$WORK/plain.json")" ] || fail "k $k: ids differ from plain greedy"
    done
    "$ORACLE" run --model "$TARGET" --spec-ngram 3 --spec-k 4 --prompt "Once upon a time" \
      --max-tokens 100 --json >"$WORK/ngram.json"
    [ "$(ids "$WORK/ngram.json")" = "$(ids "$WORK/plain.json")" ] || fail "n-gram: ids differ from plain greedy"
    ;;
  json_metrics)  # sampled run: acceptance metrics present and consistent, replayable
    args=(run --model "$TARGET" --draft-model "$DRAFT" --spec-k 4 --prompt "Once upon a time" --max-tokens 64
          --temperature 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 --seed 11 --json)
    "$ORACLE" "${args[@]}" >"$WORK/a.json"
    "$ORACLE" "${args[@]}" >"$WORK/b.json"
    cmp "$WORK/a.json" "$WORK/b.json" || fail "two sampled runs differ"
    jq -e '.speculative as $m | $m.k == 4 and $m.accepted <= $m.evaluated and $m.evaluated <= $m.drafted
           and $m.emitted == (.output_ids | length) and $m.target_passes == $m.rounds
           and ($m.acceptance_rate >= 0 and $m.acceptance_rate <= 1)
           and ($m.tokens_per_target_pass >= 1 and $m.tokens_per_target_pass <= 5)
           and ($m.expected_tokens_per_target_pass >= 1)
           and ($m.accepted_histogram | add) == $m.rounds' "$WORK/a.json" >/dev/null ||
      fail "metrics: $(jq -c .speculative "$WORK/a.json")"
    ;;
  draft_vocab_mismatch)  # a draft with another tokenizer is refused, naming the file and field
    AID="$MODELS/gguf/aidreams260K.gguf"
    need_fixture "$AID"
    expect_input_error "$AID" "tokens" -- "$ORACLE" run --model "$TARGET" --draft-model "$AID" --max-tokens 4
    ;;
  bench_report)  # bench: passes per token < 1 and the speculative output equals plain greedy
    "$ORACLE" bench --model "$TARGET" --draft-model "$DRAFT" --spec-k 4 --prompt-tokens 16 \
      --decode-tokens 64 --json >"$WORK/b.json"
    jq -e '.spec_same_output == true and .speculative.target_passes_per_token < 1
           and .spec_speedup > 0 and .spec_tokens == 64' "$WORK/b.json" >/dev/null ||
      fail "bench: $(cat "$WORK/b.json")"
    ;;
  *) fail "unknown case $CASE" ;;
esac
