#!/usr/bin/env bash
# The one prepared script for a GPU session (docs/diff.md): builds with CUDA,
# runs the GPU test label, the kernel case registry (check + benchmark), `oracle diff`
# on every real model (SmolLM2 included) in both modes, the golden verify on the device,
# and benchmarks the llama3-8b shape in BF16 and Q4_K_M in both modes and the
# decode-step graphs' speed-up. Every step's outcome is recorded and the script continues; results go to
# docs/gpu-results/ (summary.json + one file per step). Budget: < 10 minutes.
# Usage: scripts/gpu-check.sh [--dry-run]   (env: ORACLE_SHARED_DIR, GPU_BUILD_DIR, GPU_BENCH_DIR,
#        GPU_CHECK_OUT: where the dry run writes its summary, default a new temp folder)
# --dry-run (CI, no GPU needed; ctest gpu_check_dry_run): runs nothing; prints each
# step it would run, checks that the tools (cmake, ninja, timeout, git; nvidia-smi
# and nvcc are only reported) and every model / transcript it reads exist, and
# writes a summary JSON with "dry_run": true to a temp folder, never docs/.
# Exit 1 when a needed tool or file is missing.
set -u
cd "$(dirname "$0")/.."
dry=0
[ "${1:-}" = --dry-run ] && dry=1
shared=${ORACLE_SHARED_DIR:-$PWD/../shared}
build=${GPU_BUILD_DIR:-build-gpu}
bench_dir=${GPU_BENCH_DIR:-/tmp/oracle-gpu-bench}
out=docs/gpu-results
[ "$dry" = 1 ] && out=${GPU_CHECK_OUT:-$(mktemp -d /tmp/gpu-check-dry.XXXXXX)}
mkdir -p "$out" "$bench_dir"
export ORACLE_SHARED_DIR=$shared
started=$(date +%s)
steps=()  # JSON objects, one per step

# step NAME TIMEOUT_S CMD...: runs CMD with a timeout, output to $out/NAME.log, records rc and seconds.
# A step that would start after GPU_CHECK_BUDGET_S (default 540) seconds is skipped (rc 125)
# and a step's timeout is cut to the time left, so the script ends within 10 minutes.
budget=${GPU_CHECK_BUDGET_S:-540}
missing=()  # dry run: tools and files that are needed and absent
need_file() { [ -e "$1" ] || missing+=("file:$1"); }
need_tool() { command -v "$1" >/dev/null 2>&1 || missing+=("tool:$1"); }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
step() {
  local name=$1 limit=$2; shift 2
  if [ "$dry" = 1 ]; then  # the program must exist (oracle: built by the build step)
    local prog=$1
    [ "$prog" = "$oracle" ] || need_tool "$prog"
    echo "== $name (${limit}s): would run: $*"
    steps+=("{\"step\":\"$name\",\"rc\":0,\"seconds\":0,\"timeout_s\":$limit,\"command\":\"$(json_str "$*")\"}")
    return 0
  fi
  local t0=$(date +%s) left=$(( budget - ($(date +%s) - started) ))
  if [ "$left" -le 5 ]; then
    echo "== $name: skipped (time budget spent)"; steps+=("{\"step\":\"$name\",\"rc\":125,\"seconds\":0}")
    return 125
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name: $*"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$? t=$(( $(date +%s) - t0 ))
  echo "   rc $rc, ${t}s"; tail -3 "$out/$name.log" | sed 's/^/   /'
  steps+=("{\"step\":\"$name\",\"rc\":$rc,\"seconds\":$t}")
  return $rc
}

oracle="$build/bin/oracle"
gpu_tools=""
if [ "$dry" = 1 ]; then
  for t in cmake ninja timeout git nproc; do need_tool "$t"; done
  for t in nvidia-smi nvcc; do command -v "$t" >/dev/null 2>&1 || [ -x "/usr/local/cuda/bin/$t" ] || gpu_tools+="${gpu_tools:+ }$t"; done
  need_file CMakeLists.txt; need_file golden
else
  nvidia-smi >"$out/nvidia-smi.txt" 2>&1
fi
step configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORACLE_ENABLE_CUDA=ON \
  -DORACLE_SHARED_DIR="$shared"
step build 300 cmake --build "$build" -j "$(nproc)" --target oracle test_kernels_cuda test_pipeline_cuda test_sampler_cuda test_device_kv_cuda test_device_batch_cuda test_backend_graphs_cuda
step ctest_gpu 120 ctest --test-dir "$build" -L gpu --output-on-failure
# The kernel case registry on the device (docs/cuda.md "Kernel cases"): every check case
# bit for bit, then one case per op and version at llama-3-8B shapes timed with CUDA events
# (time per call, GB/s, GFLOP/s; attention's Auto and compaction's v1/v2 beside each other).
step kernels_check_cuda 90 bash -c "'$oracle' kernels --check --backend cuda --json >'$out/kernels_check_cuda.json'"
step kernels_bench_cuda 150 bash -c "'$oracle' kernels --bench --backend cuda --shapes model --reps 20 --json \
  >'$out/kernels_bench_cuda.json'"

# oracle diff on the real models, both modes (JSON reports kept).
m=$shared/models
diffs=(
  "stories260K|$m/stories260K/stories260K.bin|$m/stories260K/tok512.bin"
  "stories260K_gguf|$m/gguf/stories260K.gguf|"
  "stories260K_f16|$m/gguf/stories260K-f16.gguf|"
  "llama2xs|$m/llama2xs/llama2xs.bin|$m/stories260K/tok512.bin"
  "llama2xs_q8_0|$m/gguf/llama2xs-q8_0.gguf|"
  "llama2xs_q4_0|$m/gguf/llama2xs-q4_0.gguf|"
  "aidreams260K|$m/aidreams260K/aidreams260K.bin|$m/aidreams260K/tok512.bin"
  "smollm2_q4_1|$m/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|"
)
for entry in "${diffs[@]}"; do
  IFS='|' read -r name model tok <<<"$entry"
  targs=(); [ -n "$tok" ] && targs=(--tokenizer "$tok")
  if [ "$dry" = 1 ]; then need_file "$model"; [ -z "$tok" ] || need_file "$tok"; fi
  for mode in deterministic fast; do
    step "diff_${name}_${mode}" 60 bash -c "'$oracle' diff --backend cuda --mode $mode --model '$model' ${targs[*]} \
      --max-tokens 64 --json >'$out/diff_${name}_${mode}.json'"
  done
done

# Every golden record on the device: deterministic mode bit for bit (sampled records
# included), fast mode the greedy records within the bound (docs/cuda.md "Fast mode").
step golden_verify_cuda_deterministic 180 bash -c "'$oracle' golden verify golden --backend cuda --json \
  >'$out/golden_verify_cuda_deterministic.json'"
step golden_verify_cuda_fast 90 bash -c "'$oracle' golden verify golden --backend cuda --mode fast --json \
  >'$out/golden_verify_cuda_fast.json'"
# The ggml numerics profile's records (golden/ggml: the dp4a integer-dot matmul, docs/cuda.md
# "The ggml profile on the device"), deterministic mode, bit for bit.
step golden_verify_ggml_cuda 120 bash -c "'$oracle' golden verify golden/ggml --backend cuda --json \
  >'$out/golden_verify_ggml_cuda.json'"

# Benchmarks: the llama3-8b shape (its dims, heads, vocabulary) with 4 of its 32 blocks —
# the per-step bytes of a block are the full model's, and the whole model would not
# quantize inside the budget — in BF16 and Q4_K_M (oracle quantize from the f16 synth),
# context 1024. The device keeps the stored types (the dequantizing GEMV reads the file's
# bytes; decode_weight_bytes counts them). Both modes alternate in one run: each mode's
# tokens/s, the HBM bandwidth fraction and the determinism tax (anchors in docs/cuda.md).
synth="$bench_dir/llama3-8b-4l-f16.gguf"
[ -s "$synth" ] || step synth_llama3_8b_4l 120 "$oracle" synth --preset llama3-8b --layers 4 --dtype f16 -o "$synth"
for q in bf16 q4_k_m; do
  f="$bench_dir/llama3-8b-4l-$q.gguf"
  [ -s "$f" ] || step "quantize_llama3_8b_4l_$q" 150 "$oracle" quantize "$synth" "$f" --type "$q" --threads "$(nproc)"
  step "bench_llama3_8b_4l_${q}_both" 150 bash -c "'$oracle' bench --backend cuda --mode both --model '$f' \
    --context 1024 --prompt-tokens 256 --decode-tokens 64 --repetitions 2 --json >'$out/bench_llama3_8b_4l_${q}_both.json'"
done
# The decode-step graphs' speed-up (docs/cuda.md "CUDA graphs"): eager launches and graph
# replays alternate on Q4_K_M, deterministic mode; last, so a spent budget skips only it.
step bench_llama3_8b_4l_q4_k_m_graphs 90 bash -c "'$oracle' bench --backend cuda --cuda-graphs both \
  --model '$bench_dir/llama3-8b-4l-q4_k_m.gguf' --context 1024 --prompt-tokens 256 --decode-tokens 64 \
  --repetitions 2 --json >'$out/bench_llama3_8b_4l_q4_k_m_graphs.json'"

total=$(( $(date +%s) - started ))
{
  echo "{\"date\":\"$(date -u +%FT%TZ)\",\"commit\":\"$(git rev-parse HEAD 2>/dev/null)\",\"seconds\":$total,"
  if [ "$dry" = 1 ]; then
    echo "\"dry_run\":true,\"gpu_tools_absent\":\"$gpu_tools\",\"missing\":["
    (IFS=,; for x in "${missing[@]}"; do printf '"%s"\n' "$(json_str "$x")"; done | paste -sd,)
    echo "],"
  fi
  echo "\"gpu\":\"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)\",\"steps\":["
  (IFS=,; echo "${steps[*]}")
  echo "]}"
} >"$out/summary.json"
echo "gpu-check: ${total}s; summary in $out/summary.json"
if [ "$dry" = 1 ]; then
  [ ${#missing[@]} -eq 0 ] || { echo "gpu-check --dry-run: missing: ${missing[*]}" >&2; exit 1; }
  echo "gpu-check --dry-run: ${#steps[@]} steps, every tool and file present${gpu_tools:+ (no $gpu_tools here: needed on the GPU machine)}"
  exit 0
fi
failed=$(grep -o '"rc":[1-9][0-9]*' "$out/summary.json" | wc -l)
[ "$failed" -eq 0 ]
