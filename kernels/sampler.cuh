#pragma once
// ============================================================================
// Sampler on the device, version 1: temperature, then the Philox inverse-CDF
// draw (docs/sampling.md "Selection"); greedy when temperature <= 0. This is
// the whole-vocabulary fast path; the full chain (penalties, bias, bans,
// top-k/p, min-p over compacted candidates) is kernels/sampler_filter.cuh and
// kernels/sampler_edit.cuh, run by optimized::DeviceSampler. The rank sort and
// the draw below also take per-row candidate counts for that chain.
//
// Formula (per row r, n candidates = the whole vocabulary, id order):
//   temperature > 0: logit_k = div_rn(logit_k, T); p = softmax_canonical(logit);
//     order = candidates by (p desc, NaN last, id asc) — a total order, so any
//     correct sort gives the same permutation;
//     total = sequential add_rn of p in that order;
//     u = philox_uniform(seed, seq[r], pos[r], draw 0, kPurposeSample);
//     target = mul_rn(u, total); scan in order with a running add_rn sum and pick
//     the first id whose running sum is > target; the last id with p > 0 if none
//     (-1 if every p is 0 or NaN).
//   temperature <= 0: argmax_lowest of the logits (logits left untouched).
// Shapes:  logits (R, n), overwritten by the probabilities when T > 0;
//          seq, pos (R); workspace sample_workspace_ints(n, R) ints; out (R).
// Thread mapping: temperature — 1 thread / element; softmax — softmax_rows;
//          sort — one 256-thread block per row, bitonic network over the next
//          power of two (padding ranks last), __syncthreads between stages;
//          draw — 1 thread / row (the sequential sums).
// Matches: reference Temperature + DrawSelector (reference/sampling/sampler.cpp) and
//          GreedySelector for the chain with every other processor off.
// ============================================================================
#include <cstddef>
#include <cstdint>

#include "kernels/launch.h"

namespace oracle::kernels {

size_t sample_workspace_ints(int n, int R);  // ints (rank orders + uniforms)

void sample_rows(int* out, float* logits, const int* seq, const int* pos, int R, int n, float temperature,
                 uint64_t seed, int* workspace, cudaStream_t stream = nullptr);

// ---- building blocks (also used by kernels/speculative) ---------------------------
// Row stride of a rank-order array: the next power of two >= n.
int rank_order_stride(int n);
// order (R, rank_order_stride(n)): ids of each row of probs (R, n) in
// (p desc, NaN last, id asc) order (first n entries are the real ids).
void rank_sort_rows(int* order, const float* probs, int R, int n, cudaStream_t stream = nullptr);
// out[r] = inverse-CDF pick of row r with uniform u[r] (rule above; -1 if no p > 0).
void draw_rows(int* out, const float* probs, const int* order, const float* u, int R, int n,
               cudaStream_t stream = nullptr);
// The same over the first counts[r] of `stride` values per row (values (R, stride),
// order (R, rank_order_stride(stride))): sorts by any value array (logits or
// probs) with the same total order (value desc, NaN last, index asc); for the
// chain's candidates, kept in id order, index asc is id asc.
void rank_sort_rows_counted(int* order, const float* values, const int* counts, int R, int stride,
                            cudaStream_t stream = nullptr);
// The draw over the first counts[r] candidates; out[r] is an index into the row.
void draw_rows_counted(int* out, const float* probs, const int* counts, const int* order, const float* u, int R,
                       int stride, cudaStream_t stream = nullptr);
// u[r] = philox_uniform(seed, seq[r], pos[r], 0, purpose).
void philox_uniforms(float* u, const int* seq, const int* pos, int R, uint64_t seed, uint32_t purpose,
                     cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
