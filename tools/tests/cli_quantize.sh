#!/usr/bin/env bash
# oracle quantize: the CLI around quantize_gguf (docs/quantize.md). The bytes
# themselves are checked against llama-quantize's digests by
# test_quantize_llamacpp; here: names, report, errors, atomic output, and the
# synthetic gqa model (256-multiple rows, so real k-quants on every matrix)
# against the whole-file digests of the same table (its # SOURCE line says
# which tool made them; docs/quantize.md).
# Usage: cli_quantize.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
L2XS="$MODELS/gguf/llama2xs.gguf"
TABLE="$(dirname "$0")/../../audit/tests/data/llamacpp_quantize_digests.txt"
need_fixture "$L2XS"

case $CASE in
  json_report)  # Q4_K_M of llama2xs: llama-quantize's choices, sizes and bits per weight
    "$ORACLE" quantize "$L2XS" "$WORK/q.gguf" --type Q4_K_M --json >"$WORK/q.json"
    j() { jq -r "$1" "$WORK/q.json"; }
    [ "$(j .type)" = Q4_K_M ] && [ "$(j .file_type)" = 15 ] || fail "type $(j .type) / file_type $(j .file_type)"
    [ "$(j .converted)" = 37 ] && [ "$(j .copied)" = 11 ] || fail "converted $(j .converted) copied $(j .copied)"
    [ "$(j .file_bytes)" = "$(stat -c %s "$WORK/q.gguf")" ] || fail "file_bytes $(j .file_bytes)"
    # 64-wide rows fit no 256-block: output -> Q8_0, attn_q -> Q5_0 (Q4_K's fallback),
    # attn_v: use_more_bits(i, 5) holds for i = 2 and 4 -> Q6_K -> Q8_0; else Q4_K -> Q5_0
    [ "$(j '.tensors[] | select(.name=="output.weight") | .to')" = Q8_0 ] || fail "output.weight"
    [ "$(j '.tensors[] | select(.name=="blk.1.attn_q.weight") | .to')" = Q5_0 ] || fail "attn_q"
    [ "$(j '.tensors[] | select(.name=="blk.0.attn_v.weight") | .to')" = Q5_0 ] || fail "attn_v 0"
    [ "$(j '.tensors[] | select(.name=="blk.2.attn_v.weight") | .to')" = Q8_0 ] || fail "attn_v 2"
    [ "$(j '.tensors[0].name')" = output.weight ] || fail "not llama.cpp's tensor order"
    bpw=$(jq -r '(8 * .bytes_out / .n_elements * 1000 | round) == (.bpw_out * 1000 | round)' "$WORK/q.json")
    [ "$bpw" = true ] || fail "bpw_out is not 8 * bytes_out / n_elements"
    "$ORACLE" quantize "$L2XS" "$WORK/h.gguf" --type q8_0 >"$WORK/h.txt"; grep -q "BPW" "$WORK/h.txt" || fail "no BPW in the human report"
    ;;
  names_case_insensitive)  # q4_k_m = Q4_K_M = q4_k (llama-quantize's alias); --pure differs
    "$ORACLE" quantize "$L2XS" "$WORK/a.gguf" --type Q4_K_M >/dev/null
    "$ORACLE" quantize "$L2XS" "$WORK/b.gguf" --type q4_k_m >/dev/null
    "$ORACLE" quantize "$L2XS" "$WORK/c.gguf" --type q4_K >/dev/null
    "$ORACLE" quantize "$L2XS" "$WORK/d.gguf" --type Q4_K --pure >/dev/null
    cmp "$WORK/a.gguf" "$WORK/b.gguf" && cmp "$WORK/a.gguf" "$WORK/c.gguf" || fail "spellings differ"
    ! cmp -s "$WORK/a.gguf" "$WORK/d.gguf" || fail "--pure made no difference"
    ;;
  unknown_type)
    expect_input_error "--type" "type" -- "$ORACLE" quantize "$L2XS" "$WORK/x.gguf" --type Q9_9
    expect_input_error "--type" "importance matrix" -- "$ORACLE" quantize "$L2XS" "$WORK/x.gguf" --type IQ2_XS
    [ ! -e "$WORK/x.gguf" ] || fail "output written for a refused type"
    ;;
  requantize_needs_flag)  # quantized input: refused like llama-quantize unless --allow-requantize
    Q4="$MODELS/gguf/llama2xs-q4_0.gguf"
    need_fixture "$Q4"
    expect_input_error "$Q4" "output.weight" -- "$ORACLE" quantize "$Q4" "$WORK/f.gguf" --type F32
    "$ORACLE" quantize "$Q4" "$WORK/f.gguf" --type F32 --allow-requantize >/dev/null
    [ "$(stat -c %s "$WORK/f.gguf")" -gt 1200000 ] || fail "F32 export too small"
    ;;
  nan_atomic)  # NaN in a tensor being converted: exit 2 naming it; OUT untouched, no temp left
    cp "$L2XS" "$WORK/nan.gguf"
    chmod u+w "$WORK/nan.gguf"
    # data section = file size - 1248000 tensor bytes = 14176; output.weight at +131328
    [ "$(stat -c %s "$WORK/nan.gguf")" = 1262176 ] || fail "llama2xs.gguf changed: fix the offsets"
    patch_bytes "$WORK/nan.gguf" $((14176 + 131328 + 4 * 70)) 0000c07f
    mkdir "$WORK/dest"
    echo old >"$WORK/dest/q.gguf"
    expect_input_error "output.weight" "NaN" -- "$ORACLE" quantize "$WORK/nan.gguf" "$WORK/dest/q.gguf" --type Q8_0
    [ "$(cat "$WORK/dest/q.gguf")" = old ] || fail "existing output overwritten by a failed run"
    [ "$(ls "$WORK/dest")" = q.gguf ] || fail "temporary left behind: $(ls "$WORK/dest")"
    expect_input_error "$WORK/none/q.gguf" "file" -- "$ORACLE" quantize "$L2XS" "$WORK/none/q.gguf" --type Q8_0
    ;;
  threads_identical)
    "$ORACLE" quantize "$L2XS" "$WORK/1.gguf" --type Q6_K --pure --threads 1 >/dev/null
    "$ORACLE" quantize "$L2XS" "$WORK/2.gguf" --type Q6_K --pure --threads 2 >/dev/null
    cmp "$WORK/1.gguf" "$WORK/2.gguf" || fail "thread count changed the output"
    ;;
  synth_gqa_llamacpp)  # every run on `synth --preset gqa --seed 1`: the table's whole-file digest
    "$ORACLE" synth --preset gqa --seed 1 -o "$WORK/gqa.gguf" >/dev/null
    n=0
    while read -r kind model run bytes sha; do
      [ "$kind" = file ] && [ "$model" = synth-gqa ] || continue
      type=${run%+pure}
      flags=()
      [ "$run" != "$type" ] && flags=(--pure)
      "$ORACLE" quantize "$WORK/gqa.gguf" "$WORK/q.gguf" --type "$type" "${flags[@]}" --threads 2 >/dev/null
      got=$(sha256sum "$WORK/q.gguf" | cut -d' ' -f1)
      [ "$got" = "$sha" ] || fail "synth-gqa $run: sha256 $got, table $sha"
      n=$((n + 1))
    done <"$TABLE"
    [ "$n" = 27 ] || fail "$n synth-gqa runs in the table (want 27)"
    echo "ok: 27 runs identical to the table"
    ;;
  *) fail "unknown case $CASE" ;;
esac
