#!/usr/bin/env bash
# Sharded audit jobs and tensor parallelism (docs/scale.md): the report of
# replay, certify and golden verify is byte-identical (cmp) under mpirun with
# 1, 2 and 3 ranks and with --shard I/N + oracle merge; golden verify --tp
# N = 1..4 matches the transcripts (per-step logits hashes) under mpirun and
# as in-process ranks. Cases needing mpirun exit 77 (skipped) when the binary
# was built without MPI or mpirun is missing.
# Usage: cli_mpi.sh ORACLE SHARED CASE SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CASE=$3
SRC=${4:-$(dirname "$0")/../..}
M="$MODELS/stories260K/stories260K.bin"
need_fixture "$M"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -x ORACLE_SHARED_DIR)
need_mpi() {
  command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }
  "$ORACLE" version --json | jq -e '.mpi == true' >/dev/null || { echo "skip: built without MPI"; exit 77; }
}
export ORACLE_SHARED_DIR=$SHARED

log_five() {  # five generations (one tampered, so the report has findings) into $WORK/log.jsonl
  for p in "Once upon a time" "The dog" "A cat sat" "Lily and Ben" "One day"; do
    "$ORACLE" run -m "$M" -p "$p" -n 10 --temperature 0.8 --top-k 30 --seed 5 --log "$WORK/log.jsonl" >/dev/null
  done
  jq -c 'if (.prompt == "The dog") then (.output_ids[2] = .steps[2].logprobs.processed.top[1].id)
           | (.steps[2].token = .output_ids[2]) | (.steps[2].logprobs.token = .output_ids[2]) else . end' \
    "$WORK/log.jsonl" >"$WORK/t.jsonl" && mv "$WORK/t.jsonl" "$WORK/log.jsonl"
}

# shard_and_merge N OUT -- CMD...: CMD --shard I/N --part for I in 0..N-1 (in reverse), then merge;
# the merged stdout in OUT.out, the exit code in OUT.rc.
shard_and_merge() {
  local n=$1 out=$2 i parts=()
  shift 3
  for ((i = n - 1; i >= 0; i--)); do
    "$@" --shard "$i/$n" --part "$WORK/part$i.json" >/dev/null 2>"$WORK/shard.err" ||
      fail "shard $i/$n: $(cat "$WORK/shard.err")"
    parts+=("$WORK/part$i.json")
  done
  set +e
  "$ORACLE" merge "${parts[@]}" >"$out.out" 2>"$out.err"
  echo $? >"$out.rc"
  set -e
}

same() {  # same FILE_A FILE_B what
  cmp "$1" "$2" || fail "$3: $1 and $2 differ: $(diff "$1" "$2" | head -5)"
}

case $CASE in
  replay_shards)  # --shard + merge: report file, JSON stdout and table stdout identical to one process
    log_five
    set +e; "$ORACLE" replay "$WORK/log.jsonl" --report "$WORK/one.json" -q >"$WORK/one.txt"; rc=$?; set -e
    [ "$rc" -eq 1 ] || fail "one process: exit $rc (want 1: a tampered record)"
    jq -e '.summary.records == 5 and .summary.diverged == 1' "$WORK/one.json" >/dev/null || fail "$(cat "$WORK/one.json")"
    for n in 1 2 3 7; do
      shard_and_merge $n "$WORK/m$n" -- "$ORACLE" replay "$WORK/log.jsonl" --report "$WORK/m$n.json" -q
      [ "$(cat "$WORK/m$n.rc")" -eq 1 ] || fail "merge of $n: exit $(cat "$WORK/m$n.rc") $(cat "$WORK/m$n.err")"
      same "$WORK/one.json" "$WORK/m$n.json" "replay report, $n shards"
      same "$WORK/one.txt" "$WORK/m$n.out" "replay table, $n shards"
    done
    "$ORACLE" replay "$WORK/log.jsonl" --json -q >"$WORK/onej.txt" || true
    shard_and_merge 2 "$WORK/j2" -- "$ORACLE" replay "$WORK/log.jsonl" --json -q
    same "$WORK/onej.txt" "$WORK/j2.out" "replay --json stdout, 2 shards"
    ;;
  replay_mpi)  # mpirun -np 1, 2, 3: the same report bytes as one process
    need_mpi
    log_five
    "$ORACLE" replay "$WORK/log.jsonl" --report "$WORK/one.json" -q >"$WORK/one.txt" || true
    for n in 1 2 3; do
      set +e; "${MPIRUN[@]}" -np $n "$ORACLE" replay "$WORK/log.jsonl" --report "$WORK/p$n.json" -q >"$WORK/p$n.txt"
      rc=$?; set -e
      [ "$rc" -eq 1 ] || fail "mpirun -np $n: exit $rc (want 1)"
      same "$WORK/one.json" "$WORK/p$n.json" "replay report, $n ranks"
      same "$WORK/one.txt" "$WORK/p$n.txt" "replay table, $n ranks"
    done
    ;;
  certify_shards|certify_mpi)  # certificate.json/.md/.svg identical across 1 process, shards and ranks
    C="$SHARED/models/gguf/stories260K.gguf"
    need_fixture "$C"
    need_fixture "$SHARED/corpus/stories260K-samples.txt"
    # A Q4_0 candidate: its top-1 differs from the reference's at some positions and its greedy
    # runs diverge, so every field of a part's token records shows in the certificate.
    Q="$WORK/q4_0.gguf"
    "$ORACLE" quantize "$C" "$Q" --type Q4_0 >/dev/null
    head -c 6000 "$SHARED/corpus/stories260K-samples.txt" >"$WORK/corpus.txt"
    args=(certify --reference "$C" --candidate "$Q" --corpus "$WORK/corpus.txt" --ctx 64 --greedy-prompts 5
          --greedy-steps 8 --no-png -q)
    set +e; "$ORACLE" "${args[@]}" --out "$WORK/one" >"$WORK/one.txt"; rc1=$?; set -e
    [ -s "$WORK/one/certificate.json" ] || fail "no certificate: $(cat "$WORK/one.txt")"
    jq -e '.statistics.same_top.mean < 1 and .statistics.same_top.mean > 0.5 and .greedy.fraction_identical < 1' \
      "$WORK/one/certificate.json" >/dev/null || fail "Q4_0 should differ in top-1 somewhere: $(cat "$WORK/one.txt")"
    sed -i "s|$WORK/one|OUT|g" "$WORK/one.txt"
    if [ "$CASE" = certify_shards ]; then runs="s2 s3"; else need_mpi; runs="p1 p2 p3"; fi
    for r in $runs; do
      n=${r:1}
      if [ "${r:0:1}" = s ]; then
        shard_and_merge "$n" "$WORK/$r" -- "$ORACLE" "${args[@]}" --out "$WORK/$r"
        cp "$WORK/$r.out" "$WORK/$r.txt"; rc=$(cat "$WORK/$r.rc")
      else
        set +e; "${MPIRUN[@]}" -np "$n" "$ORACLE" "${args[@]}" --out "$WORK/$r" >"$WORK/$r.txt"; rc=$?; set -e
      fi
      [ "$rc" -eq "$rc1" ] || fail "$r: exit $rc, one process $rc1"
      for f in certificate.json certificate.md certificate.svg; do same "$WORK/one/$f" "$WORK/$r/$f" "$r $f"; done
      sed -i "s|$WORK/$r|OUT|g" "$WORK/$r.txt"
      same "$WORK/one.txt" "$WORK/$r.txt" "$r summary"
    done
    ;;
  golden_shards|golden_mpi)  # golden verify --json over the committed transcripts (no SmolLM2: label smollm2)
    mkdir "$WORK/g"
    for f in stories260K.jsonl stories260K.gguf.jsonl aidreams260K.jsonl llama2xs-q8_0.gguf.jsonl; do
      cp "$SRC/golden/$f" "$WORK/g/"
    done
    "$ORACLE" golden verify "$WORK/g" --json -q --shared-dir "$SHARED" >"$WORK/one.json" || fail "one process: $(cat "$WORK/one.json")"
    jq -e '.pass and .records > 10' "$WORK/one.json" >/dev/null || fail "$(cat "$WORK/one.json")"
    # compact, on one line, as every command's --json object (what the merge must reproduce too)
    [ "$(jq -c . "$WORK/one.json")" = "$(cat "$WORK/one.json")" ] || fail "not compact: $(head -c 300 "$WORK/one.json")"
    if [ "$CASE" = golden_shards ]; then
      for n in 2 3; do
        shard_and_merge $n "$WORK/m$n" -- "$ORACLE" golden verify "$WORK/g" --json -q --shared-dir "$SHARED"
        [ "$(cat "$WORK/m$n.rc")" -eq 0 ] || fail "merge: $(cat "$WORK/m$n.err")"
        same "$WORK/one.json" "$WORK/m$n.out" "golden verify --json, $n shards"
      done
      # The text summary, merged: the counts stated from the transcripts (jq), not from our output.
      records=$(cat "$WORK"/g/*.jsonl | wc -l)
      shard_and_merge 2 "$WORK/t2" -- "$ORACLE" golden verify "$WORK/g" -q --shared-dir "$SHARED" --threads 1
      [ "$(cat "$WORK/t2.rc")" -eq 0 ] || fail "text merge: $(cat "$WORK/t2.err")"
      grep -qx "golden verify: $records records in 4 files match (backend reference, threads 1, prefill chunk 0)" \
        "$WORK/t2.out" || fail "text merge: $(cat "$WORK/t2.out")"
      # Fast mode on cuda-emu (greedy records only, the others skipped) with one greedy record's
      # ids replaced: the MISMATCH count is of the greedy records, one process and merged alike.
      mkdir "$WORK/f"
      jq -c 'if .id == "stories260K/greedy/once" then .output_ids |= map(0) else . end' \
        "$SRC/golden/stories260K.jsonl" >"$WORK/f/t.jsonl"
      greedy=$(jq -s '[.[] | select(.sampler.temperature == 0)] | length' "$WORK/f/t.jsonl")
      sampled=$(jq -s '[.[] | select(.sampler.temperature != 0)] | length' "$WORK/f/t.jsonl")
      fast=("$ORACLE" golden verify "$WORK/f" --backend cuda-emu --mode fast -q --shared-dir "$SHARED")
      set +e; "${fast[@]}" >"$WORK/f1.out"; rc=$?; set -e
      shard_and_merge 3 "$WORK/f3" -- "${fast[@]}"
      for out in "$WORK/f1" "$WORK/f3"; do
        rc_out=$([ "$out" = "$WORK/f1" ] && echo $rc || cat "$out.rc")
        [ "$rc_out" -eq 1 ] || fail "fast, tampered: exit $rc_out: $(cat "$out.out")"
        grep -qx "golden verify: $sampled non-greedy records skipped (fast mode checks greedy records only)" "$out.out" &&
          grep -qx "golden verify: 1 of $greedy records MISMATCH in 1 files (backend cuda-emu)" "$out.out" ||
          fail "fast, tampered ($out): $(cat "$out.out")"
      done
    else
      need_mpi
      for n in 1 2 3; do
        "${MPIRUN[@]}" -np $n "$ORACLE" golden verify "$WORK/g" --json -q --shared-dir "$SHARED" >"$WORK/p$n.json" ||
          fail "mpirun -np $n: $(cat "$WORK/p$n.json")"
        same "$WORK/one.json" "$WORK/p$n.json" "golden verify --json, $n ranks"
      done
    fi
    ;;
  merge_errors)  # bad --shard, a missing part, parts of different jobs: exit 2 naming the culprit
    log_five
    expect_input_error "--shard" "shard" -- "$ORACLE" replay "$WORK/log.jsonl" --shard 3/2 --part "$WORK/p.json"
    expect_input_error "--shard" "shard" -- "$ORACLE" replay "$WORK/log.jsonl" --shard x --part "$WORK/p.json"
    expect_input_error "--part" "part" -- "$ORACLE" replay "$WORK/log.jsonl" --shard 0/2
    "$ORACLE" replay "$WORK/log.jsonl" --shard 0/2 --part "$WORK/a0.json" -q 2>/dev/null
    "$ORACLE" replay "$WORK/log.jsonl" --shard 1/2 --part "$WORK/a1.json" -q 2>/dev/null
    "$ORACLE" replay "$WORK/log.jsonl" --shard 1/2 --part "$WORK/b1.json" --prob-tol 0.5 -q 2>/dev/null
    # The field is matched where the error line names it (FILE: FIELD: message), not anywhere.
    expect_input_error "a0.json" "a0.json: shard: " -- "$ORACLE" merge "$WORK/a0.json"
    expect_input_error "b1.json" "b1.json: job: " -- "$ORACLE" merge "$WORK/a0.json" "$WORK/b1.json"
    expect_input_error "a1.json" "a1.json: shard: " -- "$ORACLE" merge "$WORK/a1.json" "$WORK/a1.json"
    # a part claiming shard 2 (or -1) of 2: out of range, named by its shard field
    jq -c '.shard[0] = 2' "$WORK/a1.json" >"$WORK/c2.json"
    expect_input_error "c2.json" "c2.json: shard: " -- "$ORACLE" merge "$WORK/a0.json" "$WORK/c2.json"
    jq -c '.shard[0] = -1' "$WORK/a1.json" >"$WORK/cm.json"
    expect_input_error "cm.json" "cm.json: shard: " -- "$ORACLE" merge "$WORK/a0.json" "$WORK/cm.json"
    ;;
  tp_golden|tp_golden_mpi|tp_golden_smollm2)  # --tp 1..4: every per-step logits hash of the transcripts
    mkdir "$WORK/g"
    if [ "$CASE" = tp_golden_smollm2 ]; then
      cp "$SRC/golden/smollm2.jsonl" "$WORK/g/"
    elif [ "$CASE" = tp_golden_mpi ]; then  # the MPI transport on one transcript (in-process ranks: all five;
      # test_tp: all nine golden models) — 4 ranks oversubscribe the 2-core CI box, so one is enough
      cp "$SRC/golden/llama2xs-q4_0.gguf.jsonl" "$WORK/g/"
    else
      for f in stories260K.jsonl stories260K.gguf.jsonl aidreams260K.gguf.jsonl llama2xs.gguf.jsonl llama2xs-q4_0.gguf.jsonl; do
        cp "$SRC/golden/$f" "$WORK/g/"
      done
    fi
    [ "$CASE" = tp_golden_mpi ] && need_mpi
    for n in 1 2 3 4; do
      if [ "$CASE" = tp_golden_mpi ]; then
        "${MPIRUN[@]}" -np $n "$ORACLE" golden verify "$WORK/g" --tp $n --json -q >"$WORK/t$n.json" || true
      else
        "$ORACLE" golden verify "$WORK/g" --tp $n --json -q >"$WORK/t$n.json" || true
      fi
      min=6; [ "$CASE" = tp_golden_smollm2 ] && min=4  # smollm2.jsonl holds the 4-record instruct set
      jq -e --argjson n $n --argjson min $min '.pass and .mismatch_count == 0 and .records >= $min and .tp == $n' \
        "$WORK/t$n.json" >/dev/null ||
        fail "--tp $n: $(head -c 600 "$WORK/t$n.json")"
    done
    if [ "$CASE" = tp_golden ]; then  # the text summary names the ranks, --tp 1 included (as --json's "tp")
      n_rec=$(wc -l <"$SRC/golden/stories260K.gguf.jsonl")
      "$ORACLE" golden verify "$SRC/golden/stories260K.gguf.jsonl" --tp 1 -q >"$WORK/t1.txt" || fail "$(cat "$WORK/t1.txt")"
      grep -q "golden verify: $n_rec records in 1 files match (.*, tensor-parallel ranks 1)$" "$WORK/t1.txt" ||
        fail "--tp 1 text: $(cat "$WORK/t1.txt")"
    fi
    ;;
  bench_tp)  # bench --tp N: refused without mpirun; under mpirun each rank reports its KV slice and traffic
    set +e
    "$ORACLE" bench -m "$M" --prompt-tokens 8 --decode-tokens 4 -r 1 --tp 2 -q 2>"$WORK/e.txt"; rc=$?
    set -e
    [ $rc -eq 2 ] && grep -q -- "--tp" "$WORK/e.txt" || fail "bench --tp 2 without mpirun: rc $rc: $(cat "$WORK/e.txt")"
    need_mpi
    "$ORACLE" bench -m "$M" --prompt-tokens 8 --decode-tokens 4 -r 1 --json -q >"$WORK/b1.json"
    # A rank keeps only its rows' pages, so it maps the file even where ORACLE_WEIGHTS asks for a copy.
    ORACLE_WEIGHTS=huge_pages "${MPIRUN[@]}" -x ORACLE_WEIGHTS -np 3 "$ORACLE" bench -m "$M" --prompt-tokens 8 \
      --decode-tokens 4 -r 1 --tp 3 --json -q >"$WORK/b3.json"
    kv1=$(jq '.kv_bytes_allocated' "$WORK/b1.json")
    jq -e --argjson kv1 "$kv1" '.tp == 3 and (.tp_ranks | length) == 3 and .weights_residency == "mapped"
        and ([.tp_ranks[].rank] == [0, 1, 2])
        and ([.tp_ranks[].kv_bytes_allocated] | add) == $kv1
        and ([.tp_ranks[].all_gathers] | unique | length) == 1 and .tp_ranks[0].all_gathers > 0
        and all(.tp_ranks[]; .bytes_received > 0)' "$WORK/b3.json" >/dev/null ||
      fail "bench --tp 3: KV slices do not add up to $kv1 or no traffic: $(jq -c '.tp_ranks' "$WORK/b3.json")"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
