#!/usr/bin/env bash
# oracle run --log and oracle replay on stories260K: MATCH, a tampered token,
# a garbled line, a model hash mismatch, --jobs.
# Usage: cli_replay.sh ORACLE SHARED CASE
source "$(dirname "$0")/lib.sh"
CASE=$3
M="$MODELS/stories260K/stories260K.bin"
need_fixture "$M"
log_three() {  # three generations with different settings into $WORK/log.jsonl
  "$ORACLE" run -m "$M" -p "Once upon a time" -n 12 --temperature 0 --log "$WORK/log.jsonl" >/dev/null
  "$ORACLE" run -m "$M" -p "Ça va? 🌟" -n 12 --temperature 0.9 --top-k 20 --top-p 0.9 --seed 7 \
    --log "$WORK/log.jsonl" >/dev/null
  "$ORACLE" run -m "$M" -p "The dog" -n 12 --preset hf --temperature 1.1 --min-p 0.1 --seed 9 --stop "." \
    --log "$WORK/log.jsonl" >/dev/null
}

case $CASE in
  emu_match)  # logged on cuda-emu, replayed on the reference and on cuda-emu: MATCH; a tampered token diverges
    "$ORACLE" run -m "$M" -p "Ça va? 🌟" -n 12 --temperature 0.9 --top-k 20 --top-p 0.9 --seed 7 --backend cuda-emu \
      --log "$WORK/log.jsonl" >/dev/null || fail "cuda-emu run --log"
    "$ORACLE" run -m "$M" -p "The dog" -n 12 --preset hf --temperature 1.1 --min-p 0.1 --seed 9 --stop "." \
      --repeat-penalty 1.2 --backend cuda-emu --log "$WORK/log.jsonl" >/dev/null || fail "cuda-emu run --log"
    for backend in reference cuda-emu; do
      run_capture "$ORACLE" replay "$WORK/log.jsonl" --mode own --backend $backend --report "$WORK/r.json"
      [ "$RC" -eq 0 ] || fail "$backend: exit $RC: $(cat "$WORK/out" "$WORK/err")"
      jq -e '.summary.records == 2 and .summary.match == 2' "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/r.json")"
    done
    jq -c 'if (.prompt | startswith("Ça")) then
             (.output_ids[3] = .steps[3].logprobs.processed.top[1].id)
             | (.steps[3].token = .output_ids[3]) | (.steps[3].logprobs.token = .output_ids[3])
           else . end' "$WORK/log.jsonl" >"$WORK/t.jsonl"
    run_capture "$ORACLE" replay "$WORK/t.jsonl" --mode own --backend cuda-emu --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "tampered: exit $RC"
    jq -e '.records[0].status == "DIVERGED" and .records[0].diverged_at == 3 and .records[1].status == "MATCH"' \
      "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/out")"
    echo "ok" ;;
  emu_refuses)  # a device replay needs --mode own (foreign records are teacher-forced on the reference)
    "$ORACLE" run -m "$M" -p "The dog" -n 4 --log "$WORK/log.jsonl" >/dev/null
    expect_input_error "auto" "--mode" -- "$ORACLE" replay "$WORK/log.jsonl" --backend cuda-emu ;;
  match)  # every logged generation replays as MATCH, exit 0, JSON report counts them
    log_three
    [ "$(wc -l <"$WORK/log.jsonl")" -eq 3 ] || fail "expected 3 log lines"
    jq -e '.schema == "oracle-replay-log" and .version == 1' "$WORK/log.jsonl" >/dev/null || fail "schema"
    run_capture "$ORACLE" replay "$WORK/log.jsonl" --report "$WORK/r.json"
    [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$WORK/out" "$WORK/err")"
    jq -e '.summary.records == 3 and .summary.match == 3' "$WORK/r.json" >/dev/null || fail "$(cat "$WORK/r.json")"
    ;;
  tampered)  # token 3 of line 2 changed: exit 1, diverged at 3
    log_three
    jq -c 'if .seq_id == 0 and (.prompt | startswith("Ça")) then
             (.output_ids[3] = .steps[3].logprobs.processed.top[1].id)
             | (.steps[3].token = .output_ids[3]) | (.steps[3].logprobs.token = .output_ids[3])
           else . end' "$WORK/log.jsonl" >"$WORK/t.jsonl"
    run_capture "$ORACLE" replay "$WORK/t.jsonl" --report "$WORK/r.json"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    jq -e '.records[1].status == "DIVERGED" and .records[1].diverged_at == 3 and
           .records[0].status == "MATCH" and .records[2].status == "MATCH"' "$WORK/r.json" >/dev/null ||
      fail "$(cat "$WORK/out")"
    ;;
  garbled)  # a truncated line is reported with its line number, the others replayed
    log_three
    { head -n 1 "$WORK/log.jsonl"; head -n 2 "$WORK/log.jsonl" | tail -n 1 | cut -c 1-200; tail -n 1 "$WORK/log.jsonl"; } >"$WORK/g.jsonl"
    run_capture "$ORACLE" replay "$WORK/g.jsonl"
    [ "$RC" -eq 1 ] || fail "exit $RC"
    grep -q "g.jsonl:2: json:" "$WORK/out" || fail "no line number: $(cat "$WORK/out")"
    grep -q "records: 3 in, 3 reported, 1 failed" "$WORK/out" || fail "$(cat "$WORK/out")"
    ;;
  model_mismatch)  # --model with another hash: exit 2, one line naming model.sha256
    log_three
    "$ORACLE" synth --preset tiny -o "$WORK/tiny.gguf" >/dev/null
    run_capture "$ORACLE" replay "$WORK/log.jsonl" --model "$WORK/tiny.gguf"
    [ "$RC" -eq 2 ] || fail "exit $RC"
    grep -q "log.jsonl:1: model.sha256:" "$WORK/err" || fail "$(cat "$WORK/err")"
    ;;
  jobs_identical)  # --jobs 2 prints the same table and report as --jobs 1
    log_three
    "$ORACLE" replay "$WORK/log.jsonl" --jobs 1 --report "$WORK/a.json" >"$WORK/a.txt"
    "$ORACLE" replay "$WORK/log.jsonl" --jobs 2 --report "$WORK/b.json" >"$WORK/b.txt"
    cmp "$WORK/a.txt" "$WORK/b.txt" && cmp "$WORK/a.json" "$WORK/b.json" || fail "jobs change the output"
    ;;
  *) fail "unknown case $CASE" ;;
esac
