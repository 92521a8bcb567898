#!/usr/bin/env bash
# Builds and runs the roofline probes (kernel_probe.c: the reference's AVX-512
# stored-type matmul op sequence, bit-checked against the scalar canonical
# order) at SmolLM2-135M's shapes, 1 and 2 threads. Not part of the product
# build (needs gcc with -fopenmp and an AVX-512 CPU). Prints one line per case.
#   scripts/probes/run.sh [TYPES...]     (default: q4_1 q8_0 q5_0 f32 q4_k q6_k)
# Shapes: K = 576 (Q4_K / Q6_K: 1536, SmolLM2's ffn_down, the only tensors of
# those types in its Q4_K_M); decode streams about a whole model (134.5 M
# weights; F32: 58 M), its rows dealt to the threads in chunks of 576 rows
# (PROBE_CHUNK, as the oracle splits each matrix); prefill: rows in L2.
# Exit: 0 ok, 1 a probe's lanes differ from the scalar loop, 2 cannot build/run here.
set -euo pipefail
cd "$(dirname "$0")"
grep -q avx512f /proc/cpuinfo || { echo "run.sh: this CPU has no AVX-512 (the probe mirrors the AVX-512 path)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O3 -mavx512f -mavx2 -mfma -mf16c -ffp-contract=off -fopenmp kernel_probe.c -o "$out/kernel_probe" -lm || exit 2
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(q4_1 q8_0 q5_0 f32 q4_k q6_k)
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in "${types[@]}"; do
  # decode: a whole-model-sized stream (F32: 58 M weights, about 234 MB, is enough to leave the L3)
  rows=234376 k=576 prows=512
  [ "$t" = f32 ] && rows=100000
  case $t in q4_k|q6_k) rows=87568 k=1536 prows=128 ;; esac
  for th in 1 2; do
    PROBE_CHUNK=${PROBE_CHUNK:-576} OMP_NUM_THREADS=$th "$out/kernel_probe" "$t" decode "$rows" "$k" 10 || exit $?
    OMP_NUM_THREADS=$th "$out/kernel_probe" "$t" prefill "$prows" "$k" 50 || exit $?
  done
done
