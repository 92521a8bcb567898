#!/bin/sh
# Numerics guard for the deterministic kernels (docs/cuda.md): compiles each
# kernel file to PTX for compute_80 and compute_90 with the deterministic
# flags (-fmad=false: nvcc never contracts, so every fma.rn.f32 left in the
# PTX is an explicit __fmaf_rn) and fails if
#   * any approximate or flush-to-zero float instruction appears, or
#   * a file outside FMA_FILES has a fused multiply-add, or a file in
#     FMA_FILES has none (numerics v2: the dot lanes, attention's p·v and
#     merge, dequantization with an offset are one fma each — docs/numerics.md
#     §1's per-op table; every other kernel is mul_rn/add_rn only).
# Usage: check_ptx.sh NVCC SOURCE_ROOT OUT_DIR FILE.cu...
set -u
nvcc=$1 root=$2 out=$3
shift 3
# matmul: dot lanes + offset dequantization; attention: q·k, p·v, merge;
# rmsnorm: the sum of squares (a canonical dot); matmul_ggml: the ggml profile's
# per-block combine (docs/numerics.md §5.2). gemm_fast: fast mode (its
# stand-in is an fmaf chain by definition; not the deterministic contract).
FMA_FILES="matmul.cu matmul_ggml.cu attention.cu rmsnorm.cu gemm_fast.cu"
mkdir -p "$out"
status=0
for f in "$@"; do
  for arch in 80 90; do
    ptx="$out/$(basename "$f" .cu)_$arch.ptx"
    if ! "$nvcc" -I"$root" -arch=compute_$arch -fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
         -std=c++17 -ptx "$root/kernels/$f" -o "$ptx"; then
      echo "FAIL: nvcc could not compile $f for compute_$arch"; status=1; continue
    fi
    bad=$(grep -nE '\.approx\.|\.ftz\.' "$ptx" | head -5)
    n_fma=$(grep -cE 'fma\.rn\.f32' "$ptx")
    case " $FMA_FILES " in *" $f "*) fma_ok=1 ;; *) fma_ok=0 ;; esac
    if [ -n "$bad" ]; then
      echo "FAIL: $f (compute_$arch) has non-IEEE float instructions:"; echo "$bad"; status=1
    elif [ "$fma_ok" = 0 ] && [ "$n_fma" -gt 0 ]; then
      echo "FAIL: $f (compute_$arch) has $n_fma fma.rn.f32, but the contract puts no fma in it:"
      grep -nE 'fma\.rn\.f32' "$ptx" | head -5; status=1
    elif [ "$fma_ok" = 1 ] && [ "$f" != gemm_fast.cu ] && [ "$n_fma" -eq 0 ]; then
      echo "FAIL: $f (compute_$arch) has no fma.rn.f32, but its contract is fused multiply-adds"; status=1
    else
      echo "ok: $f compute_$arch ($(grep -c 'rn\.f32' "$ptx") explicitly rounded f32 ops, $n_fma fma)"
    fi
  done
done
exit $status
