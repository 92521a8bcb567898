#!/usr/bin/env bash
# The command line as a llama.cpp / HF user meets it (issue 16, docs/cli.md):
# aliases, "did you mean", prompt files, --version / help, completion, presets
# with their engines' defaults, --json everywhere, run's finish reason / echo /
# timing, bench fitting the context, golden verify reporting every mismatch,
# progress, certificate figures, perplexity.
# Usage: cli_ux.sh ORACLE SHARED CASE [SOURCE_DIR]
source "$(dirname "$0")/lib.sh"
CASE=$3
SRC=${4:-$(cd "$(dirname "$0")/../.." && pwd)}
ORACLE=$(realpath "$ORACLE"); SHARED=$(realpath "$SHARED"); MODELS="$SHARED/models"
GGUF="$MODELS/gguf/stories260K.gguf"
jqr() { jq -r "$1" "$WORK/out"; }

case $CASE in
  aliases)  # llama.cpp / HF spellings land on the canonical options
    need_fixture "$GGUF"
    "$ORACLE" run -m "$GGUF" --temp 0.7 --top_p=0.9 --top-k 40 --min_p 0.02 -s 5 -c 64 -n 3 \
      --repeat-last-n 32 --repetition-penalty 1.1 --json >"$WORK/out"
    [ "$(jqr '[.sampler.temperature, .sampler.top_p, .sampler.min_p] | map(. * 1000 | round) | join(",")')" = "700,900,20" ] ||
      fail "temperature/top_p/min_p: $(jq -c .sampler "$WORK/out")"
    [ "$(jqr '[.sampler.top_k, .sampler.seed, .context, .max_tokens, .sampler.penalty_window] | join(",")')" = "40,5,64,3,32" ] ||
      fail "top_k/seed/context/max_tokens/window: $(jq -c '{sampler, context, max_tokens}' "$WORK/out")"
    [ "$(jqr '.sampler.repetition_penalty * 100 | round')" = "110" ] || fail "repetition_penalty"
    "$ORACLE" run -m "$GGUF" --max_new_tokens 2 --json >"$WORK/out"; [ "$(jqr .max_tokens)" = 2 ] || fail "--max_new_tokens"
    "$ORACLE" run -m "$GGUF" --n-predict 4 --json >"$WORK/out"; [ "$(jqr .max_tokens)" = 4 ] || fail "--n-predict"
    "$ORACLE" bench -m "$GGUF" -p 8 -n 4 -r 2 -o json >"$WORK/out"
    [ "$(jqr '[.prefill_tokens, .decode_tokens, .repetitions] | join(",")')" = "8,4,2" ] || fail "bench -p/-n/-r/-o"
    ;;
  did_you_mean)  # an unknown option or command: exit 2, one line, the closest spelling
    expect_input_error "--temprature" "did you mean --temperature" -- "$ORACLE" run --temprature 0.5
    expect_input_error "rnu" "did you mean run" -- "$ORACLE" rnu
    expect_input_error "--max-token" "did you mean --max-tokens" -- "$ORACLE" run --max-token 5
    ;;
  prompt_file)  # -f FILE and -f - read the prompt verbatim
    printf 'Once upon a time\nthere' >"$WORK/p.txt"
    "$ORACLE" run -m "$GGUF" -f "$WORK/p.txt" -n 2 --json >"$WORK/out"
    [ "$(jq -c .prompt "$WORK/out")" = '"Once upon a time\nthere"' ] || fail "-f FILE: $(jq -c .prompt "$WORK/out")"
    printf 'from stdin' | "$ORACLE" run -m "$GGUF" -f - -n 2 --json >"$WORK/out"
    [ "$(jqr .prompt)" = "from stdin" ] || fail "-f -"
    expect_input_error "nope.txt" "--file" -- "$ORACLE" run -f "$WORK/nope.txt"
    ;;
  version_help)  # --version, help CMD, defaults in --help, no {false}
    "$ORACLE" --version >"$WORK/a"; "$ORACLE" version >"$WORK/b"; cmp "$WORK/a" "$WORK/b" || fail "--version != version"
    grep -q "cuda-emu" "$WORK/a" || fail "version does not list cuda-emu: $(cat "$WORK/a")"
    "$ORACLE" version --json | jq -e '.backends | index("cuda-emu")' >/dev/null || fail "version --json"
    "$ORACLE" help run >"$WORK/h"; grep -qE -- "--temperature FLOAT.*=0$" "$WORK/h" || fail "help run shows no defaults"
    grep -q -- "--temp = --temperature" "$WORK/h" || fail "help run lists no aliases"
    "$ORACLE" help golden verify >"$WORK/h"; grep -q -- "--shared-dir" "$WORK/h" || fail "help golden verify"
    for c in $("$ORACLE" --help | awk '/^Subcommands:/{on=1; next} on && NF {print $1}'); do
      "$ORACLE" help "$c" >"$WORK/h" || fail "help $c exit $?"
      ! grep -q "{false}\|{true}" "$WORK/h" || fail "help $c shows a flag value: $(grep "{" "$WORK/h")"
    done
    ;;
  json_everywhere)  # every subcommand (and golden's two) takes --json
    for c in $("$ORACLE" --help | awk '/^Subcommands:/{on=1; next} on && NF {print $1}') "golden verify" "golden update"; do
      [ "$c" = golden ] && continue
      # shellcheck disable=SC2086
      "$ORACLE" help $c >"$WORK/h" || fail "help $c exit $?"
      grep -q -- "--json" "$WORK/h" || fail "oracle $c has no --json"
    done
    ;;
  aliases_documented)  # docs/cli.md holds exactly the table the binary applies
    "$ORACLE" help aliases >"$WORK/t"
    python3 - "$WORK/t" "$SRC/docs/cli.md" <<'PY' || fail "docs/cli.md alias table differs from oracle help aliases"
import sys
table, doc = open(sys.argv[1]).read(), open(sys.argv[2]).read()
sys.exit(0 if table in doc else 1)
PY
    ;;
  completion)  # the bash completion script completes subcommands, options and aliases
    "$ORACLE" completion bash >"$WORK/c.bash"
    out=$(bash -c 'source "$1"; COMP_WORDS=(oracle run --tem); COMP_CWORD=2; _oracle; echo "${COMPREPLY[@]}"' _ "$WORK/c.bash")
    [[ " $out " == *" --temperature "* && " $out " == *" --temp "* ]] || fail "run --tem -> '$out'"
    out=$(bash -c 'source "$1"; COMP_WORDS=(oracle gol); COMP_CWORD=1; _oracle; echo "${COMPREPLY[@]}"' _ "$WORK/c.bash")
    [[ " $out " == *" golden "* ]] || fail "gol -> '$out'"
    out=$(bash -c 'source "$1"; COMP_WORDS=(oracle golden verify --sh); COMP_CWORD=3; _oracle; echo "${COMPREPLY[@]}"' _ "$WORK/c.bash")
    [[ " $out " == *" --shared-dir "* ]] || fail "golden verify --sh -> '$out'"
    ;;
  presets)  # --preset llamacpp / hf are the engines' defaults; *-semantics turn every filter off
    # llama.cpp common/common.h, struct common_params_sampling (vendored in llama-cpp-python 0.3.36):
    # temp 0.80, top_k 40, top_p 0.95, min_p 0.05, penalty_last_n 64, penalty_repeat 1.00.
    "$ORACLE" run -m "$GGUF" --preset llamacpp -n 2 --json >"$WORK/out"
    [ "$(jqr '[.sampler.temperature, .sampler.top_k, .sampler.top_p, .sampler.min_p, .sampler.penalty_window, .sampler.repetition_penalty] | map(. * 100 | round) | join(",")')" = "80,4000,95,5,6400,100" ] ||
      fail "llamacpp: $(jq -c .sampler "$WORK/out")"
    "$ORACLE" run -m "$GGUF" --preset llamacpp --repeat-penalty 1.1 -n 2 --json >"$WORK/out"
    [ "$(jqr .sampler.penalty_window)" = 64 ] || fail "llamacpp + --repeat-penalty: window $(jqr .sampler.penalty_window)"
    # transformers 5.23.0 GenerationConfig._get_default_generation_params: do_sample False,
    # temperature 1.0, top_k 50, top_p 1.0, repetition_penalty 1.0.
    "$ORACLE" run -m "$GGUF" --preset hf -n 2 --json >"$WORK/out"
    [ "$(jqr '[.sampler.preset, .sampler.temperature, .sampler.top_k, .sampler.top_p] | join(",")')" = "hf,0,50,1" ] ||
      fail "hf: $(jq -c .sampler "$WORK/out")"
    "$ORACLE" run -m "$GGUF" --preset hf --do-sample -n 2 --json >"$WORK/out"
    [ "$(jqr '[.sampler.temperature, .sampler.top_k] | join(",")')" = "1,50" ] || fail "hf --do-sample"
    for p in llamacpp-semantics hf-semantics; do
      "$ORACLE" run -m "$GGUF" --preset $p -n 2 --json >"$WORK/out"
      [ "$(jqr '[.sampler.temperature, .sampler.top_k, .sampler.top_p, .sampler.min_p, .sampler.penalty_window] | join(",")')" = "0,0,1,0,-1" ] ||
        fail "$p: $(jq -c .sampler "$WORK/out")"
    done
    [ "$(jq -r .sampler.preset "$WORK/out")" = hf ] || fail "hf-semantics keeps hf semantics"
    expect_input_error "bogus" "--preset" -- "$ORACLE" run --preset bogus
    ;;
  run_context_echo_timing)  # finish_reason context, --echo, the timing line, --quiet
    "$ORACLE" run -m "$GGUF" -n 300 --ignore-eos --json >"$WORK/out"
    [ "$(jqr '[.finish_reason, (.prompt_ids | length) + (.output_ids | length)] | join(",")')" = "context,128" ] ||
      fail "context: $(jq -c '{finish_reason, n: (.output_ids | length)}' "$WORK/out")"
    "$ORACLE" run -m "$GGUF" -n 3 --ignore-eos --json >"$WORK/out"; [ "$(jqr .finish_reason)" = length ] || fail "length"
    run_capture "$ORACLE" run -m "$GGUF" -p "Once upon a time" -n 8 --echo
    head -c 16 "$WORK/out" | grep -qx "Once upon a time" || fail "--echo: $(head -c 40 "$WORK/out")"
    grep -q "prompt eval time = .* / *5 tokens" "$WORK/err" && grep -q " eval time = " "$WORK/err" || fail "timing: $(cat "$WORK/err")"
    run_capture "$ORACLE" run -m "$GGUF" -n 8 --quiet; [ ! -s "$WORK/err" ] || fail "--quiet: $(cat "$WORK/err")"
    ;;
  bench_fits)  # defaults fit a 128-token context; -r 3: mean and sd over three samples; pp/tg table
    "$ORACLE" bench -m "$GGUF" -r 3 --json >"$WORK/out"
    [ "$(jqr '[.prefill_tokens, .decode_tokens, (.samples.decode_tok_s | length)] | join(",")')" = "64,64,3" ] ||
      fail "fit: $(jq -c '{prefill_tokens, decode_tokens, samples}' "$WORK/out")"
    jq -e '(.samples.decode_tok_s | add / length) as $m | ((.decode_tok_s - $m) | fabs) < 1e-6 * $m and .decode_tok_s_sd >= 0' \
      "$WORK/out" >/dev/null || fail "mean/sd: $(cat "$WORK/out")"
    "$ORACLE" bench -m "$GGUF" -r 2 -q >"$WORK/out"
    grep -qE '^\| stories260K.gguf .*\| +pp64 \| +[0-9.]+ ± [0-9.]+ \|$' "$WORK/out" && grep -qE '\| +tg64 @ d64 \|' "$WORK/out" ||
      fail "table: $(cat "$WORK/out")"
    ;;
  golden_all_mismatches)  # three tampered records: three MISMATCH lines, the count, exit 1
    need_fixture "$GGUF"
    mkdir -p "$WORK/g"
    jq -c 'if (.id | test("/greedy/once$|/greedy/empty$|/llamacpp-topk-topp/once$")) then .logits_sha256[0] = ("0" * 64) else . end' \
      "$SRC/golden/stories260K.gguf.jsonl" >"$WORK/g/t.jsonl"
    ORACLE_SHARED_DIR="$SHARED" run_capture "$ORACLE" golden verify "$WORK/g" -q
    [ "$RC" -eq 1 ] || fail "exit $RC (want 1): $(cat "$WORK/out" "$WORK/err")"
    [ "$(grep -c '^MISMATCH' "$WORK/out")" -eq 3 ] || fail "want 3 MISMATCH lines: $(cat "$WORK/out")"
    grep -q "3 of 16 records MISMATCH" "$WORK/out" || fail "no count: $(cat "$WORK/out")"
    ORACLE_SHARED_DIR="$SHARED" run_capture "$ORACLE" golden verify "$WORK/g/t.jsonl" --json
    [ "$RC" -eq 1 ] && [ "$(jqr .mismatch_count)" = 3 ] && [ "$(jqr '.mismatches | length')" = 3 ] || fail "--json: $(cat "$WORK/out")"
    ;;
  golden_paths)  # from any directory: --shared-dir, or ../shared beside the transcripts' repository
    mkdir -p "$WORK/repo/golden"; ln -s "$(cd "$SHARED" && pwd)" "$WORK/shared"
    cp "$SRC/golden/stories260K.gguf.jsonl" "$WORK/repo/golden/"
    (cd / && env -u ORACLE_SHARED_DIR "$ORACLE" golden verify "$WORK/repo/golden" -q) >"$WORK/out" || fail "beside: $(cat "$WORK/out")"
    grep -q "16 records in 1 files match" "$WORK/out" || fail "$(cat "$WORK/out")"
    mkdir -p "$WORK/x/y/elsewhere"; cp "$SRC/golden/stories260K.gguf.jsonl" "$WORK/x/y/elsewhere/"
    (cd / && env -u ORACLE_SHARED_DIR "$ORACLE" golden verify "$WORK/x/y/elsewhere" --shared-dir "$SHARED" -q) >/dev/null || fail "--shared-dir"
    (cd / && env -u ORACLE_SHARED_DIR "$ORACLE" golden verify "$WORK/x/y/elsewhere" -q) 2>"$WORK/err" && fail "no fixtures: exit 0"
    grep -q -- "--shared-dir" "$WORK/err" || fail "no hint: $(cat "$WORK/err")"
    ;;
  golden_update_model)  # update --model: any model; the records equal the committed fixture records
    mkdir -p "$WORK/u"; cp "$GGUF" "$WORK/m.gguf"
    "$ORACLE" golden update "$WORK/u" --model "$WORK/m.gguf" --id mine -q >/dev/null
    [ "$(wc -l <"$WORK/u/mine.jsonl")" -eq 16 ] || fail "records: $(wc -l <"$WORK/u/mine.jsonl")"
    (cd / && env -u ORACLE_SHARED_DIR "$ORACLE" golden verify "$WORK/u" -q) >/dev/null || fail "verify of the new transcript"
    strip='del(.id, .model, .command, .run_command, .model_base)'
    jq -c "$strip" "$WORK/u/mine.jsonl" >"$WORK/a"; jq -c "$strip" "$SRC/golden/stories260K.gguf.jsonl" >"$WORK/b"
    cmp -s "$WORK/a" "$WORK/b" || fail "update --model wrote different records than golden/stories260K.gguf.jsonl"
    ;;
  numerics_version)  # docs/numerics.md §8: every record and --json output carries the contract version,
                    # every reader refuses another one (exit 2, one line: file[:line], field, both values, the fix)
    need_fixture "$GGUF"
    export ORACLE_SHARED_DIR="$SHARED"
    # The expected number comes from the source, not from the binary.
    V=$(sed -n 's/.*kNumericsContractVersion = \([0-9]*\);.*/\1/p' "$SRC/numerics/contract_version.h")
    [ -n "$V" ] || fail "no kNumericsContractVersion in numerics/contract_version.h"
    [ "$("$ORACLE" version --json | jq .numerics_version)" = "$V" ] || fail "version --json: $("$ORACLE" version --json)"
    "$ORACLE" version | grep -q "numerics_version $V;" || fail "version text: $("$ORACLE" version)"
    "$ORACLE" run -m "$GGUF" -p "Once" -n 2 --json --log "$WORK/log.jsonl" >"$WORK/out"
    [ "$(jqr .numerics_version)" = "$V" ] || fail "run --json: $(jq -c 'del(.steps)' "$WORK/out")"
    [ "$(jq .numerics_version "$WORK/log.jsonl")" = "$V" ] || fail "run --log line"
    "$ORACLE" bench -m "$GGUF" -p 4 -n 2 -r 1 --json >"$WORK/out"
    [ "$(jqr .numerics_version)" = "$V" ] || fail "bench --json"
    mkdir -p "$WORK/g"
    head -n 2 "$SRC/golden/stories260K.gguf.jsonl" >"$WORK/g/ok.jsonl"
    [ "$(jq -s 'map(.numerics_version) | unique | join(",")' "$WORK/g/ok.jsonl")" = "\"$V\"" ] ||
      fail "committed golden records do not carry numerics_version $V"
    ORACLE_SHARED_DIR="$SHARED" "$ORACLE" golden verify "$WORK/g/ok.jsonl" -q >/dev/null || fail "golden verify of this version"
    for bad in 999 $((V + 1)) $((V - 1)); do
      [ "$bad" -ge 1 ] || continue
      { head -n 1 "$WORK/g/ok.jsonl"; sed -n 2p "$WORK/g/ok.jsonl" | jq -c ".numerics_version = $bad"; } >"$WORK/g/bad.jsonl"
      expect_input_error "$WORK/g/bad.jsonl:2" "numerics_version" -- \
        "$ORACLE" golden verify "$WORK/g/bad.jsonl" -q
      grep -q "found $bad, this oracle reads $V" "$WORK/err" && grep -q "oracle golden update" "$WORK/err" ||
        fail "values or fix not named: $(cat "$WORK/err")"
    done
    # no field: written before it existed, version 1
    jq -c 'del(.numerics_version)' "$WORK/g/ok.jsonl" >"$WORK/g/old.jsonl"
    ORACLE_SHARED_DIR="$SHARED" run_capture "$ORACLE" golden verify "$WORK/g/old.jsonl" -q
    if [ "$V" -eq 1 ]; then [ "$RC" -eq 0 ] || fail "a record without the field is version 1: $(cat "$WORK/err")"
    else [ "$RC" -eq 2 ] && grep -q "found 1, this oracle reads $V" "$WORK/err" || fail "old record: $RC $(cat "$WORK/err")"; fi
    # replay of an own log of another version
    jq -c '.numerics_version = 999' "$WORK/log.jsonl" >"$WORK/bad-log.jsonl"
    expect_input_error "$WORK/bad-log.jsonl:1" "numerics_version" -- "$ORACLE" replay "$WORK/bad-log.jsonl" --model "$GGUF"
    grep -q "found 999, this oracle reads $V" "$WORK/err" || fail "replay: $(cat "$WORK/err")"
    # shard parts: merge refuses a part of another version
    "$ORACLE" replay "$WORK/log.jsonl" --model "$GGUF" --shard 0/1 --part "$WORK/p0.json" -q 2>/dev/null
    [ "$(jq .numerics_version "$WORK/p0.json")" = "$V" ] || fail "shard part"
    "$ORACLE" merge "$WORK/p0.json" >/dev/null || fail "merge of this version"
    jq -c '.numerics_version = 999' "$WORK/p0.json" >"$WORK/p1.json"
    expect_input_error "$WORK/p1.json" "numerics_version" -- "$ORACLE" merge "$WORK/p1.json"
    # dumps: compare refuses an oracle dump of another version
    "$ORACLE" run -m "$GGUF" -p "Once" -n 2 --dump-logits "$WORK/d.safetensors" -q >/dev/null
    python3 - "$WORK/d.safetensors" "$WORK/bad.safetensors" <<'PY' || fail "could not rewrite the dump's metadata"
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
assert h["__metadata__"]["numerics_version"]
h["__metadata__"]["numerics_version"] = "999"
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
    expect_input_error "$WORK/bad.safetensors" "numerics_version" -- "$ORACLE" compare "$WORK/bad.safetensors" "$WORK/d.safetensors"
    # KLD base: the sidecar beside the file we write; another version in it is refused
    T="$SHARED/corpus/stories260K-samples.txt"
    "$ORACLE" certify --write-kld-base "$WORK/b.kld" --reference "$GGUF" --corpus "$T" --ctx 64 --max-chunks 1 -q >/dev/null ||
      fail "write-kld-base"
    [ "$(jq .numerics_version "$WORK/b.kld.oracle.json")" = "$V" ] || fail "sidecar: $(cat "$WORK/b.kld.oracle.json")"
    [ "$(head -c 8 "$WORK/b.kld")" = "_logits_" ] || fail "the base file is not llama.cpp's format"
    jq '.numerics_version = 999' "$WORK/b.kld.oracle.json" >"$WORK/s" && mv "$WORK/s" "$WORK/b.kld.oracle.json"
    expect_input_error "$WORK/b.kld.oracle.json" "numerics_version" -- \
      "$ORACLE" certify --reference-kld-base "$WORK/b.kld" --candidate "$GGUF" --out "$WORK/c" -q
    ;;
  progress)  # periodic lines off a terminal; nothing with --quiet or --json
    ORACLE_PROGRESS_SECONDS=0 ORACLE_SHARED_DIR="$SHARED" run_capture "$ORACLE" golden verify "$SRC/golden/stories260K.gguf.jsonl"
    grep -q "^golden verify: 16/16 done in" "$WORK/err" || fail "no final progress line: $(cat "$WORK/err")"
    grep -q "^golden verify: 1/16 (6%)" "$WORK/err" || fail "no periodic line: $(cat "$WORK/err")"
    ORACLE_PROGRESS_SECONDS=0 run_capture "$ORACLE" bench -m "$GGUF" -r 2 -p 8 -n 4
    grep -q "^bench: 2/2 done" "$WORK/err" || fail "bench progress: $(cat "$WORK/err")"
    for q in --quiet --json; do
      ORACLE_PROGRESS_SECONDS=0 ORACLE_SHARED_DIR="$SHARED" run_capture "$ORACLE" golden verify "$SRC/golden/stories260K.gguf.jsonl" $q
      [ ! -s "$WORK/err" ] || fail "$q: $(cat "$WORK/err")"
    done
    ;;
  certify_figures)  # the summary figure and the llama-perplexity block
    R="$MODELS/gguf/llama2xs.gguf"; C="$MODELS/gguf/llama2xs-q8_0.gguf"; T="$SHARED/corpus/llama2xs-samples.txt"
    need_fixture "$C"
    "$ORACLE" certify --reference "$R" --candidate "$C" --corpus "$T" --max-chunks 3 --greedy-prompts 2 --out "$WORK/c" -q >"$WORK/out"
    for l in "Mean PPL(Q)" "Median  KLD" " 0.1%   KLD" "Minimum KLD" "75.0%   Δp" "RMS Δp" "Same top p" "verdict: PASS"; do
      grep -qF -- "$l" "$WORK/out" || fail "stdout lacks '$l'"
      grep -qF -- "$l" "$WORK/c/certificate.md" || [ "$l" = "verdict: PASS" ] || fail "Markdown lacks '$l'"
    done
    S="$WORK/c/certificate.svg"
    for f in "oracle certify: PASS" "$(sha256sum "$R" | cut -c1-64)" "$(sha256sum "$C" | cut -c1-64)" "protocol" \
             kld_mean kld_p99 same_top ppl_ratio "log x" "Wilson"; do
      grep -qF -- "$f" "$S" || fail "certificate.svg lacks '$f'"
    done
    [ "$(grep -c '>PASS<' "$S")" -eq 4 ] || fail "want 4 PASS rows"
    for f in kld_cdf delta_p same_top_by_position kld_by_position; do [ -s "$WORK/c/$f.svg" ] || fail "no $f.svg"; done
    "$ORACLE" certify --reference "$R" --candidate "$C" --corpus "$T" --max-chunks 3 --greedy-prompts 2 --out "$WORK/j" --json --no-png >"$WORK/out"
    [ "$(jqr .verdict)" = PASS ] && jq -e '.files | length == 7' "$WORK/out" >/dev/null || fail "--json: $(head -c 300 "$WORK/out")"
    ;;
  certify_threads)  # --threads 1, 2 and 3 (one pool; the two models' passes overlapped on two groups of
    # threads) write byte-identical certificates: every file, with int8 KV and a reference cache too;
    # 9 greedy prompts: two groups (8 + 1), whose four passes the two groups of threads take in turn
    R="$MODELS/gguf/llama2xs.gguf"; C="$MODELS/gguf/llama2xs-q4_0.gguf"; T="$SHARED/corpus/llama2xs-samples.txt"
    need_fixture "$C"
    for t in 1 2 3; do
      "$ORACLE" certify --reference "$R" --candidate "$C" --corpus "$T" --protocol llamacpp --max-chunks 9 \
        --greedy-prompts 9 --greedy-steps 8 --threads $t --no-png --out "$WORK/l$t" -q >/dev/null ||
        fail "llamacpp --threads $t: exit $?"
      "$ORACLE" certify --reference "$R" --candidate "$C" --corpus "$T" --max-chunks 2 --candidate-kv-int8 \
        --greedy-prompts 2 --greedy-steps 8 --threads $t --no-png --out "$WORK/f$t" -q >/dev/null ||
        fail "full --candidate-kv-int8 --threads $t: exit $?"
    done
    for d in l f; do
      [ "$(ls "$WORK/${d}1" | wc -l)" -ge 6 ] || fail "$d: too few files: $(ls "$WORK/${d}1")"
      for t in 2 3; do
        diff -r "$WORK/${d}1" "$WORK/$d$t" >/dev/null || fail "$d: --threads $t differs from --threads 1: $(diff -rq "$WORK/${d}1" "$WORK/$d$t")"
      done
    done
    # the candidate's pass fails on its first chunk while the reference's runs: exit 2, no hang
    expect_input_error "forward" "numerics" -- timeout 120 "$ORACLE" certify --reference "$R" --candidate "$C" --corpus "$T" \
      --max-chunks 3 --greedy-prompts 2 --threads 2 --candidate-numerics ggml --candidate-kv-int8 --no-png --out "$WORK/e"
    ;;
  certify_tokenizer)  # a llama2.c reference (no embedded vocabulary) with --tokenizer
    B="$MODELS/stories260K/stories260K.bin"; need_fixture "$B"
    cp "$B" "$WORK/ref.bin"  # no tok512.bin beside the copy: needs --tokenizer
    expect_input_error "ref.bin" "tokenizer" -- "$ORACLE" certify --reference "$WORK/ref.bin" --candidate "$WORK/ref.bin" \
      --corpus "$SHARED/corpus/stories260K-samples.txt" --ctx 64 --max-chunks 2 --greedy-prompts 0 --out "$WORK/c"
    "$ORACLE" certify --reference "$WORK/ref.bin" --tokenizer "$MODELS/stories260K/tok512.bin" --candidate "$WORK/ref.bin" \
      --corpus "$SHARED/corpus/stories260K-samples.txt" --ctx 64 --max-chunks 2 --greedy-prompts 0 --out "$WORK/c" --json -q >"$WORK/out" ||
      fail "exit $?"
    [ "$(jqr .verdict)" = PASS ] && [ "$(jqr .statistics.kld.mean)" = 0 ] || fail "$(head -c 300 "$WORK/out")"
    ;;
  perplexity)  # llama-perplexity's chunks: 109 x 63 tokens; PPL within 0.3% of llama.cpp's F32 7.688349
    need_fixture "$MODELS/gguf/llama2xs.gguf"
    "$ORACLE" perplexity -m "$MODELS/gguf/llama2xs.gguf" -f "$SHARED/corpus/llama2xs-samples.txt" -c 128 -t 2 --json >"$WORK/out"
    [ "$(jqr '[.chunks, .tokens_scored] | join(",")')" = "109,6867" ] || fail "chunks/tokens: $(cat "$WORK/out")"
    jq -e '((.ppl / 7.688349) - 1 | fabs) < 0.003' "$WORK/out" >/dev/null || fail "PPL $(jqr .ppl) vs llama.cpp 7.688349"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
