#!/usr/bin/env bash
# Interop end to end (docs/interop.md): logit/trace dumps read from Python,
# oracle compare, llama.cpp KLD base files both ways, the reference cache,
# llama-perplexity on our file (peer), engine-log replay.
# Usage: cli_interop.sh ORACLE SHARED CASE
source "$(dirname "$0")/../../tools/tests/lib.sh"
CASE=$3
HERE=$(cd "$(dirname "$0")" && pwd)
G="$MODELS/gguf"
REF="$G/llama2xs.gguf"
BASE="$G/llama2xs-samples.kld"
CORPUS="$SHARED/corpus/llama2xs-samples.txt"
PRINTOUT="$G/llamacpp_kld_llama2xs-q4_0_vs_llama2xs-samples.kld.txt"
SMOL_Q4_1="$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
need_fixture "$REF"

dump() {  # greedy run of 12 steps with both dumps
  "$ORACLE" run -m "$REF" -p "Once upon a time" -n 12 --json --dump-logits "$WORK/l.safetensors" \
    --dump-trace "$WORK/t.safetensors" >"$WORK/run.json" || fail "run --dump-logits"
}
# printout VALUE: the number after "LABEL:" in llama.cpp's printout; unc: the one after ±
printed() { grep -F "$1" "$PRINTOUT" | head -1 | sed 's/.*: *//' | awk '{print $1}' | tr -d '%'; }
printed_unc() { grep -F "$1" "$PRINTOUT" | head -1 | sed 's/.*± *//' | awk '{print $1}' | tr -d '%'; }
# Q4_0 scored against base file $1 (certificate in $WORK/cert): llama.cpp's printout $PRINTOUT
# within 2 of its standard errors, PPL(base) (from the file's records alone) to all printed digits.
check_q4_0_against() {
  run_capture "$ORACLE" certify --reference-kld-base "$1" --candidate "$G/llama2xs-q4_0.gguf" --protocol llamacpp \
    --threads 2 --no-progress --out "$WORK/cert"
  [ "$RC" -eq 0 ] || fail "exit $RC $(cat "$WORK/err")"
  C="$WORK/cert/certificate.json"
  within "mean KLD" "$(jq .statistics.kld.mean "$C")" "$(printed 'Mean    KLD')" "$(printed_unc 'Mean    KLD')"
  within "PPL(Q)" "$(jq .statistics.perplexity.candidate.mean "$C")" "$(printed 'Mean PPL(Q) ')" "$(printed_unc 'Mean PPL(Q) ')"
  within "PPL ratio" "$(jq .statistics.perplexity.ratio.mean "$C")" "$(printed 'Mean PPL(Q)/PPL(base)')" \
    "$(printed_unc 'Mean PPL(Q)/PPL(base)')"
  within "same top %" "$(jq '100 * .statistics.same_top.mean' "$C")" "$(printed 'Same top p')" "$(printed_unc 'Same top p')"
  within "RMS dp %" "$(jq '100 * .statistics.delta_p_next.rms.mean' "$C")" "$(printed 'RMS Δp')" "$(printed_unc 'RMS Δp')"
  awk -v o="$(jq .statistics.perplexity.reference.mean "$C")" -v t="$(printed 'Mean PPL(base)')" \
    'BEGIN { d = o - t; if (d < 0) d = -d; exit !(d <= 5e-7) }' || fail "PPL(base) $(jq .statistics.perplexity.reference.mean "$C")"
}
# check_ggml_within NAME REF CAND [CTX]: certify --candidate-numerics ggml (certificate in $WORK/NAME) on $CORPUS;
# mean KLD, PPL ratio, same top and RMS Δp within 2 of the standard errors of llama.cpp's printout $PRINTOUT
check_ggml_within() {
  run_capture "$ORACLE" certify --reference "$2" --candidate "$3" --corpus "$CORPUS" \
    --protocol llamacpp --ctx "${4:-128}" --threads 2 --greedy-prompts 0 --candidate-numerics ggml --no-progress --no-png \
    --out "$WORK/$1"
  [ "$RC" -le 1 ] || fail "$1: exit $RC $(cat "$WORK/err")"
  C="$WORK/$1/certificate.json"
  jq -e '.candidate.numerics == "ggml"' "$C" >/dev/null || fail "$1: certificate does not state the profile"
  within "$1 mean KLD" "$(jq .statistics.kld.mean "$C")" "$(printed 'Mean    KLD')" "$(printed_unc 'Mean    KLD')"
  within "$1 PPL ratio" "$(jq .statistics.perplexity.ratio.mean "$C")" "$(printed 'Mean PPL(Q)/PPL(base)')" \
    "$(printed_unc 'Mean PPL(Q)/PPL(base)')"
  within "$1 same top %" "$(jq '100 * .statistics.same_top.mean' "$C")" "$(printed 'Same top p')" "$(printed_unc 'Same top p')"
  within "$1 RMS dp %" "$(jq '100 * .statistics.delta_p_next.rms.mean' "$C")" "$(printed 'RMS Δp')" "$(printed_unc 'RMS Δp')"
}
within() {  # within NAME OURS THEIRS UNC: |ours - theirs| <= 2 * unc (two of llama.cpp's standard errors)
  awk -v o="$2" -v t="$3" -v u="$4" 'BEGIN { d = o - t; if (d < 0) d = -d; exit !(d <= 2 * u) }' ||
    fail "$1: ours $2, llama.cpp $3 ± $4"
  echo "ok: $1 ours $2, llama.cpp $3 ± $4"
}
peer_bin() {
  for d in "${ORACLE_PEER_BIN:-}" "${PEER_DIR:+$PEER_DIR/bin}"; do
    [ -n "$d" ] && [ -x "$d/llama-perplexity" ] && { echo "$d/llama-perplexity"; return; }
  done
}

case $CASE in
  dump_python)  # rows hash to logits_sha256; Python safetensors+numpy read both dumps
    dump
    python3 "$HERE/check_dumps.py" "$WORK/run.json" "$WORK/l.safetensors" "$WORK/t.safetensors" || fail "check_dumps.py"
    ;;
  compare_self)  # dump vs the reference teacher-forced, dump vs itself, .npy input: zero difference
    dump
    run_capture "$ORACLE" compare "$WORK/l.safetensors" -m "$REF" --json
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/err")"
    jq -e '.pass and .summary.kld_max == 0 and .summary.max_ulp == 0 and .summary.first_bit_diff == -1' "$WORK/out" >/dev/null ||
      fail "$(head -c 400 "$WORK/out")"
    python3 "$HERE/plant.py" npy "$WORK/l.safetensors" "$WORK/l.npy" "$WORK/ids.npy" "$WORK/p.npy" || fail plant
    run_capture "$ORACLE" compare "$WORK/l.npy" --token-ids "$WORK/ids.npy" --prompt-ids "$WORK/p.npy" -m "$REF" --json
    [ "$RC" -eq 0 ] && jq -e '.summary.max_ulp == 0' "$WORK/out" >/dev/null || fail ".npy: $RC $(cat "$WORK/err")"
    run_capture "$ORACLE" compare "$WORK/l.npy" -m "$REF"
    [ "$RC" -eq 2 ] && grep -q token_ids "$WORK/err" || fail ".npy without ids: exit $RC $(cat "$WORK/err")"
    ;;
  compare_planted)  # one ULP at step 7 found at step 7 (pass); near-tie swap = tie (pass); real swap = fail
    dump
    python3 "$HERE/plant.py" ulp "$WORK/l.safetensors" "$WORK/u.safetensors" 7 || fail plant
    run_capture "$ORACLE" compare "$WORK/u.safetensors" -m "$REF" --json --markdown "$WORK/r.md"
    [ "$RC" -eq 0 ] || fail "ulp: exit $RC"
    jq -e '.summary.first_bit_diff == 7 and .summary.max_ulp == 1 and .per_step[7].max_ulp == 1' "$WORK/out" >/dev/null ||
      fail "ulp: $(jq -c .summary "$WORK/out")"
    grep -q "first step with a bit difference | 7" "$WORK/r.md" || fail "markdown: $(cat "$WORK/r.md")"
    python3 "$HERE/plant.py" tie "$WORK/l.safetensors" "$WORK/w.safetensors" "$WORK/g.safetensors" 4 || fail plant
    run_capture "$ORACLE" compare "$WORK/g.safetensors" "$WORK/w.safetensors" --json
    [ "$RC" -eq 0 ] || fail "tie: exit $RC $(cat "$WORK/out")"
    jq -e '.summary.first_argmax_diff == 4 and .first_argmax.tie and .summary.ties == 1 and .summary.flips == 0' \
      "$WORK/out" >/dev/null || fail "tie: $(jq -c .summary "$WORK/out")"
    python3 "$HERE/plant.py" swap "$WORK/l.safetensors" "$WORK/s.safetensors" 4 || fail plant
    run_capture "$ORACLE" compare "$WORK/s.safetensors" -m "$REF" --json
    [ "$RC" -eq 1 ] || fail "swap: exit $RC"
    jq -e '.summary.first_failure == 4 and (.first_argmax.tie | not) and .summary.flips == 1' "$WORK/out" >/dev/null ||
      fail "swap: $(jq -c .summary "$WORK/out")"
    ;;
  compare_trace)  # trace vs reference: bit-identical; a change in blk.1.ffn_up at pos 3 is named with its layer
    dump
    run_capture "$ORACLE" compare --trace "$WORK/t.safetensors" -m "$REF" --json
    [ "$RC" -eq 0 ] && jq -e '.bit_exact and .tensors_compared > 900' "$WORK/out" >/dev/null || fail "self: $RC $(cat "$WORK/out")"
    python3 "$HERE/plant.py" trace "$WORK/t.safetensors" "$WORK/t2.safetensors" blk.1.ffn_up 3 || fail plant
    run_capture "$ORACLE" compare --trace "$WORK/t2.safetensors" "$WORK/t.safetensors" --json
    [ "$RC" -eq 1 ] || fail "planted: exit $RC"
    jq -e '.first_divergent.op == "blk.1.ffn_up" and .first_divergent.layer == 1 and .first_divergent.pos == 3 and
           .first_divergent.element == 2' "$WORK/out" >/dev/null || fail "planted: $(cat "$WORK/out")"
    ;;
  kld_write)  # our base file: llama.cpp's header and token list byte for byte, same size (same record layout)
    run_capture "$ORACLE" certify --write-kld-base "$WORK/ours.kld" --reference "$REF" --corpus "$CORPUS" \
      --protocol llamacpp --ctx 128 --threads 2
    [ "$RC" -eq 0 ] || fail "exit $RC $(cat "$WORK/err")"
    [ "$(stat -c %s "$WORK/ours.kld")" -eq "$(stat -c %s "$BASE")" ] || fail "size differs"
    cmp -n $((20 + 109 * 128 * 4)) "$WORK/ours.kld" "$BASE" || fail "header or token list differ"
    ;;
  kld_reference)  # Q4_0 scored against llama.cpp's base: llama.cpp's printed statistics within 2 of its standard errors
    need_fixture "$PRINTOUT"
    check_q4_0_against "$BASE"
    ;;
  kld_ggml)  # --candidate-numerics ggml (llama.cpp's CPU arithmetic) against llama.cpp's own printouts of the
             # same files and corpus: within 2 of its standard errors where the canonical candidate is not
    for q in q8_0 q4_0; do
      PRINTOUT="$G/llamacpp_kld_llama2xs-${q}_on_llama2xs-samples.txt"
      need_fixture "$PRINTOUT"
      check_ggml_within "$q" "$REF" "$G/llama2xs-$q.gguf"
    done
    # The canonical Q8_0 candidate (weights only) is far outside llama.cpp's figure: the profile is what closes it.
    PRINTOUT="$G/llamacpp_kld_llama2xs-q8_0_on_llama2xs-samples.txt"
    run_capture "$ORACLE" certify --reference "$REF" --candidate "$G/llama2xs-q8_0.gguf" --corpus "$CORPUS" --protocol llamacpp \
      --ctx 128 --threads 2 --greedy-prompts 0 --no-progress --no-png --out "$WORK/canon"
    [ "$RC" -le 1 ] || fail "canonical: exit $RC $(cat "$WORK/err")"
    awk -v o="$(jq .statistics.kld.mean "$WORK/canon/certificate.json")" -v t="$(printed 'Mean    KLD')" \
      -v u="$(printed_unc 'Mean    KLD')" 'BEGIN { d = o - t; if (d < 0) d = -d; exit !(d > 5 * u) }' ||
      fail "canonical Q8_0 unexpectedly within 5 sigma of llama.cpp's"
    ;;
  kld_written_peer_fixture)  # llama-perplexity read the file we write (committed printout, no peer needed):
                             # our writer still writes that file byte for byte, and reads it as llama.cpp did
    PRINTOUT="$HERE/data/llamacpp_perplexity_q4_0_vs_oracle_kld.txt"
    "$ORACLE" certify --write-kld-base "$WORK/ours.kld" --reference "$REF" --corpus "$CORPUS" --protocol llamacpp \
      --threads 2 --no-progress >/dev/null || fail write
    want=$(awk '$1 == "kld_sha256" {print $2}' "$PRINTOUT")
    got=$(sha256sum "$WORK/ours.kld" | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "the file we write changed (sha256 $got, llama-perplexity read $want): rerun the peer"
    check_q4_0_against "$WORK/ours.kld"
    ;;
  kld_candidate)  # our own base as the candidate against the reference: only the format's quantization remains
    "$ORACLE" certify --write-kld-base "$WORK/ours.kld" --reference "$REF" --corpus "$CORPUS" --protocol llamacpp \
      --max-chunks 8 >/dev/null || fail write
    # no --protocol: a KLD base file implies llamacpp
    run_capture "$ORACLE" certify --candidate-kld-base "$WORK/ours.kld" --reference "$REF" --corpus "$CORPUS" \
      --max-chunks 8 --no-progress --out "$WORK/cert"
    [ "$RC" -eq 0 ] || fail "exit $RC $(cat "$WORK/out" "$WORK/err")"
    jq -e '.protocol.name == "llamacpp"' "$WORK/cert/certificate.json" >/dev/null || fail "protocol not llamacpp"
    run_capture "$ORACLE" certify --candidate-kld-base "$WORK/ours.kld" --reference "$REF" --protocol full --max-chunks 8
    [ "$RC" -eq 2 ] && grep -q -- "--protocol" "$WORK/err" || fail "--protocol full with a base file: exit $RC $(cat "$WORK/err")"
    # uint16 levels of at most 16/65535 nats: KL of the rounding ~ Var(err)/2 <= (2.4e-4)^2/24 per token, << 1e-7
    jq -e '.statistics.kld.mean < 1e-7 and .statistics.same_top.mean == 1' "$WORK/cert/certificate.json" >/dev/null ||
      fail "$(jq -c '.statistics.kld.mean, .statistics.same_top' "$WORK/cert/certificate.json")"
    run_capture "$ORACLE" certify --candidate-kld-base "$WORK/ours.kld" --reference "$REF" --protocol llamacpp --ctx 64
    [ "$RC" -eq 2 ] && grep -q n_ctx "$WORK/err" || fail "--ctx 64: exit $RC $(cat "$WORK/err")"
    ;;
  reference_cache)  # written once, reused for a second candidate; the same certificate as scoring against the file
    args=(--reference "$REF" --corpus "$CORPUS" --protocol llamacpp --greedy-prompts 2 --no-progress)
    run_capture "$ORACLE" certify "${args[@]}" --max-chunks 6 --candidate "$G/llama2xs-q8_0.gguf" --reference-cache "$WORK/c.kld" --out "$WORK/a"
    [ "$RC" -eq 0 ] && grep -q "wrote reference cache" "$WORK/out" || fail "first: $RC $(cat "$WORK/out" "$WORK/err")"
    run_capture "$ORACLE" certify "${args[@]}" --max-chunks 6 --candidate "$G/llama2xs-q4_0.gguf" --reference-cache "$WORK/c.kld" --out "$WORK/b"
    [ "$RC" -eq 0 ] && grep -q "reused reference cache" "$WORK/out" || fail "second: $RC $(cat "$WORK/out" "$WORK/err")"
    "$ORACLE" certify --reference-kld-base "$WORK/c.kld" --candidate "$G/llama2xs-q4_0.gguf" --protocol llamacpp \
      --no-progress --out "$WORK/c" >/dev/null || fail "reference-kld-base"
    [ "$(jq -c .statistics "$WORK/b/certificate.json")" = "$(jq -c .statistics "$WORK/c/certificate.json")" ] ||
      fail "cache certificate differs from scoring against the file"
    jq -e '.greedy.prompts == 2' "$WORK/b/certificate.json" >/dev/null || fail "greedy not computed with the cache"
    run_capture "$ORACLE" certify "${args[@]}" --max-chunks 5 --candidate "$G/llama2xs-q4_0.gguf" --reference-cache "$WORK/c.kld"
    [ "$RC" -eq 2 ] && grep -q "n_chunk" "$WORK/err" || fail "stale cache: exit $RC $(cat "$WORK/err")"
    run_capture "$ORACLE" certify --reference "$G/stories260K.gguf" --corpus "$CORPUS" --protocol llamacpp --max-chunks 6 \
      --candidate "$G/stories260K.gguf" --reference-cache "$WORK/c.kld"
    [ "$RC" -eq 2 ] || fail "cache of another model accepted: exit $RC"
    ;;
  peer_perplexity)  # llama-perplexity accepts our file (needs the peer; skipped with exit 77 otherwise)
    P=$(peer_bin || true)
    if [ -z "$P" ]; then echo "SKIP: no llama-perplexity (set ORACLE_PEER_BIN or PEER_DIR; scripts/build_peer.sh)"; exit 77; fi
    "$ORACLE" certify --write-kld-base "$WORK/ours.kld" --reference "$REF" --corpus "$CORPUS" --protocol llamacpp \
      >/dev/null || fail write
    "$P" -m "$REF" -c 128 -b 128 -t 2 --kl-divergence-base "$WORK/ours.kld" --kl-divergence >"$WORK/ppl.txt" 2>&1 ||
      fail "llama-perplexity rejected our file: $(tail -5 "$WORK/ppl.txt")"
    grep -q "Mean    KLD" "$WORK/ppl.txt" || fail "no statistics: $(tail -5 "$WORK/ppl.txt")"
    # The same model against its own base file: the verdict may be FAIL (exit 1) at the default
    # thresholds, since the file's levels are clamped 16 nats below the maximum and rounded to
    # range/65535 (docs/interop.md); what must hold is that both tools read the file alike.
    run_capture "$ORACLE" certify --reference-kld-base "$WORK/ours.kld" --candidate "$REF" --protocol llamacpp \
      --no-progress --out "$WORK/c"
    [ "$RC" -le 1 ] && [ -s "$WORK/c/certificate.json" ] || fail "certify exit $RC: $(tail -3 "$WORK/out")"
    ours=$(jq .statistics.perplexity.reference.mean "$WORK/c/certificate.json")
    theirs=$(grep -F "Mean PPL(base)" "$WORK/ppl.txt" | sed 's/.*: *//' | awk '{print $1}')
    awk -v o="$ours" -v t="$theirs" 'BEGIN { d = o - t; if (d < 0) d = -d; exit !(d <= 5e-7) }' ||
      fail "llama.cpp read PPL(base) $theirs from our file, we read $ours"
    ;;
  peer_ggml)  # llama.cpp's own logits of the quantized files (its base file of Q, written by the peer): the
              # ggml-profile candidate at least 10x closer to them than the canonical one (docs/certify.md)
    P=$(peer_bin || true)
    if [ -z "$P" ]; then echo "SKIP: no llama-perplexity (set ORACLE_PEER_BIN or PEER_DIR; scripts/build_peer.sh)"; exit 77; fi
    export LD_LIBRARY_PATH="$(dirname "$P")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    for q in q8_0 q4_0; do
      "$P" -m "$G/llama2xs-$q.gguf" -f "$CORPUS" -c 128 -b 128 -t 2 --kl-divergence-base "$WORK/$q.kld" >"$WORK/$q.txt" 2>&1 ||
        fail "llama-perplexity: $(tail -3 "$WORK/$q.txt")"
      want=$(awk '$1 == "kld_sha256" {print $2}' "$HERE/data/llamacpp_0c1e570_llama2xs-${q}_base.txt")
      [ "$(sha256sum "$WORK/$q.kld" | cut -d' ' -f1)" = "$want" ] || echo "note: $q base differs from the committed run's"
      for n in canonical ggml; do
        run_capture "$ORACLE" certify --reference-kld-base "$WORK/$q.kld" --candidate "$G/llama2xs-$q.gguf" --threads 2 \
          --candidate-numerics $n --no-progress --no-png --out "$WORK/$q-$n"
        [ "$RC" -le 1 ] || fail "certify $q $n: exit $RC $(cat "$WORK/err")"
      done
      c=$(jq .statistics.kld.mean "$WORK/$q-canonical/certificate.json") g=$(jq .statistics.kld.mean "$WORK/$q-ggml/certificate.json")
      awk -v c="$c" -v g="$g" 'BEGIN { exit !(g * 10 <= c) }' || fail "$q: ggml $g is not 10x below canonical $c"
      echo "ok: $q against llama.cpp's own logits: canonical $c, ggml $g"
    done
    ;;
  smollm2_files)  # CTest fixture of smollm2_kld_ggml (label smollm2): the F32 export of ../shared's SmolLM2 Q4_1 and
                  # its Q8_0 / Q4_K_M, written into $ORACLE_SMOLLM2_DIR (build tree); the bytes llama.cpp was run on
    D=${ORACLE_SMOLLM2_DIR:?set ORACLE_SMOLLM2_DIR}
    need_fixture "$SMOL_Q4_1"
    mkdir -p "$D"
    "$ORACLE" quantize "$SMOL_Q4_1" "$D/f32.gguf" --type F32 --allow-requantize --threads 2 >/dev/null || fail "F32 export"
    for t in Q8_0 Q4_K_M; do
      q=$(echo "$t" | tr A-Z a-z)
      "$ORACLE" quantize "$D/f32.gguf" "$D/$q.gguf" --type "$t" --threads 2 >/dev/null || fail "quantize $t"
      for f in f32 "$q"; do  # llama-perplexity's printout records the SHA-256 of the files it read
        want=$(awk -v k="${f}_sha256" '$2 == k {print $3}' "$HERE/data/llamacpp_0c1e570_smollm2-${q}_kld_c128.txt")
        [ "$(sha256sum "$D/$f.gguf" | cut -d' ' -f1)" = "$want" ] || fail "$f.gguf is not the file llama.cpp read"
      done
    done
    ;;
  smollm2_kld_ggml)  # SmolLM2 Q8_0 and Q4_K_M (made from the F32 export), ctx 128: the ggml profile within 2 of
                     # llama.cpp's standard errors of its own run of the same files (committed printouts, data/)
    D=${ORACLE_SMOLLM2_DIR:?set ORACLE_SMOLLM2_DIR}
    for q in q8_0 q4_k_m; do
      PRINTOUT="$HERE/data/llamacpp_0c1e570_smollm2-${q}_kld_c128.txt"
      need_fixture "$D/$q.gguf"
      check_ggml_within "smollm2-$q" "$D/f32.gguf" "$D/$q.gguf"
    done
    ;;
  replay_llamacpp)  # repeat_penalty 1.5 greedy run: PLAUSIBLE; the same tokens claimed without penalty: DIVERGED at
                    # the first token that is not the raw argmax; dry on / unknown field: ERROR naming it
    F="$HERE/data/llamacpp_server.jsonl"
    first=$(sed -n 2p "$F" | jq '[.response.completion_probabilities | to_entries[] | select(.value.id != .value.top_logprobs[0].id) | .key][0]')
    run_capture "$ORACLE" replay "$F" -m "$REF" --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    jq -e --argjson k "$first" '.summary.records == 4 and .records[0].status == "MATCH" and
           .records[0].mode == "llamacpp-server" and .records[1].status == "DIVERGED" and .records[1].diverged_at == $k and
           .records[1].findings[0].verdict == "impossible" and .records[2].status == "ERROR" and
           (.records[2].error | test("generation_settings.dry_multiplier")) and .records[3].status == "ERROR" and
           (.records[3].error | test("smoothing_factor"))' "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/out")"
    grep -q "DIVERGED at token $first: .* impossible" "$WORK/out" || fail "headline: $(cat "$WORK/out")"
    ;;
  replay_openai)  # n = 2 choices MATCH; a top_logprobs entry off by 0.05 nats: DIVERGED there; chat on a model
                  # without a chat template (llama2xs) and no prompt ids: ERROR naming tokenizer.chat_template
    run_capture "$ORACLE" replay "$HERE/data/openai.jsonl" -m "$REF" --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    jq -e '.records[0].status == "MATCH" and .records[0].n_choices == 2 and .records[0].n_tokens == 32 and
           .records[1].status == "DIVERGED" and ([.records[1].findings[] | select(.verdict == "logprob_mismatch")][0] |
           .choice == 1 and .index == 4 and .reason == "top_logprobs") and .records[2].status == "ERROR" and
           (.records[2].error | test("tokenizer.chat_template"))' "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/out")"
    grep -q "DIVERGED at choice 1 token 4: .*logprob_mismatch \[top_logprobs\]" "$WORK/out" || fail "headline: $(cat "$WORK/out")"
    ;;
  replay_vllm)  # token_id:N tokens, prompt ids, repetition_penalty: MATCH (completions and chat); frequency_penalty: ERROR
    run_capture "$ORACLE" replay "$HERE/data/vllm.jsonl" -m "$REF" --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    jq -e '.records[0].status == "MATCH" and .records[0].mode == "vllm-completions" and
           .records[1].status == "MATCH" and .records[1].mode == "vllm-chat" and .records[2].status == "ERROR" and
           (.records[2].error | test("request.frequency_penalty"))' "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/out")"
    ;;
  replay_mixed)  # three checkpoints in one log, one unknown model: records in == records reported
    run_capture "$ORACLE" replay "$HERE/data/mixed_models.jsonl" --models "$G" --jobs 2 --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC $(cat "$WORK/err")"
    jq -e '.summary.records == 4 and .summary.match == 3 and .summary.unknown_model == 1 and
           (.records[0].model | endswith("llama2xs.gguf")) and (.records[1].model | endswith("llama2xs-q8_0.gguf")) and
           (.records[2].model | endswith("stories260K.gguf")) and (.records[3].error | test("gpt-4o-mini"))' \
      "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/out")"
    grep -q "records: 4 in, 4 reported" "$WORK/out" || fail "$(cat "$WORK/out")"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
