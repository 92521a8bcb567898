#pragma once
// ============================================================================
// Elementwise ops: SwiGLU, residual add, projection bias add (version 1).
//
// Formulas:  swiglu:   h[k] = mul_rn(silu_canonical(gate[k]), up[k]),
//                      silu(x) = div_rn(x, add_rn(1.0f, exp_canonical(-x)));
//            residual: x[k] = add_rn(x[k], y[k]).
//            bias:     y[r*width + k] = add_rn(y[r*width + k], b[k])  (qwen2 q/k/v).
// Shapes:    flat arrays of n = T * width elements; h may alias gate or up.
// Thread mapping: one thread per element, 256 per block.
// Reduction order: none.
// Matches:   ops::swiglu, ops::residual, ops::add_bias (reference/compute/ops.h) bit for bit
//            (docs/numerics.md §4 "SwiGLU", "Residual", §4.3 "Bias").
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void swiglu(float* h, const float* gate, const float* up, long long n, cudaStream_t stream = nullptr);
void residual_add(float* x, const float* y, long long n, cudaStream_t stream = nullptr);
// y (T, n), b (n).
void add_bias_rows(float* y, const float* b, int T, int n, cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
