#!/bin/sh
# Numerics guard for the deterministic kernels (docs/cuda.md): compiles each
# kernel file to PTX for compute_80 and compute_90 with the deterministic
# flags and fails if any fused multiply-add, approximate or flush-to-zero
# float instruction appears.  Usage: check_ptx.sh NVCC SOURCE_ROOT OUT_DIR FILE.cu...
set -u
nvcc=$1 root=$2 out=$3
shift 3
mkdir -p "$out"
status=0
for f in "$@"; do
  for arch in 80 90; do
    ptx="$out/$(basename "$f" .cu)_$arch.ptx"
    if ! "$nvcc" -I"$root" -arch=compute_$arch -fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
         -std=c++17 -ptx "$root/kernels/$f" -o "$ptx"; then
      echo "FAIL: nvcc could not compile $f for compute_$arch"; status=1; continue
    fi
    bad=$(grep -nE 'fma\.rn\.f32|\.approx\.|\.ftz\.' "$ptx" | head -5)
    if [ -n "$bad" ]; then
      echo "FAIL: $f (compute_$arch) has non-IEEE float instructions:"; echo "$bad"; status=1
    else
      echo "ok: $f compute_$arch ($(grep -c 'rn\.f32' "$ptx") explicitly rounded f32 ops)"
    fi
  done
done
exit $status
