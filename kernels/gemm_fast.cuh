#pragma once
// ============================================================================
// Fast-mode GEMM (NOT deterministic across implementations; docs/cuda.md
// "Fast mode"). Used only when a Backend runs in Mode::Fast.
//
// Formula: out[t, i] = sum_k W[i, k] * x[t, k] in an unspecified order.
// Shapes:  W (N, K) row-major; x (T, K); out (T, N) — as kernels::matmul on an F32 view.
// GPU:     cuBLAS cublasGemmEx (column-major view: out^T = W^T' * x^T,
//          op(A) = T on W with lda = K, B = x with ldb = K, C ldc = N),
//          FP32 storage; compute CUBLAS_COMPUTE_32F (F32),
//          CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores) or
//          CUBLAS_COMPUTE_32F_FAST_16BF (inputs converted to BF16, tensor cores).
// Emulation: there is no cuBLAS on the host. The stand-in is one thread per
//          output computing a sequential fmaf chain in increasing k, on the
//          inputs rounded (to nearest even) to TF32's 10 or BF16's 7 stored
//          mantissa bits for those precisions — a different order from the
//          canonical one and the precision's input rounding, so the per-op
//          bound (optimized/fast_audit.h) is exercised, but its error is NOT
//          cuBLAS's: numbers measured on the emulation say nothing about the GPU.
// Matches: nothing bit for bit; held to the bounds documented in docs/cuda.md.
// ============================================================================
#include <cstdint>
#include <memory>

#include "numerics/numerics.h"

#include "kernels/launch.h"

namespace oracle::kernels {

enum class FastPrecision { F32, TF32, BF16 };

// x rounded to nearest even at `bits` stored mantissa bits (23: unchanged); finite x only
// changes, NaN and infinity pass through. The emulated stand-in's TF32 (10) / BF16 (7) input.
ORACLE_HD float round_mantissa(float x, int bits) {
  uint32_t u = oracle::num::f32_bits(x);
  if (bits >= 23 || (u & 0x7f800000u) == 0x7f800000u) return x;
  const int drop = 23 - bits;
  const uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
  u = (u + half - 1 + lsb) & ~((1u << drop) - 1);  // carries into the exponent as rounding should
  return oracle::num::f32_from_bits(u);
}

class FastGemm {
 public:
  FastGemm();
  ~FastGemm();
  FastGemm(const FastGemm&) = delete;
  FastGemm& operator=(const FastGemm&) = delete;
  void run(float* out, const float* x, const float* W, int T, int K, int N, FastPrecision precision,
           cudaStream_t stream = nullptr);

  struct Impl;  // cuBLAS handle and its dlopen'ed function table (gemm_fast.cu)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace oracle::kernels
