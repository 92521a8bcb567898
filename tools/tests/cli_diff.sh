#!/usr/bin/env bash
# oracle diff (docs/diff.md): the device pipeline on the host emulation of the
# kernels against the reference. Usage: cli_diff.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
BIN="$MODELS/stories260K/stories260K.bin"
TOK="$MODELS/stories260K/tok512.bin"
need_fixture "$BIN"; need_fixture "$TOK"
plain=("$ORACLE" diff --model "$BIN" --tokenizer "$TOK" --prompt "Once upon a time" --max-tokens 8)
diff=("${plain[@]}" --json)

case $CASE in
  emu_deterministic)  # every traced tensor bit-identical: exit 0, no divergence
    run_capture "${diff[@]}" --backend cuda-emu --mode deterministic
    [ "$RC" -eq 0 ] || fail "exit $RC (want 0): $(cat "$WORK/err") $(cat "$WORK/out")"
    jq -e '.bit_exact == true and .first_divergent == null and .max_ulp == 0 and .within_bound == true
           and .structure_error == "" and .logits.steps == 9 and .logits.greedy_agree == 9' "$WORK/out" >/dev/null \
      || fail "unexpected report: $(cat "$WORK/out")"
    # (prompt + 8 steps) positions x 5 layers x 12 ops, + output_norm and logits per step
    n=$(jq '.tensors_compared' "$WORK/out") p=$(jq '.prompt_tokens' "$WORK/out")
    [ "$n" -eq $(((p + 8) * 5 * 12 + 2 * 9)) ] || fail "tensors_compared $n with $p prompt tokens"
    echo "ok: $n tensors bit-identical" ;;
  emu_fast)  # fast mode: not bit-exact, within the documented logits bound
    run_capture "${diff[@]}" --backend cuda-emu --mode fast
    [ "$RC" -eq 0 ] || fail "exit $RC (want 0): $(cat "$WORK/err") $(cat "$WORK/out")"
    jq -e '.within_bound == true and .bit_exact == false and .first_divergent != null
           and .logits.worst_rel > 0 and .logits.worst_rel <= 1e-4 and .bound.rel == 1e-4' "$WORK/out" >/dev/null \
      || fail "unexpected report: $(cat "$WORK/out")"
    # the derived per-op bound: every matrix kind checked, nothing over, not vacuous
    jq -e '(.fast_ops | length) == 8 and all(.fast_ops[]; .over == 0 and .elements > 0
           and .worst_ratio > 0 and .worst_ratio <= 1 and .rel_bound > 0)
           and ([.fast_ops[].op] | sort) == ["attn_k","attn_output","attn_q","attn_v","ffn_down","ffn_gate","ffn_up","output"]' \
      "$WORK/out" >/dev/null || fail "per-op bound report: $(jq -c '.fast_ops' "$WORK/out")"
    # the first difference is a matmul output (the fast path changes only matmuls)
    op=$(jq -r '.first_divergent.op' "$WORK/out")
    [[ "$op" =~ ^blk\.0\.(q|k|v)$ ]] || fail "first divergent op $op (want blk.0.q/k/v)"
    echo "ok: first divergent $op, worst rel $(jq '.logits.worst_rel' "$WORK/out")" ;;
  emu_fast_tf32)  # TF32 / BF16 compute: held to their own (looser) per-op bounds; the F32 guard is not enforced
    for mode in fast-tf32 fast-bf16; do
      run_capture "${diff[@]}" --backend cuda-emu --mode $mode
      [ "$RC" -eq 0 ] || fail "$mode: exit $RC (want 0): $(cat "$WORK/err") $(cat "$WORK/out")"
      jq -e --arg m $mode '.mode == $m and .within_bound == true and .bound.guard_enforced == false
             and (.fast_ops | length) == 8 and all(.fast_ops[]; .over == 0 and .worst_ratio > 0 and .rel_bound > 1e-3)' \
        "$WORK/out" >/dev/null || fail "$mode report: $(cat "$WORK/out")"
    done
    echo "ok" ;;
  human)  # the human report names the verdict
    run_capture "${plain[@]}" --backend cuda-emu
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/err")"
    grep -q "no divergence" "$WORK/out" || fail "no verdict line: $(cat "$WORK/out")"
    echo "ok" ;;
  bad_backend)
    expect_input_error "tpu" "--backend" -- "${diff[@]}" --backend tpu ;;
  cuda_unavailable)  # no GPU here: --backend cuda is a clear input error (the plugin loaded, or its absence named)
    if [ -f "$(dirname "$ORACLE")/liboracle_device_cuda.so" ]; then
      if nvidia-smi -L >/dev/null 2>&1; then echo "ok: a GPU is present (nothing to refuse)"; exit 0; fi
      expect_input_error "cuda" "--backend.*no CUDA GPU found.*cuda-emu" -- "${diff[@]}" --backend cuda
    else
      expect_input_error "cuda" "--backend.*liboracle_device_cuda.so not found.*cuda-emu" -- "${diff[@]}" --backend cuda
    fi ;;
  cuda_plugin_missing)  # an oracle with no CUDA plugin beside it: --backend cuda names the file it looked for
    mkdir -p "$WORK/lone" && cp "$ORACLE" "$WORK/lone/oracle"
    "$WORK/lone/oracle" version --json | jq -e '.backends == ["reference", "cuda-emu"]' >/dev/null \
      || fail "version lists a backend it does not have: $("$WORK/lone/oracle" version --json)"
    expect_input_error "cuda" "--backend.*liboracle_device_cuda.so not found.*cuda-emu" -- "$WORK/lone/oracle" "${diff[@]:1}" --backend cuda ;;
  cuda_plugin_foreign)  # a file of that name that is not a plugin: refused as input, not a crash
    mkdir -p "$WORK/odd" && cp "$ORACLE" "$WORK/odd/oracle" && echo "not a library" >"$WORK/odd/liboracle_device_cuda.so"
    expect_input_error "cuda" "--backend.*cannot load.*liboracle_device_cuda.so" -- "$WORK/odd/oracle" "${diff[@]:1}" --backend cuda ;;
  cuda_plugin_stale)  # a plugin whose entry refuses this oracle's ABI key: "another build", exit 2
    fake="$(dirname "$ORACLE")/libfake_device_plugin.so"; need_fixture "$fake"
    mkdir -p "$WORK/stale" && cp "$ORACLE" "$WORK/stale/oracle" && cp "$fake" "$WORK/stale/liboracle_device_cuda.so"
    expect_input_error "cuda" "--backend.*not this oracle's CUDA backend.*cuda-emu" -- "$WORK/stale/oracle" "${diff[@]:1}" --backend cuda ;;
  bad_mode)
    run_capture "${diff[@]}" --backend cuda-emu --mode turbo
    [ "$RC" -eq 2 ] || fail "exit $RC (want 2)"
    grep -q -- "--mode" "$WORK/err" || fail "stderr does not name --mode: $(cat "$WORK/err")"
    echo "ok: $(head -1 "$WORK/err")" ;;
  run_emu_equals_reference)  # oracle run --backend cuda-emu: the reference's greedy ids
    r=("$ORACLE" run --model "$BIN" --tokenizer "$TOK" --prompt "Once upon a time" --max-tokens 24 --json)
    run_capture "${r[@]}"; [ "$RC" -eq 0 ] || fail "reference run exit $RC: $(cat "$WORK/err")"
    jq -c '.output_ids' "$WORK/out" >"$WORK/want"
    run_capture "${r[@]}" --backend cuda-emu; [ "$RC" -eq 0 ] || fail "cuda-emu run exit $RC: $(cat "$WORK/err")"
    jq -c '.output_ids' "$WORK/out" >"$WORK/got"
    cmp -s "$WORK/want" "$WORK/got" || fail "ids differ: reference $(cat "$WORK/want") cuda-emu $(cat "$WORK/got")"
    [ "$(jq 'length' "$WORK/got")" -ge 2 ] || fail "too few ids: $(cat "$WORK/got")"
    echo "ok: $(cat "$WORK/got")" ;;
  run_emu_sampled_equals_reference)  # the whole sampler chain on the device: the reference's JSON
    r=("$ORACLE" run --model "$BIN" --tokenizer "$TOK" --prompt "Once upon a time" --max-tokens 16 --preset llamacpp
       --temperature 0.9 --repeat-penalty 1.2 --frequency-penalty 0.1 --logit-bias 5:1.5 --ban 7 --logprobs 3
       --seed 11 --stop "." --json)
    run_capture "${r[@]}"; [ "$RC" -eq 0 ] || fail "reference run exit $RC: $(cat "$WORK/err")"
    jq -S 'del(.kv)' "$WORK/out" >"$WORK/want"
    run_capture "${r[@]}" --backend cuda-emu; [ "$RC" -eq 0 ] || fail "cuda-emu run exit $RC: $(cat "$WORK/err")"
    jq -e '.backend == "cuda-emu" and .mode == "deterministic"' "$WORK/out" >/dev/null || fail "no backend keys"
    jq -S 'del(.backend, .mode)' "$WORK/out" >"$WORK/got"
    cmp -s "$WORK/want" "$WORK/got" || fail "JSON differs: $(diff "$WORK/want" "$WORK/got" | head -20)"
    [ "$(jq '.steps | length' "$WORK/got")" -ge 2 ] || fail "too few steps"
    echo "ok: $(jq -c '.output_ids' "$WORK/got")" ;;
  run_emu_refuses_reference_only)  # reference-only options are refused on the device, naming the option
    for opt in "--kv paged" "--prefill-chunk 4" "--threads 2" "--spec-ngram 3"; do
      expect_input_error "" "${opt%% *}" -- "$ORACLE" run --model "$BIN" --tokenizer "$TOK" --max-tokens 4 \
        --backend cuda-emu $opt
    done ;;
  certify_emu_equals_reference)  # the candidate on cuda-emu: the same certificate, byte for byte
    G="$MODELS/gguf"; need_fixture "$G/llama2xs-q8_0.gguf"
    c=("$ORACLE" certify --reference "$G/llama2xs.gguf" --candidate "$G/llama2xs-q8_0.gguf"
       --corpus "$SHARED/corpus/llama2xs-samples.txt" --max-chunks 1 --greedy-prompts 1 --greedy-steps 4 --no-png -q)
    run_capture "${c[@]}" --out "$WORK/ref" --json; [ "$RC" -eq 0 ] || fail "reference exit $RC: $(cat "$WORK/err")"
    run_capture "${c[@]}" --out "$WORK/emu" --json --backend cuda-emu
    [ "$RC" -eq 0 ] || fail "cuda-emu exit $RC: $(cat "$WORK/err")"
    cmp -s "$WORK/ref/certificate.json" "$WORK/emu/certificate.json" \
      || fail "certificates differ: $(diff "$WORK/ref/certificate.json" "$WORK/emu/certificate.json" | head -5)"
    # the ggml-profile candidate on the device: the reference's ggml certificate, byte for byte
    run_capture "${c[@]}" --out "$WORK/gref" --json --candidate-numerics ggml
    [ "$RC" -eq 0 ] || fail "reference ggml exit $RC: $(cat "$WORK/err")"
    run_capture "${c[@]}" --out "$WORK/gemu" --json --candidate-numerics ggml --backend cuda-emu
    [ "$RC" -eq 0 ] || fail "cuda-emu ggml exit $RC: $(cat "$WORK/err")"
    jq -e '.candidate.numerics == "ggml"' "$WORK/gemu/certificate.json" >/dev/null || fail "no ggml on the certificate"
    cmp -s "$WORK/gref/certificate.json" "$WORK/gemu/certificate.json" \
      || fail "ggml certificates differ: $(diff "$WORK/gref/certificate.json" "$WORK/gemu/certificate.json" | head -5)"
    cmp -s "$WORK/ref/certificate.json" "$WORK/gemu/certificate.json" && fail "the ggml certificate is the canonical one"
    expect_input_error "" "--candidate-numerics" -- "${c[@]}" --out "$WORK/f" --backend cuda-emu --mode fast \
      --candidate-numerics ggml
    expect_input_error "" "--threads" -- "${c[@]}" --out "$WORK/t" --backend cuda-emu --threads 2 ;;
  bench_emu)
    run_capture "$ORACLE" bench --model "$BIN" --prompt-tokens 16 --decode-tokens 8 --backend cuda-emu --mode fast --json
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/err")"
    jq -e '.backend == "cuda-emu" and .mode == "fast" and .prefill_tok_s > 0 and .decode_tok_s > 0
           and .decode_weight_bytes > 0 and .peak_bandwidth_bytes_s == 0
           and .cuda_graphs == true and .graphs_captured == 1 and .graph_launches == 8' "$WORK/out" >/dev/null \
      || fail "unexpected report: $(cat "$WORK/out")"
    echo "ok: $(cat "$WORK/out")"
    # --mode both: the two modes alternate in one run, each reported, with the determinism tax
    run_capture "$ORACLE" bench --model "$BIN" --prompt-tokens 16 --decode-tokens 8 --backend cuda-emu --mode both \
      --repetitions 2 --json
    [ "$RC" -eq 0 ] || fail "--mode both: exit $RC: $(cat "$WORK/err")"
    jq -e '.mode == "both" and .deterministic.mode == "deterministic" and .fast.mode == "fast"
           and (.deterministic.samples.decode_tok_s | length) == 2 and (.fast.samples.decode_tok_s | length) == 2
           and ((.determinism_tax_decode - .fast.decode_tok_s / .deterministic.decode_tok_s) | . * .) < 1e-18
           and .determinism_tax_prefill > 0' "$WORK/out" >/dev/null \
      || fail "--mode both: unexpected report: $(cat "$WORK/out")"
    expect_input_error "" "--mode" -- "$ORACLE" bench --model "$BIN" --prompt-tokens 4 --decode-tokens 2 --mode both
    # decode steps are graphs by default (above: one shape, positions 16-23 in one chunk bucket, so one
    # capture and 8 launches); --cuda-graphs both alternates eager launches and graphs, same tokens
    run_capture "$ORACLE" bench --model "$BIN" --prompt-tokens 16 --decode-tokens 8 --backend cuda-emu \
      --cuda-graphs both --repetitions 2 --json
    [ "$RC" -eq 0 ] || fail "--cuda-graphs both: exit $RC: $(cat "$WORK/err")"
    jq -e '.cuda_graphs == "both" and .mode == "deterministic" and .eager.cuda_graphs == false
           and .eager.graph_launches == 0 and .graphs.cuda_graphs == true and .graphs.graph_launches == 8
           and ((.graph_speedup_decode - .graphs.decode_tok_s / .eager.decode_tok_s) | . * .) < 1e-18
           and .graph_speedup_prefill > 0 and .eager.last_token == .graphs.last_token' "$WORK/out" >/dev/null \
      || fail "--cuda-graphs both: unexpected report: $(cat "$WORK/out")"
    expect_input_error "" "--cuda-graphs" -- "$ORACLE" bench --model "$BIN" --prompt-tokens 4 --decode-tokens 2 \
      --cuda-graphs off
    expect_input_error "maybe" "--cuda-graphs" -- "$ORACLE" bench --model "$BIN" --prompt-tokens 4 --decode-tokens 2 \
      --backend cuda-emu --cuda-graphs maybe
    expect_input_error "both" "--mode" -- "$ORACLE" bench --model "$BIN" --prompt-tokens 4 --decode-tokens 2 \
      --backend cuda-emu --mode both --cuda-graphs both ;;
  golden_emu)  # golden verify --backend cuda-emu: every record (sampled ones too) reproduced on the device
    GOLDEN="$(dirname "$0")/../../golden"
    export ORACLE_SHARED_DIR=$SHARED
    # every sampler mix of the F32 .bin and the F16 GGUF; of the near-context records (a ~500-token
    # emulated prefill, 10 s each) only stories260K's greedy one: golden_verify_emu (soak) runs them all
    mkdir "$WORK/all"
    for f in stories260K stories260K-f16.gguf; do
      jq -c 'select((.id | test("near-context") | not) or .id == "stories260K/greedy/near-context")' \
        "$GOLDEN/$f.jsonl" >"$WORK/all/$f.jsonl"
    done
    run_capture "$ORACLE" golden verify "$WORK/all" --backend cuda-emu --json
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/out") $(cat "$WORK/err")"
    jq -e '.records == 25 and .matched == 25 and .skipped == 0' "$WORK/out" >/dev/null \
      || fail "not every record matched: $(cat "$WORK/out")"
    # a tampered sampled step is caught: exit 1 naming the step
    mkdir "$WORK/g"
    jq -c 'select(.id == "stories260K/llamacpp-topk-topp/once") | .output_ids[1] = (.output_ids[1] + 1)' \
      "$GOLDEN/stories260K.jsonl" >"$WORK/g/stories260K.jsonl"
    run_capture "$ORACLE" golden verify "$WORK/g" --backend cuda-emu
    [ "$RC" -eq 1 ] || fail "tampered: exit $RC (want 1): $(cat "$WORK/out")"
    grep -q "MISMATCH.*llamacpp-topk-topp.*step 1: token golden" "$WORK/out" || fail "tampered: $(cat "$WORK/out")"
    echo "ok: 25 records bit-identical on cuda-emu" ;;
  golden_emu_fast)  # fast mode: greedy records teacher-forced within the bound, sampled ones skipped
    GOLDEN="$(dirname "$0")/../../golden"
    export ORACLE_SHARED_DIR=$SHARED
    run_capture "$ORACLE" golden verify "$GOLDEN/stories260K.jsonl" --backend cuda-emu --mode fast --json
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/out") $(cat "$WORK/err")"
    jq -e '.records == 16 and .matched == 4 and .skipped == 12' "$WORK/out" >/dev/null || fail "$(cat "$WORK/out")"
    echo "ok" ;;
  golden_emu_refuses)  # --threads / --prefill-chunk are the reference's
    expect_input_error "" "--prefill-chunk" -- "$ORACLE" golden verify "$(dirname "$0")/../../golden" \
      --backend cuda-emu --prefill-chunk 4 ;;
  golden_emu_ggml)  # the ggml profile's records (golden/ggml) on the device: llama2xs Q8_0 and Q4_0 (the
                    # integer-dot matmul), stories260K F16 (x rounded to F16) without its near-context records;
                    # SmolLM2 Q4_1 is left to the soak run (golden_verify_ggml_emu)
    GOLDEN="$(dirname "$0")/../../golden/ggml"
    export ORACLE_SHARED_DIR=$SHARED
    mkdir "$WORK/all"
    for f in llama2xs-q8_0.gguf llama2xs-q4_0.gguf stories260K-f16.gguf; do
      jq -c 'select((.id | test("near-context") | not) or (.id | test("^llama2xs")))' "$GOLDEN/$f.jsonl" >"$WORK/all/$f.jsonl"
    done
    run_capture "$ORACLE" golden verify "$WORK/all" --backend cuda-emu --json
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/out") $(cat "$WORK/err")"
    jq -e '.records == 44 and .matched == 44 and .skipped == 0' "$WORK/out" >/dev/null \
      || fail "not every ggml record matched: $(cat "$WORK/out")"
    # the same records are not canonical ones: a record relabelled canonical mismatches (exit 1)
    mkdir "$WORK/g"
    jq -c 'select(.id == "llama2xs-q4_0.gguf/greedy/once") | del(.numerics)' "$GOLDEN/llama2xs-q4_0.gguf.jsonl" \
      >"$WORK/g/x.jsonl"
    run_capture "$ORACLE" golden verify "$WORK/g" --backend cuda-emu
    [ "$RC" -eq 1 ] || fail "relabelled record: exit $RC (want 1): $(cat "$WORK/out")"
    echo "ok: 44 ggml-profile records bit-identical on cuda-emu" ;;
  diff_emu_ggml)  # oracle diff --numerics ggml: every intermediate of both pipelines in the profile, bit for bit
    G="$MODELS/gguf/llama2xs-q4_0.gguf"; need_fixture "$G"
    run_capture "$ORACLE" diff --model "$G" --prompt "Once upon a time" --max-tokens 8 --json --backend cuda-emu \
      --numerics ggml
    [ "$RC" -eq 0 ] || fail "exit $RC (want 0): $(cat "$WORK/err") $(cat "$WORK/out")"
    jq -e '.bit_exact == true and .first_divergent == null and .max_ulp == 0 and .logits.steps == 9' "$WORK/out" \
      >/dev/null || fail "unexpected report: $(cat "$WORK/out")"
    echo "ok: $(jq .tensors_compared "$WORK/out") tensors bit-identical in the ggml profile" ;;
  ggml_fast_refused)  # the ggml profile is deterministic mode only on the device: exit 2 naming --numerics
    expect_input_error "" "--numerics" -- "$ORACLE" run --model "$BIN" --tokenizer "$TOK" --max-tokens 2 \
      --backend cuda-emu --mode fast --numerics ggml
    expect_input_error "" "--numerics" -- "${plain[@]}" --backend cuda-emu --mode fast-tf32 --numerics ggml
    GOLDEN="$(dirname "$0")/../../golden/ggml"
    export ORACLE_SHARED_DIR=$SHARED
    mkdir "$WORK/g"
    head -n 1 "$GOLDEN/llama2xs-q8_0.gguf.jsonl" >"$WORK/g/x.jsonl"
    expect_input_error "" "numerics" -- "$ORACLE" golden verify "$WORK/g" --backend cuda-emu --mode fast ;;
  *) fail "unknown case $CASE" ;;
esac
