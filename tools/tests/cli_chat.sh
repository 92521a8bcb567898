#!/usr/bin/env bash
# oracle run with chat templates and the vocabulary's special-token rules, on
# SmolLM2-135M-Instruct (ChatML, add_bos_token = false) and stories260K.gguf
# (no template). Usage: cli_chat.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
SMOL="$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DATA="$(dirname "$0")/../../reference/tests/data"
need_fixture "$SMOL"

case $CASE in
  smollm2_chatml_prompt)  # the prompt is Jinja2's rendering of the model's template, byte for byte
    "$ORACLE" run -m "$SMOL" --chat "What is the capital of France?" -n 48 --json >"$WORK/r.json"
    jq -r '.cases[0].expected' "$DATA/smollm2_chat_expected.json" >"$WORK/want"
    jq -r '.prompt' "$WORK/r.json" >"$WORK/got"
    cmp "$WORK/want" "$WORK/got" || fail "prompt differs: $(jq .prompt "$WORK/r.json")"
    jq -e '.chat_format == "chatml" and .add_bos == false and .parse_special == true
           and .prompt_ids[0] == 1 and (.prompt_ids | index(2)) != null' "$WORK/r.json" >/dev/null ||
      fail "ids/metadata: $(jq -c '{chat_format, add_bos, prompt_ids}' "$WORK/r.json")"
    grep -q "Paris" <<<"$(jq -r .text "$WORK/r.json")" || fail "no sensible answer: $(jq .text "$WORK/r.json")"
    jq -e '.stop_detail == "eos" and .output_ids[-1] == 2' "$WORK/r.json" >/dev/null ||
      fail "did not stop on <|im_end|>: $(jq -c '{stop_detail, output_ids}' "$WORK/r.json")"
    ;;
  smollm2_plain_ids)  # a plain prompt: no BOS (add_bos_token = false), llama.cpp's ids
    "$ORACLE" run -m "$SMOL" --prompt "The capital of France is" -n 1 --json >"$WORK/r.json"
    want=$(jq -c '.[] | select(.text == "The capital of France is") | .ids_parse_special' \
      "$MODELS/smollm2/llamacpp_tokens_public.json")
    [ "$(jq -c .prompt_ids "$WORK/r.json")" = "$want" ] || fail "ids $(jq -c .prompt_ids "$WORK/r.json") want $want"
    ;;
  no_parse_special)  # special-token text is parsed by default, kept as text with --no-parse-special
    "$ORACLE" run -m "$SMOL" --prompt "<|im_start|>user" -n 1 --json >"$WORK/a.json"
    "$ORACLE" run -m "$SMOL" --prompt "<|im_start|>user" -n 1 --json --no-parse-special >"$WORK/b.json"
    want=$(jq -c '.[] | select(.text == "<|im_start|>user\nWhat is 2+2?<|im_end|>")' "$MODELS/smollm2/llamacpp_tokens_public.json")
    [ -n "$want" ] || fail "fixture lacks the ChatML string"
    jq -e '.prompt_ids == [1, 4093]' "$WORK/a.json" >/dev/null || fail "parsed: $(jq -c .prompt_ids "$WORK/a.json")"
    jq -e '.prompt_ids[0] != 1 and .parse_special == false' "$WORK/b.json" >/dev/null ||
      fail "not parsed: $(jq -c .prompt_ids "$WORK/b.json")"
    ;;
  messages_file)  # --messages FILE (OpenAI roles) equals --system + --chat
    printf '[{"role": "system", "content": "You are a concise assistant."}, {"role": "user", "content": "Name three colours."}]' >"$WORK/m.json"
    "$ORACLE" run -m "$SMOL" --messages "$WORK/m.json" -n 4 --json >"$WORK/a.json"
    "$ORACLE" run -m "$SMOL" --system "You are a concise assistant." --chat "Name three colours." -n 4 --json >"$WORK/b.json"
    jq -r '.cases[1].expected' "$DATA/smollm2_chat_expected.json" >"$WORK/want"
    jq -r .prompt "$WORK/a.json" >"$WORK/got"
    cmp "$WORK/want" "$WORK/got" || fail "--messages prompt differs"
    [ "$(jq -c '{prompt_ids, output_ids}' "$WORK/a.json")" = "$(jq -c '{prompt_ids, output_ids}' "$WORK/b.json")" ] ||
      fail "--messages and --system/--chat differ"
    ;;
  no_template)  # a model without tokenizer.chat_template: exit 2 unless --chat-format names one
    GGUF="$MODELS/gguf/stories260K.gguf"
    need_fixture "$GGUF"
    expect_input_error "$GGUF" "tokenizer.chat_template" -- "$ORACLE" run -m "$GGUF" --chat "hi" -n 2
    run_capture "$ORACLE" run -m "$GGUF" --chat "hi" --chat-format zephyr -n 2 --json
    [ "$RC" -eq 0 ] || fail "--chat-format zephyr: exit $RC $(cat "$WORK/err")"
    jq -e '.prompt == "<|user|>\nhi<|endoftext|>\n<|assistant|>\n" and .chat_format == "zephyr"' "$WORK/out" >/dev/null ||
      fail "zephyr prompt: $(jq .prompt "$WORK/out")"
    expect_input_error "vicuna" "--chat-format" -- "$ORACLE" run -m "$SMOL" --chat "hi" --chat-format vicuna -n 2
    ;;
  bad_messages)  # malformed --messages files are exit 2 naming the file and the message
    printf '[{"role": "user"}]' >"$WORK/m.json"
    expect_input_error "$WORK/m.json" "messages\[0\]" -- "$ORACLE" run -m "$SMOL" --messages "$WORK/m.json" -n 2
    printf 'not json' >"$WORK/m.json"
    expect_input_error "$WORK/m.json" "messages" -- "$ORACLE" run -m "$SMOL" --messages "$WORK/m.json" -n 2
    ;;
  *) fail "unknown case $CASE" ;;
esac
