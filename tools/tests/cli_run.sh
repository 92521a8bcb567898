#!/usr/bin/env bash
# oracle run: text and --json on the embedded default and on real checkpoints.
# Usage: cli_run.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
fingerprint() { jq -c '{prompt_ids, output_ids, finish_reason, steps: [.steps[].logits_sha256]}' "$1"; }

case $CASE in
  default_text)  # no --model: the embedded model streams text, exit 0
    run_capture "$ORACLE" run --prompt "Once upon a time" --max-tokens 16 --temperature 0
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/err")"
    [ -s "$WORK/out" ] || fail "no text on stdout"
    # stderr: llama.cpp's timing lines only (--quiet drops them: cli_ux_run_context_echo_timing)
    ! grep -qv "^oracle run: .* time = " "$WORK/err" || fail "unexpected stderr: $(cat "$WORK/err")"
    ;;
  json_schema)  # every documented field, hashes are 64 hex digits, one per generated token
    "$ORACLE" run --prompt "hi" --max-tokens 8 --json >"$WORK/r.json"
    jq -e '(.model_sha256 | test("^[0-9a-f]{64}$")) and (.tokenizer_sha256 | test("^[0-9a-f]{64}$"))
           and (.prompt_ids | length) >= 1 and (.prompt_ids[0] == 1)
           and (.steps | length) == (.output_ids | length)
           and all(.steps[]; .logits_sha256 | test("^[0-9a-f]{64}$"))
           and (.text | type) == "string"
           and (.finish_reason == "length" or .finish_reason == "stop")' \
      "$WORK/r.json" >/dev/null || fail "schema: $(cat "$WORK/r.json")"
    ;;
  repeatable)  # two runs of the same command print the same JSON, byte for byte
    "$ORACLE" run --prompt "Once upon a time" --max-tokens 32 --json >"$WORK/a.json"
    "$ORACLE" run --prompt "Once upon a time" --max-tokens 32 --json >"$WORK/b.json"
    cmp "$WORK/a.json" "$WORK/b.json" || fail "two runs differ"
    ;;
  default_is_synth_tiny)  # the embedded default equals `synth --preset tiny` written and read back
    "$ORACLE" synth --preset tiny -o "$WORK/tiny.gguf" >/dev/null
    "$ORACLE" run --prompt "Once upon a time" --max-tokens 24 --json >"$WORK/a.json"
    "$ORACLE" run --model "$WORK/tiny.gguf" --prompt "Once upon a time" --max-tokens 24 --json >"$WORK/b.json"
    [ "$(jq -r .model_sha256 "$WORK/a.json")" = "$(sha256sum "$WORK/tiny.gguf" | cut -d' ' -f1)" ] ||
      fail "embedded model hash is not the synth file's"
    [ "$(fingerprint "$WORK/a.json")" = "$(fingerprint "$WORK/b.json")" ] || fail "logits differ"
    ;;
  threads_identical)  # --threads changes no bit
    "$ORACLE" run --prompt "Once upon a time" --max-tokens 24 --json --threads 1 >"$WORK/a.json"
    "$ORACLE" run --prompt "Once upon a time" --max-tokens 24 --json --threads 2 >"$WORK/b.json"
    [ "$(fingerprint "$WORK/a.json")" = "$(fingerprint "$WORK/b.json")" ] || fail "threads 1 vs 2 differ"
    ;;
  stories260K_llama2c_ids)  # greedy ids equal llama2.c's (run -t 0 -n 200 -i "Once upon a time")
    BIN="$MODELS/stories260K/stories260K.bin"
    EXPECTED="$MODELS/stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt"
    need_fixture "$BIN"; need_fixture "$EXPECTED"
    "$ORACLE" run --model "$BIN" --prompt "Once upon a time" --max-tokens 200 --temperature 0 --json >"$WORK/r.json"
    got=$(jq -r '(.prompt_ids[1:] + .output_ids)[:200] | map(tostring) | join(" ")' "$WORK/r.json")
    want=$(tr -s ' \n' ' ' <"$EXPECTED" | sed 's/ $//')
    [ "$got" = "$want" ] || fail "ids differ from llama2.c:
got:  ${got:0:300}
want: ${want:0:300}"
    ;;
  stories260K_llama2c_text)  # text of the empty-prompt run (256 steps) equals llama2.c's transcript
    BIN="$MODELS/stories260K/stories260K.bin"
    EXPECTED="$MODELS/stories260K/expected_greedy_empty_prompt_256steps.txt"
    need_fixture "$BIN"; need_fixture "$EXPECTED"
    "$ORACLE" run --model "$BIN" --prompt "" --max-tokens 256 --temperature 0 >"$WORK/out.txt"
    cmp "$WORK/out.txt" "$EXPECTED" || fail "text differs: $(diff "$WORK/out.txt" "$EXPECTED" | head -5)"
    ;;
  prefill_chunks)  # prefill in chunks of 1, 3, 7 tokens gives the one-pass logits
    BIN="$MODELS/stories260K/stories260K.bin"
    need_fixture "$BIN"
    p="Once upon a time, there was a little girl named Lily. She loved to play outside."
    "$ORACLE" run --model "$BIN" --prompt "$p" --max-tokens 16 --json >"$WORK/0.json"
    for c in 1 3 7; do
      "$ORACLE" run --model "$BIN" --prompt "$p" --max-tokens 16 --json --prefill-chunk $c >"$WORK/$c.json"
      [ "$(fingerprint "$WORK/0.json")" = "$(fingerprint "$WORK/$c.json")" ] || fail "chunk $c differs"
    done
    ;;
  kv_paged)  # --kv paged gives the contiguous logits for several block sizes; memory report in --json
    BIN="$MODELS/stories260K/stories260K.bin"
    need_fixture "$BIN"
    p="Once upon a time, there was a little girl named Lily."
    "$ORACLE" run --model "$BIN" --prompt "$p" --max-tokens 40 --json >"$WORK/c.json"
    for b in 1 3 16 64; do
      "$ORACLE" run --model "$BIN" --prompt "$p" --max-tokens 40 --json --kv paged --kv-block $b >"$WORK/p$b.json"
      [ "$(fingerprint "$WORK/c.json")" = "$(fingerprint "$WORK/p$b.json")" ] || fail "block $b differs"
    done
    # 2*L*H_kv*D_h*4 = 2*5*4*8*4 bytes per token for stories260K; 16-token blocks hold all tokens
    jq -e '.kv.mode == "paged" and .kv.bytes_per_token == 1280 and .kv.block_size == 16
           and .kv.blocks_used * 16 >= .kv.tokens_stored and .kv.tokens_stored > 0' "$WORK/p16.json" >/dev/null ||
      fail "kv report: $(jq -c .kv "$WORK/p16.json")"
    run_capture "$ORACLE" run --model "$BIN" --kv ring
    [ "$RC" -eq 2 ] || fail "--kv ring: exit $RC"
    ;;
  sampler_flags)  # --logit-bias / --ban / --stop-token reach the sampler; a bad bias is exit 2
    BIN="$MODELS/stories260K/stories260K.bin"
    need_fixture "$BIN"
    "$ORACLE" run --model "$BIN" --prompt "Once" --max-tokens 3 --json --logit-bias 300:1000 >"$WORK/b.json"
    [ "$(jq -c .output_ids "$WORK/b.json")" = "[300,300,300]" ] || fail "bias: $(jq -c .output_ids "$WORK/b.json")"
    "$ORACLE" run --model "$BIN" --prompt "Once" --max-tokens 3 --json --logit-bias 300:1000 --ban 300 >"$WORK/c.json"
    jq -e 'all(.output_ids[]; . != 300)' "$WORK/c.json" >/dev/null || fail "ban ignored"
    "$ORACLE" run --model "$BIN" --prompt "Once" --max-tokens 9 --json --logit-bias 300:1000 --stop-token 300 >"$WORK/d.json"
    jq -e '.output_ids == [300] and .stop_detail == "stop_token"' "$WORK/d.json" >/dev/null ||
      fail "stop token: $(jq -c '{output_ids, stop_detail}' "$WORK/d.json")"
    expect_input_error "300x" "--logit-bias" -- "$ORACLE" run --model "$BIN" --logit-bias 300x
    expect_input_error "sampler" "logit_bias" -- "$ORACLE" run --model "$BIN" --logit-bias 99999:1
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
