#pragma once
// ============================================================================
// Fast-mode GEMM (NOT deterministic across implementations; docs/cuda.md
// "Fast mode"). Used only when a Backend runs in Mode::Fast.
//
// Formula: out[t, i] = sum_k W[i, k] * x[t, k] in an unspecified order.
// Shapes:  W (N, K) row-major; x (T, K); out (T, N) — as matmul_f32.
// GPU:     cuBLAS cublasGemmEx (column-major view: out^T = W^T' * x^T,
//          op(A) = T on W with lda = K, B = x with ldb = K, C ldc = N),
//          FP32 storage; compute CUBLAS_COMPUTE_32F (F32) or
//          CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores).
// Emulation: there is no cuBLAS on the host. The stand-in is one thread per
//          output computing a sequential fmaf chain in increasing k — a
//          different order from the canonical one, so the bound machinery is
//          exercised, but its error is NOT cuBLAS's: bounds measured on the
//          emulation say nothing about the GPU.
// Matches: nothing bit for bit; held to the bounds documented in docs/cuda.md.
// ============================================================================
#include <memory>

#include "kernels/launch.h"

namespace oracle::kernels {

enum class FastPrecision { F32, TF32 };

class FastGemm {
 public:
  FastGemm();
  ~FastGemm();
  FastGemm(const FastGemm&) = delete;
  FastGemm& operator=(const FastGemm&) = delete;
  void run(float* out, const float* x, const float* W, int T, int K, int N, FastPrecision precision,
           cudaStream_t stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oracle::kernels
