#!/usr/bin/env bash
# Real llama-server logs (audit/tests/data/server_logs, written by
# scripts/capture_server_logs.sh) through `oracle replay` (docs/replay.md
# "Real server logs"). Usage: cli_server_logs.sh ORACLE SHARED CASE
source "$(dirname "$0")/../../tools/tests/lib.sh"
CASE=$3
HERE=$(cd "$(dirname "$0")" && pwd)
D="$HERE/data/server_logs"
CAL="$D/calibration.json"
SMOL="$MODELS/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
XS="$MODELS/gguf/llama2xs-q8_0.gguf"
need_fixture "$SMOL"
need_fixture "$XS"
model_of() { [ "$1" = smollm2 ] && echo "$SMOL" || echo "$XS"; }
bound_of() { jq -r --arg m "$(basename "$(model_of "$1")")" '.entries[] | select(.model == $m and .numerics == "canonical") | .bound' "$CAL"; }

# replay_ok LOG MODEL: every record MATCH or PLAUSIBLE (exit 0), report in $WORK/r.json
replay_ok() {
  run_capture "$ORACLE" replay "$1" -m "$2" --calibration "${3:-$CAL}" --jobs 2 -q --report "$WORK/r.json"
  [ "$RC" -eq 0 ] || fail "exit $RC on $1: $(cat "$WORK/out" "$WORK/err")"
  jq -e '[.records[] | select(.status != "MATCH" and .status != "PLAUSIBLE")] | length == 0' "$WORK/r.json" >/dev/null ||
    fail "$(cat "$WORK/out")"
}

# planted KIND KEY: the planted token of a tampered copy is the DIVERGED record's headline
planted() {
  python3 "$HERE/plant_server_logs.py" "$1" "$D/$2.jsonl" "$(bound_of "$2")" "$WORK/t.jsonl" "$WORK/want.json" ||
    fail "plant $1"
  run_capture "$ORACLE" replay "$WORK/t.jsonl" -m "$(model_of "$2")" --calibration "$CAL" -q --report "$WORK/r.json"
  [ "$RC" -eq 1 ] || fail "exit $RC: $(cat "$WORK/out" "$WORK/err")"
  jq -e --slurpfile w "$WORK/want.json" '.records[0] as $r | $w[0] as $w | $r.status == "DIVERGED" and
         $r.diverged_at == $w.index and ([$r.findings[] | select(.verdict == "impossible" or .verdict == "logprob_mismatch")][0] |
         .index == $w.index and .verdict == $w.verdict and (.reason | test($w.reason)))' "$WORK/r.json" >/dev/null ||
    fail "want $(cat "$WORK/want.json"): $(cat "$WORK/out")"
  grep -q "DIVERGED at token $(jq .index "$WORK/want.json"): .* $(jq -r .verdict "$WORK/want.json")" "$WORK/out" ||
    fail "headline: $(cat "$WORK/out")"
  echo "ok: $1 on $2: $(grep -o 'DIVERGED at token [0-9]*: [^;]*' "$WORK/out")"
}

case "$CASE" in
  real)  # every captured record of both models: MATCH or PLAUSIBLE, all shapes present
    total=0
    for key in smollm2 llama2xs; do
      replay_ok "$D/$key.jsonl" "$(model_of "$key")"
      cp "$WORK/r.json" "$WORK/$key.json"
      total=$((total + $(jq '.summary.records' "$WORK/r.json")))
      head -1 "$WORK/out" | grep -qF "numerics: canonical; profile bound 0.001 nats (MATCH); engine bound (PLAUSIBLE): $(printf '%.4g' "$(bound_of "$key")") nats (calibration" ||
        fail "header: $(head -1 "$WORK/out")"
    done
    [ "$total" -ge 20 ] || fail "only $total records"
    jq -s -e '[.[].records[]] as $r | ($r | map(.mode) | unique) == ["llamacpp-chat", "llamacpp-completions", "llamacpp-server"] and
              ([$r[] | select(.stream_chunks > 0) | .mode] | unique | length) == 3' "$WORK/smollm2.json" "$WORK/llama2xs.json" >/dev/null ||
      fail "shapes: $(jq -c '[.records[] | {mode, stream_chunks}]' "$WORK/smollm2.json")"
    ;;
  chat_prompt)  # chat records: the rendered prompt has as many tokens as the server evaluated (usage.prompt_tokens)
    replay_ok "$D/smollm2.jsonl" "$SMOL"
    n=0
    while read -r line; do
      want=$(sed -n "${line}p" "$D/smollm2.jsonl" | jq '.response | objects | .usage.prompt_tokens')
      [ -n "$want" ] || continue  # a stream: its chunks carry no usage
      got=$(jq --argjson l "$line" '.records[] | select(.line == $l) | .prompt_ids | length' "$WORK/r.json")
      [ "$want" = "$got" ] || fail "line $line: server evaluated $want prompt tokens, rendered $got"
      n=$((n + 1))
    done < <(jq '.records[] | select(.mode == "llamacpp-chat") | .line' "$WORK/r.json")
    [ "$n" -ge 2 ] || fail "only $n chat records with usage"
    jq -e '[.records[] | select(.mode == "llamacpp-chat") | .prompt_from == "chat template jinja"] | all' "$WORK/r.json" >/dev/null ||
      fail "prompt_from"
    grep -q "prompt: chat template jinja, ids \[1," "$WORK/out" || fail "ids not in the table: $(cat "$WORK/out")"
    ;;
  plant_logprob) planted logprob smollm2; planted logprob llama2xs ;;
  plant_token) planted token smollm2 ;;  # llama2xs: no logged top-5 list ends 4 x its 3-nat bound below the pick
  plant_sampler) planted sampler smollm2; planted sampler llama2xs ;;
  no_template)  # chat on llama2xs (no tokenizer.chat_template; the server fell back to its own): ERROR naming it
    run_capture "$ORACLE" replay "$D/llama2xs_chat.jsonl" -m "$XS" --calibration "$CAL" -q --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    jq -e '.records[0].status == "ERROR" and (.records[0].error | test("tokenizer.chat_template"))' "$WORK/r.json" >/dev/null ||
      fail "$(cat "$WORK/out")"
    ;;
  calibration)  # the committed bounds are what --calibrate measures on the committed calibration logs
    for key in smollm2 llama2xs; do
      run_capture "$ORACLE" replay "$D/calibration_$key.jsonl" -m "$(model_of "$key")" --calibrate "$WORK/c.json" -q
      [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/err")"
    done
    jq -e --slurpfile c "$CAL" '[.entries[] | {model, model_sha256, numerics, log_sha256, values, max_abs_diff, bound}] ==
           [$c[0].entries[] | {model, model_sha256, numerics, log_sha256, values, max_abs_diff, bound}]' "$WORK/c.json" >/dev/null ||
      fail "$(cat "$WORK/c.json")"
    ;;
  bad_inputs)  # unknown shapes and calibration gaps name their field
    printf '%s\n' '{"request": {"prompt": "a"}, "response": {"object": "embedding", "data": []}}' \
      '{"request": {"prompt": "a", "stream": true}, "response": "data: {\"foo\": 1}\n\ndata: [DONE]\n\n"}' \
      '{"request": {"prompt": "a", "stream": true}, "response": "data: {not json\n\n"}' >"$WORK/bad.jsonl"
    run_capture "$ORACLE" replay "$WORK/bad.jsonl" -m "$XS" -q --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    jq -e '(.records[0].error | test(":1: response.object:")) and (.records[1].error | test(":2: response.sse\\[0\\]:")) and
           (.records[2].error | test(":3: response.sse\\[0\\]:"))' "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/out")"
    jq '.entries |= map(select(.model != "llama2xs-q8_0.gguf"))' "$CAL" >"$WORK/cal.json"
    expect_input_error "$WORK/cal.json" calibration -- "$ORACLE" replay "$D/llama2xs.jsonl" -m "$XS" --calibration "$WORK/cal.json" -q
    ;;
  numerics)  # --numerics ggml: refused (exit 2, naming numerics) while forward() lacks the profile; never a silent fallback
    run_capture "$ORACLE" replay "$D/llama2xs.jsonl" -m "$XS" --numerics ggml -q
    if [ "$RC" -eq 2 ]; then
      grep -q "numerics" "$WORK/err" || fail "$(cat "$WORK/err")"
    else  # a build with the ggml profile (issue 27): the header says so
      head -1 "$WORK/out" | grep -q "^numerics: ggml;" || fail "exit $RC: $(head -3 "$WORK/out")"
    fi
    ;;
  peer)  # re-capture with the peer's llama-server (skipped without it) and replay the fresh logs
    [ -x "${PEER_DIR:-/nonexistent}/bin/llama-server" ] || { echo "skip: no PEER_DIR/bin/llama-server"; exit 77; }
    OUT="$WORK/cap" SHARED="$SHARED" bash "$HERE/../../scripts/capture_server_logs.sh" || fail "capture"
    for key in smollm2 llama2xs; do replay_ok "$WORK/cap/$key.jsonl" "$(model_of "$key")"; done
    for key in smollm2 llama2xs; do
      "$ORACLE" replay "$WORK/cap/calibration_$key.jsonl" -m "$(model_of "$key")" --calibrate "$WORK/cap/cal.json" -q >/dev/null ||
        fail "calibrate"
    done
    for key in smollm2 llama2xs; do replay_ok "$WORK/cap/$key.jsonl" "$(model_of "$key")" "$WORK/cap/cal.json"; done
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
