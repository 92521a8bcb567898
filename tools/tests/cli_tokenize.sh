#!/usr/bin/env bash
# oracle tokenize against llama-tokenize's committed output (golden/crosscheck,
# made by the peer llama.cpp 0c1e570; golden/crosscheck/README.md): real text and
# a ChatML prompt, token for token, byte for byte of the --ids line.
# Usage: cli_tokenize.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
X="$(dirname "$0")/../../golden/crosscheck"
SMOL="$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT="$SHARED/corpus/llama2xs-samples.txt"
same_ids() {  # same_ids FIXTURE oracle-args...: our --ids line equals llama-tokenize's
  local want=$1
  shift
  need_fixture "$want"
  "$ORACLE" tokenize --ids "$@" >"$WORK/ids" || fail "oracle tokenize $* exit $?"
  cmp -s "$WORK/ids" "$want" ||
    fail "ids differ from llama-tokenize ($(basename "$want")): $(cmp "$WORK/ids" "$want" 2>&1 | head -1)"
}
case $CASE in
  llamacpp_text)  # 14k tokens of real text: SmolLM2 (BPE, smollm pre-tokenizer) and Llama 2 (SPM)
    need_fixture "$SMOL"
    need_fixture "$TEXT"
    same_ids "$X/llamacpp_tokenize_smollm2_llama2xs-samples.txt" -m "$SMOL" -f "$TEXT"
    same_ids "$X/llamacpp_tokenize_llama2xs_llama2xs-samples.txt" -m "$MODELS/gguf/llama2xs.gguf" -f "$TEXT"
    ;;
  llamacpp_chat)  # a ChatML prompt with special tokens, parsed and not, UTF-8 and whitespace runs
    need_fixture "$SMOL"
    same_ids "$X/llamacpp_tokenize_smollm2_chat_prompt.txt" -m "$SMOL" -f "$X/chat_prompt.txt"
    same_ids "$X/llamacpp_tokenize_smollm2_chat_prompt_no_parse_special.txt" -m "$SMOL" -f "$X/chat_prompt.txt" \
      --no-parse-special
    ;;
  json)  # the JSON object agrees with --ids, and states the options used
    need_fixture "$SMOL"
    "$ORACLE" tokenize -m "$SMOL" -p "<|im_start|>user" --json >"$WORK/j"
    jq -e '.ids == [1, 4093] and .n_tokens == 2 and .add_bos == false and .parse_special == true' "$WORK/j" \
      >/dev/null || fail "json: $(cat "$WORK/j")"
    "$ORACLE" tokenize -m "$MODELS/gguf/llama2xs.gguf" -p "Hello" --json --no-bos >"$WORK/j"
    jq -e '.add_bos == false and (.ids | index(1) | not)' "$WORK/j" >/dev/null || fail "--no-bos: $(cat "$WORK/j")"
    expect_input_error "nope.txt" "--file" -- "$ORACLE" tokenize -m "$SMOL" -f "$WORK/nope.txt"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
