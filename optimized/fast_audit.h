#pragma once
// ============================================================================
// Fast mode's per-op bound (docs/cuda.md "Fast mode: the derived bound").
//
// Fast mode changes only the matmuls (kernels::FastGemm: cuBLAS on the GPU);
// every other op is the deterministic kernel, bit-exact on its inputs. So the
// bound is stated per matmul output element, on that matmul's own inputs:
//   |out[t,i] - sum_k W[i,k] x[t,k]| <= b(K, precision) * sum_k |W[i,k] x[t,k]|
//                                      + K * 2^-149            (underflow)
// with, u = 2^-24 (float32 round to nearest):
//   F32  (CUBLAS_COMPUTE_32F, any summation order, with or without FMA, any
//         split-K into float32 partials): b = gamma_K = K u / (1 - K u)
//         (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
//         eq. 3.5: every term passes through at most K roundings);
//   TF32 (CUBLAS_COMPUTE_32F_FAST_TF32): inputs rounded to 10 stored mantissa
//         bits, conservatively by truncation (relative error < u_t = 2^-10);
//         products of two TF32 values are exact in float32 (11 x 11 <= 24 bits);
//         accumulation in float32, conservatively truncating (Fasi et al.,
//         "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021), unit 2u:
//         b = (1 + u_t)^2 (1 + gamma'_K) - 1, gamma'_K = 2Ku / (1 - 2Ku);
//   BF16 (CUBLAS_COMPUTE_32F_FAST_16BF): the same with 7 stored mantissa bits,
//         u_t = 2^-7 (truncation); BF16 products are exact in float32 (8 x 8 bits).
// The "exact" sum is computed in double: products of floats are exact in
// double, the sum adds gamma_K with u = 2^-53 to the allowance.
// FastAudit downloads each fast matmul's x, W (once per matrix) and out and
// records, per op, the worst ratio |error| / allowance (<= 1: within).
// ============================================================================
#include <map>
#include <string>
#include <vector>

#include "kernels/gemm_fast.cuh"

namespace oracle::optimized {

// b(K, precision) above.
double fast_gemm_rel_bound(int K, kernels::FastPrecision precision);

struct FastOpStats {
  int K = 0;
  double rel_bound = 0;     // b(K, precision)
  long long elements = 0;   // outputs checked
  long long over = 0;       // outputs beyond the allowance
  double worst_ratio = 0;   // max |error| / allowance
};

class FastAudit {
 public:
  explicit FastAudit(kernels::FastPrecision precision) : precision_(precision) {}
  // One fast matmul on the device: out (T, N) = x (T, K) · W^T, W (N, K).
  void check(const std::string& op, const float* x, const float* W, const float* out, int T, int K, int N);
  const std::map<std::string, FastOpStats>& ops() const { return ops_; }
  bool within() const;

 private:
  kernels::FastPrecision precision_;
  std::map<std::string, FastOpStats> ops_;
  std::map<const float*, std::vector<float>> weights_;  // host copies, by device pointer
};

}  // namespace oracle::optimized
