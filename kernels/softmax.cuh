#pragma once
// ============================================================================
// Row softmax for sampling (deterministic, version 1).
//
// Formula:   m = max over the row (NaN skipped); if !(m > -inf) the row is
//            fully masked and becomes all zeros (row_sum 0); otherwise
//            e_k = exp_canonical(sub_rn(x_k, m)); s = sum_fixed_order(e);
//            p_k = div_rn(e_k, s). row_sum[r] = s when row_sum is not null.
// Shapes:    x (R, n) in place; row_sum (R) or nullptr.
// Thread mapping: 16 consecutive threads per row (thread = lane k mod 16),
//            128 threads per block = 8 rows.
// Reduction order: max — each lane scans its k in increasing order
//            (`if (x > m) m = x` from -inf), lanes combine by a halving tree;
//            the maximum's value is order-independent (only the sign of a zero
//            maximum could differ, and x - (+0) == x - (-0) for every x that
//            reaches exp, so no result bit depends on it). sum — canonical
//            16-lane order of sum_fixed_order (lane_group.cuh).
// Matches:   numerics/numerics.h softmax_canonical bit for bit.
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void softmax_rows(float* x, float* row_sum, int R, int n, cudaStream_t stream = nullptr);

// The same formula over the first counts[r] entries of row r of x (R, stride),
// written to out (R, stride) (the sampler's compute_probs over the surviving
// candidates, which stay in id order: kernels/sampler_filter.cuh). Entries past
// counts[r] are neither read nor written; counts[r] == 0 writes nothing.
void softmax_rows_counted(float* out, const float* x, const int* counts, int R, int stride,
                          cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
