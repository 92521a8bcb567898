#!/usr/bin/env bash
# Each corrupt input gives one clear error line naming file and field and exit
# code 2, never a signal. Usage: cli_errors.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
BIN="$MODELS/stories260K/stories260K.bin"
TOK="$MODELS/stories260K/tok512.bin"
GGUF="$MODELS/gguf/stories260K.gguf"
need_fixture "$BIN"; need_fixture "$TOK"; need_fixture "$GGUF"
run=("$ORACLE" run --max-tokens 4 --temperature 0)

case $CASE in
  missing_file)
    expect_input_error "$WORK/nope.gguf" "open|file|path" -- "${run[@]}" --model "$WORK/nope.gguf" ;;
  truncated_gguf)  # cut inside the metadata
    head -c 200 "$GGUF" >"$WORK/t.gguf"
    expect_input_error "$WORK/t.gguf" "n_kv|tokenizer|general|llama|key|trunc" -- "${run[@]}" --model "$WORK/t.gguf" ;;
  truncated_bin)  # llama2.c header intact, weights cut short
    head -c 500000 "$BIN" >"$WORK/t.bin"
    expect_input_error "$WORK/t.bin" "size|weights|trunc|token_embedding|bytes" -- \
      "${run[@]}" --model "$WORK/t.bin" --tokenizer "$TOK" ;;
  wrong_magic)  # GGUF -> GGUX: not GGUF, and not a valid llama2.c header either
    cp "$GGUF" "$WORK/m.gguf"
    patch_bytes "$WORK/m.gguf" 3 58
    expect_input_error "$WORK/m.gguf" "magic|dim|header|config" -- "${run[@]}" --model "$WORK/m.gguf" ;;
  too_many_tensors)  # n_tensors = 2^40: more than the file could hold
    cp "$GGUF" "$WORK/n.gguf"
    patch_bytes "$WORK/n.gguf" 8 0000000000010000
    expect_input_error "$WORK/n.gguf" "n_tensors|tensor" -- "${run[@]}" --model "$WORK/n.gguf" ;;
  too_many_bytes)  # header intact, tensor data cut: the last tensor runs past the end
    size=$(stat -c %s "$GGUF")
    head -c $((size - 4096)) "$GGUF" >"$WORK/b.gguf"
    expect_input_error "$WORK/b.gguf" "weight|tensor|offset|data" -- "${run[@]}" --model "$WORK/b.gguf" ;;
  config_mismatch)  # llama2.c header n_kv_heads = 3 does not divide n_heads = 8
    cp "$BIN" "$WORK/c.bin"
    patch_bytes "$WORK/c.bin" 16 03000000
    expect_input_error "$WORK/c.bin" "n_kv_heads|kv_heads" -- \
      "${run[@]}" --model "$WORK/c.bin" --tokenizer "$TOK" ;;
  tokenizer_vocab_mismatch)  # the 32000-token Llama 2 tokenizer on a 512-token model
    LLAMA_TOK="$MODELS/llama2-tokenizer/tokenizer.bin"
    need_fixture "$LLAMA_TOK"
    expect_input_error "$LLAMA_TOK" "vocab" -- "${run[@]}" --model "$BIN" --tokenizer "$LLAMA_TOK" ;;
  prompt_too_long)  # 16 positions of context, a prompt of many more tokens
    expect_input_error "$BIN" "prompt|context" -- "${run[@]}" --model "$BIN" --tokenizer "$TOK" \
      --context 16 --prompt "Once upon a time there was a little girl named Lily who loved to play in the park"
    ;;
  unknown_preset)
    expect_input_error "nosuch" "preset" -- "$ORACLE" synth --preset nosuch -o "$WORK/x.gguf" ;;
  *) fail "unknown case $CASE" ;;
esac
