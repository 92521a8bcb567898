#pragma once
// ============================================================================
// Elementwise ops: SwiGLU and residual add (version 1).
//
// Formulas:  swiglu:   h[k] = mul_rn(silu_canonical(gate[k]), up[k]),
//                      silu(x) = div_rn(x, add_rn(1.0f, exp_canonical(-x)));
//            residual: x[k] = add_rn(x[k], y[k]).
// Shapes:    flat arrays of n = T * width elements; h may alias gate or up.
// Thread mapping: one thread per element, 256 per block.
// Reduction order: none.
// Matches:   docs/numerics.md §4 "SwiGLU" and "Residual" bit for bit.
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void swiglu(const float* gate, const float* up, float* h, long long n, cudaStream_t stream = nullptr);
void residual_add(float* x, const float* y, long long n, cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
