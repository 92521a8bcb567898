#!/usr/bin/env bash
# Builds the libFuzzer targets (clang++, ASan + UBSan; the same build folder as
# scripts/sanitize.sh, default build/asan, so CI compiles the library once) and runs
# each for FUZZ_SECONDS (default 60) on a corpus seeded at run time from the
# real fixtures in ../shared (never copied into the repo) plus the crash
# regression inputs in fuzz/regressions/<target>/ (run first, must pass).
# Exit 1 if any target crashes; the crashing input is left in <dir>/crashes.
# Usage: scripts/fuzz_smoke.sh [target...]   Long runs: FUZZ_SECONDS=3600.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=$(realpath "${ORACLE_SHARED_DIR:-../shared}")
M=$SHARED/models
dir=${FUZZ_DIR:-${SANITIZE_DIR:-build/asan}}
secs=${FUZZ_SECONDS:-60}
targets=${*:-"fuzz_gguf fuzz_llama2c fuzz_safetensors fuzz_tokenizer_file fuzz_tokenizer_bytes fuzz_replay_log fuzz_engine_log fuzz_replay_log_parser"}
CXX=clang++ CC=clang cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DORACLE_FUZZ=ON \
  -DORACLE_SANITIZE=ON -DORACLE_NATIVE=OFF -DORACLE_ENABLE_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
# shellcheck disable=SC2086
cmake --build "$dir" -j "$(nproc)" --target $targets

seed() {  # target -> fixture files for its corpus
  case $1 in
    fuzz_gguf) ls "$M"/gguf/*.gguf "$M"/vocab-only/*.gguf ;;
    fuzz_llama2c) ls "$M"/stories260K/stories260K.bin "$M"/aidreams260K/aidreams260K.bin "$M"/llama2xs/llama2xs.bin ;;
    fuzz_tokenizer_file) ls "$M"/stories260K/tok512.bin "$M"/aidreams260K/tok512.bin ;;
    fuzz_tokenizer_bytes) ls "$M"/vocab-only/*.inp "$SHARED"/corpus/*.txt ;;
    fuzz_replay_log) ls "$PWD"/golden/*.jsonl ;;
    fuzz_engine_log) ls "$PWD"/audit/tests/data/*.jsonl ;;
    fuzz_replay_log_parser) ls "$PWD"/fuzz/seeds/fuzz_replay_log_parser/* ;;  # `oracle run --log` output
    fuzz_safetensors) ;;  # no real safetensors fixture: seeded with a minimal valid header below
  esac
}

# The targets write each input to a per-process scratch file (fuzz/fuzz_support.h
# scratch_path, under $TMPDIR): a folder of this run's own, removed on exit.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/oracle_fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch
export ORACLE_SHARED_DIR=$SHARED ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# One target per core at a time (FUZZ_PAR, default nproc): each still gets FUZZ_SECONDS of
# its own core; results are printed in target order once all have finished.
fuzz_one() {  # target -> writes $dir/$t.result ("ok ..." or "CRASH ...")
  local t=$1 corpus="$dir/corpus/$1" crashes="$dir/crashes/$1" res
  mkdir -p "$corpus" "$crashes"
  for f in $(seed "$t"); do
    if [ "$t" = fuzz_replay_log ] || [ "$t" = fuzz_engine_log ]; then split -l 1 -a 4 "$f" "$corpus/$(basename "$f")."; else cp -f "$f" "$corpus/"; fi
  done
  if [ "$t" = fuzz_safetensors ]; then
    hdr='{"model.embed_tokens.weight":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]}}'
    { printf "$(printf '\\x%02x' ${#hdr})\0\0\0\0\0\0\0"; printf '%s' "$hdr"; head -c 128 /dev/zero; } >"$corpus/seed.safetensors"
  fi
  if [ -d "fuzz/regressions/$t" ] && ! "$dir/bin/$t" fuzz/regressions/$t/* >"$dir/$t.regressions.log" 2>&1; then
    echo "CRASH: a regression input fails (log $dir/$t.regressions.log)" >"$dir/$t.result"; return
  fi
  # Big fixtures (GGUF/bin ~1 MB): allow inputs up to 2 MB; 2 GB RSS limit.
  if "$dir/bin/$t" "$corpus" -max_total_time="$secs" -max_len=2100000 -rss_limit_mb=2048 -timeout=30 \
       -artifact_prefix="$crashes/" -print_final_stats=1 >"$dir/$t.log" 2>&1; then
    res="ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/$t.log" | grep -o '[0-9]*$') runs in ${secs}s)"
  else
    res="CRASH (log $dir/$t.log, inputs in $crashes)"
  fi
  echo "$res" >"$dir/$t.result"
}

par=${FUZZ_PAR:-$(nproc)}
for t in $targets; do
  rm -f "$dir/$t.result"
  fuzz_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n || true; done
done
wait
status=0
for t in $targets; do
  res=$(cat "$dir/$t.result" 2>/dev/null || echo "CRASH (no result: the smoke itself failed)")
  case $res in
    ok*) echo "$t: $res" ;;
    *) echo "$t: $res" >&2; [ -f "$dir/$t.log" ] && tail -30 "$dir/$t.log" >&2; status=1 ;;
  esac
done
exit $status
