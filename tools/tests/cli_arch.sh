#!/usr/bin/env bash
# Architectures and keys (docs/formats.md "GGUF keys and tensors"): a synthetic
# GGUF edited to carry a key the oracle does not implement is exit 2 naming the
# key; honoured keys change the output; context extension is explicit.
# Usage: cli_arch.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3

case $CASE in
  refused_keys)  # each key: `oracle run` exits 2 with one line naming the file and the key
    for kv in llama.rope.scaling.type=str:longrope llama.attention.sliding_window=u32:64 \
              llama.final_logit_softcapping=f32:30 llama.attn_logit_softcapping=f32:50 \
              llama.attention.scale=f32:0.5 llama.rope.scaling.yarn_beta_fast=f32:16 \
              llama.expert_count=u32:8 llama.rope.dimension_count=u32:8 llama.rope.freq_base_swa=f32:1e4 \
              llama.embedding_scale=f32:12 llama.attention.causal=bool:false mystery.key=str:x; do
      key=${kv%%=*}
      "$ORACLE" synth --preset tiny --meta "$kv" -o "$WORK/k.gguf" >/dev/null
      expect_input_error "$WORK/k.gguf" "$key" -- "$ORACLE" run --model "$WORK/k.gguf" --max-tokens 2
    done
    ;;
  honoured_linear)  # tiny + linear factor 4 keys == the linear-tiny preset; != plain tiny
    "$ORACLE" synth --preset tiny -o "$WORK/t.gguf" >/dev/null
    "$ORACLE" synth --preset linear-tiny -o "$WORK/l.gguf" >/dev/null
    "$ORACLE" synth --preset tiny --meta llama.rope.scaling.type=str:linear \
      --meta llama.rope.scaling.factor=f32:4 -o "$WORK/e.gguf" >/dev/null
    for m in t l e; do
      "$ORACLE" run --model "$WORK/$m.gguf" --prompt "hello world, hello" --max-tokens 12 --json >"$WORK/$m.json"
    done
    [ "$(jq -c "[.steps[].logits_sha256]" "$WORK/e.json")" = "$(jq -c "[.steps[].logits_sha256]" "$WORK/l.json")" ] ||
      fail "edited tiny and linear-tiny disagree"
    [ "$(jq -c "[.steps[].logits_sha256]" "$WORK/e.json")" != "$(jq -c "[.steps[].logits_sha256]" "$WORK/t.json")" ] ||
      fail "linear scaling did not change the logits"
    ;;
  presets_run)  # every architecture / scaling preset loads and generates
    for p in qwen2-tiny llama3-tiny linear-tiny yarn-tiny; do
      "$ORACLE" synth --preset "$p" -o "$WORK/$p.gguf" >/dev/null
      "$ORACLE" run --model "$WORK/$p.gguf" --prompt "abc" --max-tokens 4 --json >"$WORK/$p.json"
      [ "$(jq '.output_ids | length' "$WORK/$p.json")" -ge 1 ] || fail "$p generated nothing"
    done
    ;;
  context_extension)  # above the trained context: exit 2 unless asked, then recorded in --json
    "$ORACLE" synth --preset tiny -o "$WORK/t.gguf" >/dev/null
    expect_input_error "$WORK/t.gguf" "context_length" -- "$ORACLE" run --model "$WORK/t.gguf" --context 1024 --max-tokens 2
    grep -q -- "--allow-context-extension" "$WORK/err" || fail "error does not name the option"
    "$ORACLE" run --model "$WORK/t.gguf" --context 1024 --allow-context-extension --max-tokens 2 --json >"$WORK/x.json"
    [ "$(jq -c .context_extension "$WORK/x.json")" = '{"context":1024,"trained_context":256}' ] ||
      fail "context_extension: $(jq -c .context_extension "$WORK/x.json")"
    "$ORACLE" run --model "$WORK/t.gguf" --context 128 --max-tokens 2 --json >"$WORK/y.json"
    [ "$(jq -c .context_extension "$WORK/y.json")" = null ] || fail "a shorter context is not an extension"
    ;;
  meta_overrides)  # --meta on a key the preset writes replaces its value (one key, no duplicate)
    "$ORACLE" synth --preset tiny --meta llama.context_length=u32:128 -o "$WORK/o.gguf" >/dev/null
    "$ORACLE" run --model "$WORK/o.gguf" --max-tokens 2 --json >"$WORK/o.json"
    expect_input_error "$WORK/o.gguf" "context_length" -- "$ORACLE" run --model "$WORK/o.gguf" --context 200 --max-tokens 2
    [ "$(grep -c -a 'llama.context_length' "$WORK/o.gguf")" = 1 ] || fail "the key is written twice"
    ;;
  bad_meta)  # a malformed --meta is exit 2 and writes no file
    expect_input_error "x=u32:abc" "--meta" -- "$ORACLE" synth --preset tiny --meta x=u32:abc -o "$WORK/m.gguf"
    [ ! -e "$WORK/m.gguf" ] || fail "a file was written"
    ;;
  *) fail "unknown case $CASE" ;;
esac
