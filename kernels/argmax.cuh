#pragma once
// ============================================================================
// Greedy argmax per row (deterministic, version 1).
//
// Formula:   out[r] = argmax_lowest(x[r, :], n): the lowest index among the
//            entries equal to the row maximum; NaN never wins; -1 when the row
//            has no non-NaN entry (or n == 0).
// Shapes:    x (R, n); out (R) int.
// Thread mapping: 16 consecutive threads per row, 128 threads per block.
// Reduction order: lane l scans k ≡ l (mod 16) upward keeping (value, index)
//            with `x == x && (best < 0 || x > m)`; lanes combine by a halving
//            tree with the tie rule "larger value wins, equal values keep the
//            lower index". Any order gives the same answer under this rule.
// Matches:   numerics/numerics.h argmax_lowest (docs/numerics.md §4 "Greedy").
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void argmax_rows(int* out, const float* x, int R, int n, cudaStream_t stream = nullptr);

// The same over the first counts[r] entries of row r of x (R, stride): the
// greedy selector over the surviving candidates (an index into them, not an id).
void argmax_rows_counted(int* out, const float* x, const int* counts, int R, int stride,
                         cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
