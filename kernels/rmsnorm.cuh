#pragma once
// ============================================================================
// RMSNorm (deterministic, version 1).
//
// Formula:   ss = dot_canonical(x, x, n); ms = div_rn(ss, (float)n);
//            r = div_rn(1.0f, sqrt_rn(add_rn(ms, eps)));
//            out[k] = mul_rn(mul_rn(x[k], r), w[k]).
// Shapes:    x (T, n), w (n), out (T, n); out may alias x.
// Thread mapping: 16 consecutive threads per token (thread = lane k mod 16),
//            128 threads per block = 8 tokens.
// Reduction order: canonical 16-lane dot of x with itself (lane_group.cuh),
//            broadcast from lane 0; every lane then computes the same r.
// Matches:   docs/numerics.md §4 "RMSNorm" (reference rmsnorm) bit for bit.
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void rmsnorm(float* out, const float* x, const float* w, int T, int n, float eps,
             cudaStream_t stream = nullptr);

// The ggml numerics profile's RMSNorm (docs/numerics.md §5.2; ggml_compute_forward_rms_norm_f32):
//   sum = Σ_k (double)mul_rn(x[k], x[k]) in float64, increasing k, from +0;
//   mean = (float)(sum / (double)n); r = div_rn(1.0f, sqrt_rn(add_rn(mean, eps)));
//   out[k] = mul_rn(mul_rn(x[k], r), w[k]).
// Shapes as rmsnorm (out may alias x). Thread mapping: one thread per token (the float64
// sum is one sequential chain), 128 threads per block. Matches reference/compute/
// qmatmul_ggml.h rmsnorm_ggml bit for bit.
void rmsnorm_ggml(float* out, const float* x, const float* w, int T, int n, float eps,
                  cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
