#pragma once
// ============================================================================
// Log-probabilities on the device, version 1 (docs/sampling.md "Logprobs"):
// the raw (whole vocabulary) and processed (surviving candidates) log-softmax
// and the 1-based rank of the emitted token.
//
// Formula (row r, its first n = counts ? counts[r] : stride entries x):
//   m = x[argmax_lowest(x)] (the first maximum in index order: the value
//       max_fixed_order returns, sign of zero included); no non-NaN entry or
//       !(m > -inf): every output is -inf (fully masked row);
//   s = sum_fixed_order(exp_canonical(sub_rn(x_k, m)));  log_s = log_canonical(s);
//   out_k = sub_rn(sub_rn(x_k, m), log_s).
// rank: order (from rank_sort_rows_counted over out: logprob desc, NaN last,
//   index asc) -> rank[r] = 1 + the position of target[r] in the row's order;
//   0 when target[r] < 0 or not among the first n.
// Shapes:  x, out (R, stride); counts (R) or null; order (R, rank_order_stride(stride));
//          target, rank (R).
// Thread mapping: log-softmax 16 consecutive threads / row (lane = k mod 16),
//          128 threads / block; rank 1 thread / row.
// Reduction order: max — lanes keep (value, lowest index) with the argmax tie
//          rule, combined by the halving tree (kernels/argmax.cuh); sum — the
//          canonical 16-lane order (kernels/lane_group.cuh).
// Tie rule: equal maxima keep the lowest index; ranks follow the rank order.
// Matches: reference log_softmax_canonical and logprob_report's rank
//          (reference/sampling/logprobs.cpp) bit for bit.
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void log_softmax_rows_counted(float* out, const float* x, const int* counts, int R, int stride,
                              cudaStream_t stream = nullptr);
void rank_position_rows(int* rank, const int* order, const int* counts, const int* target, int R, int stride,
                        cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
