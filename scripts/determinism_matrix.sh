#!/usr/bin/env bash
# Determinism matrix: `oracle run --json` must give the same generated ids and
# the same per-step logits SHA-256 across
#   builds:  g++ -O3 (its own build: -march=native; MATRIX_GCC_O3_DIR=build reuses the default
#            portable build) | g++ -O0 (Debug, ORACLE_NATIVE=OFF) | clang++ -O3 -march=native
#   ISA paths: in every build, each path of the CPU kernels this CPU has (ORACLE_ISA=scalar,
#            avx2, avx512; reference/compute/isa.h) on the GGUF file, 2 threads
#   files:   stories260K.bin (llama2.c) | stories260K.gguf (GGUF F32, same weights)
#   threads: 1 | 2
#   prefill: one pass | chunks of 1, 3 and 7 tokens (--prefill-chunk)
# and two runs of the same command; then, in every build, `oracle golden verify golden`
# (every golden record must match its hashes): in the -O3 builds every golden file with 1
# and 2 threads; in the -O0 build (30-50x slower) every file except smollm2.jsonl (its 4
# records of a 135M model are 70 % of an -O0 verify, ~4 min), with 2 threads only (its thread
# invariance is covered by the run cells above with threads 1 and 2).
# MATRIX_O0_FULL=1 verifies everything at -O0 too, with 1 and 2 threads.
# Exit 0 when every cell matches the first,
# 1 on the first mismatch (printing both step lists), 2 on setup errors.
# Environment: ORACLE_SHARED_DIR (fixtures, default ../shared), MATRIX_DIR
# (build folders, default build-matrix), MATRIX_BUILDS (subset of the builds),
# MATRIX_GCC_O3_DIR (an existing g++ Release build to reuse, e.g. build).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${ORACLE_SHARED_DIR:-../shared}
ROOT=${MATRIX_DIR:-build-matrix}
BUILDS=${MATRIX_BUILDS:-"gcc-O3 gcc-O0 clang-O3"}
MODELS="$SHARED/models/stories260K"
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
TOKENS=${MATRIX_TOKENS:-120}
for f in "$MODELS/stories260K.bin" "$MODELS/tok512.bin" "$SHARED/models/gguf/stories260K.gguf"; do
  [ -f "$f" ] || { echo "determinism_matrix: missing fixture $f" >&2; exit 2; }
done

build() {  # name cxx build_type native
  local dir="$ROOT/$1"
  CXX=$2 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$3" -DORACLE_NATIVE="$4" \
    -DORACLE_BUILD_TESTS=OFF -DORACLE_ENABLE_CUDA=OFF >/dev/null
  cmake --build "$dir" --target oracle -j "$(nproc)" >/dev/null
}

# What must agree: finish reason, prompt and generated ids, every step's logits hash.
fingerprint() {
  jq -c '{finish_reason, prompt_ids, output_ids, steps: [.steps[].logits_sha256]}'
}

reference=""
check() {  # label, then the oracle command
  local label=$1; shift
  local got
  got=$("$@" | fingerprint)
  if [ -z "$reference" ]; then
    reference=$got
    # The fingerprint's hash lets runs of different MATRIX_BUILDS subsets be compared.
    echo "reference: $label ($(jq '.steps | length' <<<"$got") steps, fingerprint $(sha256sum <<<"$got" | cut -c1-16))"
  elif [ "$got" != "$reference" ]; then
    echo "MISMATCH: $label" >&2
    diff <(jq '.' <<<"$reference") <(jq '.' <<<"$got") | head -20 >&2
    exit 1
  else
    echo "ok: $label"
  fi
}

# verify_all ORACLE THREADS DIR|FILE...: `golden verify` of each, stopping at the first failure.
verify_all() {
  local oracle=$1 threads=$2 f; shift 2
  for f in "$@"; do "$oracle" golden verify "$f" --threads "$threads" || return 1; done
}

mkdir -p "$ROOT"
for b in $BUILDS; do
  case $b in
    gcc-O3) if [ -n "${MATRIX_GCC_O3_DIR:-}" ]; then ln -sfn "$(realpath "$MATRIX_GCC_O3_DIR")" "$ROOT/$b"
            else build "$b" g++ Release ON; fi ;;
    gcc-O0) build "$b" g++ Debug OFF ;;
    clang-O3) build "$b" clang++ Release ON ;;
    *) echo "determinism_matrix: unknown build $b" >&2; exit 2 ;;
  esac
  oracle="$ROOT/$b/bin/oracle"
  common=(run --json --prompt "$PROMPT" --max-tokens "$TOKENS" --temperature 0 --context 512 --allow-context-extension)
  for model in "$MODELS/stories260K.bin" "$SHARED/models/gguf/stories260K.gguf"; do
    for threads in 1 2; do
      for chunk in 0 1 3 7; do
        check "$b $(basename "$model") threads=$threads prefill-chunk=$chunk" \
          "$oracle" "${common[@]}" --model "$model" --tokenizer "$MODELS/tok512.bin" \
          --threads "$threads" --prefill-chunk "$chunk"
      done
    done
  done
  check "$b second run" "$oracle" "${common[@]}" --model "$MODELS/stories260K.bin" --threads 1
  for isa in scalar avx2 avx512; do  # every ISA path this CPU has (version refuses the others: exit 2)
    ORACLE_ISA=$isa "$oracle" version >/dev/null 2>&1 || { echo "skip: $b ORACLE_ISA=$isa (this CPU lacks it)"; continue; }
    check "$b ORACLE_ISA=$isa stories260K.gguf threads=2" env ORACLE_ISA=$isa "$oracle" "${common[@]}" \
      --model "$SHARED/models/gguf/stories260K.gguf" --tokenizer "$MODELS/tok512.bin" --threads 2
  done
  # Golden transcripts (golden/): every record of every real model, bit for bit.
  golden_threads="1 2" golden_files=golden
  if [ "$b" = gcc-O0 ] && [ "${MATRIX_O0_FULL:-0}" != 1 ]; then
    golden_threads=2 golden_files=$(ls golden/*.jsonl | grep -v '/smollm2\.jsonl$')
  fi
  for threads in $golden_threads; do
    log="$ROOT/$b.golden.threads$threads.log"
    # shellcheck disable=SC2086
    if ORACLE_SHARED_DIR="$SHARED" verify_all "$oracle" "$threads" $golden_files >"$log" 2>&1; then
      echo "ok: $b golden verify threads=$threads: $(tail -1 "$log")"
    else
      echo "MISMATCH: $b golden verify threads=$threads" >&2; cat "$log" >&2; exit 1
    fi
  done
done
echo "determinism matrix: all cells identical"
