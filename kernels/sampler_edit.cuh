#pragma once
// ============================================================================
// The sampler chain's logit edits on the device, version 1: logit bias, the
// banned-id mark, penalties and temperature (docs/sampling.md, the processor
// table). They work on the chain's candidate arrays (kernels/sampler_filter.cuh):
// ids (R, stride) in increasing id order, logits (R, stride), counts (R) — only
// the first counts[r] entries of row r are candidates.
//
// Formulas (per row r, candidate k < counts[r], id = ids[r, k], x = logits[r, k]):
//   logit_bias:  for j = 0 .. n_bias-1 in list order: if bias_ids[j] == id:
//                x = add_rn(x, bias[j])   (a listed id absent from the candidates: nothing)
//   banned:      keep[r, k] = id not in banned (sorted ids, binary search)
//   penalties:   window over history h = histories[offsets[r] .. offsets[r+1]):
//                window < 0: all of it; 0: the processor is off (not launched);
//                else its last min(window, len) tokens. seen[id] = occurrences in the
//                window. If seen[id] > 0:
//                  x = x <= 0 ? mul_rn(x, rep) : div_rn(x, rep)
//                  x = sub_rn(x, add_rn(mul_rn((float)seen, freq), pres))
//   temperature: x = div_rn(x, T) (T > 0; T <= 0 is left to the greedy selector)
// Shapes:  ids, logits, keep (R, stride); counts (R); bias_ids, bias (n_bias);
//          banned (n_banned) sorted ascending; histories (offsets[R]) ints,
//          offsets (R + 1); seen workspace (R, vocab) ints, vocab == stride.
// Thread mapping: 1 thread / (row, candidate) for the edits and the mark;
//          penalties count their window in 1 thread / row (sequential, no
//          atomics), after a memset of `seen`.
// Reduction order: none (each candidate's edits are a fixed sequence of
//          roundings: the bias entries in list order).
// Tie rule: n/a.
// Matches: reference LogitBias, Banned (its mark; the erase is
//          candidates_compact), Penalties, Temperature
//          (reference/sampling/sampler_processors.cpp) bit for bit.
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void logit_bias_rows(float* logits, const int* ids, const int* counts, const int* bias_ids, const float* bias,
                     int n_bias, int R, int stride, cudaStream_t stream = nullptr);
void banned_mark_rows(int* keep, const int* ids, const int* counts, const int* banned, int n_banned, int R,
                      int stride, cudaStream_t stream = nullptr);
void penalties_rows(float* logits, int* seen, const int* ids, const int* counts, const int* histories,
                    const int* offsets, int window, float rep, float freq, float pres, int R, int stride,
                    cudaStream_t stream = nullptr);
void temperature_rows(float* logits, const int* counts, float t, int R, int stride, cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
