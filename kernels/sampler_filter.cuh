#pragma once
// ============================================================================
// The sampler chain's candidates and filters on the device, version 1:
// candidate arrays, compaction, and the top-k / top-p / min-p marks
// (docs/sampling.md). A row's candidates are ids (R, stride) in increasing id
// order with their logits (R, stride); counts[r] of them are alive. Filters
// mark keep (R, stride) and candidates_compact erases the unmarked ones, never
// reordering — so every later softmax runs over the survivors in id order,
// exactly as the reference's Candidates (erase, never reorder).
//
// Formulas (row r, n = counts[r], order = the row's rank order from
// rank_sort_rows_counted, kernels/sampler.cuh: (value desc, NaN last, index asc),
// index asc == id asc because candidates stay in id order):
//   init:     ids[k] = k, x[k] = logits[k], counts = n (the whole vocabulary).
//   compact:  the candidates with keep != 0, in their order; counts = how many.
//             Version 1 (Serial): 1 thread / row, one loop. Version 2 (Block): 1 block of
//             256 threads / row over chunks of 256 entries; a survivor's slot is the
//             survivors before it (warp ballot + popc, then the earlier warps' totals):
//             integer counts, so both versions write the same arrays. Auto: Block when a
//             row is longer than one chunk (stride > 256), else Serial.
//   top_k:    (order by logit) k' = the effective k (llamacpp: k; hf: max(k, min_keep));
//             k' >= n: every candidate kept. Else keep ranks 0..k'-1; hf also keeps
//             every logit >= logit[order[k'-1]] (boundary ties stay).
//   top_p:    (probs = softmax_rows_counted of the logits, order by prob)
//             llamacpp: cum = 0; for rank i: cum = add_rn(cum, p); the first i with
//               cum >= p and i + 1 >= min_keep ends the prefix: keep ranks 0..i
//               (no such i: keep all).
//             hf: threshold = sub_rn(1, p); scan ranks n-1 .. 0 with cum = add_rn(cum, p):
//               keep = !(cum <= threshold); then the top min_keep ranks are kept.
//   min_p:    hf (probs, order by prob): pmax = max prob (`p > pmax` from 0);
//               keep = !(p < mul_rn(min_p, pmax)); then the top min_keep ranks.
//             llamacpp (logits, order by logit): m = max logit (`x > m` from -inf);
//               keep = x >= add_rn(m, log_canonical(min_p)); then the top
//               max(min_keep, 1) ranks.
//   scatter:  the dense processed distribution (reference ProcessedDistribution):
//             out[r, v] = probs[r, j] if ids[r, j] == v for some j < n (binary search:
//             ids are increasing), else 0; one-hot (selected non-null, greedy
//             configs): out[r, v] = 1 iff v == ids[r, selected[r]], else 0.
// Shapes:  ids, x, keep, probs (R, stride); counts (R); order (R, rank_order_stride(stride));
//          scatter: out (R, vocab), selected (R) candidate indices.
// Thread mapping: init, top_k and scatter 1 thread / (row, entry); compaction v2 1 block
//          / row; compaction v1, top_p and min_p 1 thread / row (top-p's sum is sequential
//          by definition).
// Reduction order: the sequential add_rn sums above, in rank order; maxima are
//          order-independent values.
// Tie rule: the rank order's (lowest id first); hf top-k's boundary ties stay.
// Matches: reference TopK, TopP, MinP and keep_only / keep_top
//          (reference/sampling/sampler_processors.cpp) bit for bit; scatter:
//          ProcessedDistribution (reference/generate/speculative.cpp) given the
//          processed candidates and their softmax (or the greedy selection).
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void candidates_init(int* ids, float* x, int* counts, const float* logits, int R, int n,
                     cudaStream_t stream = nullptr);
enum class CompactVersion { Auto, Serial, Block };
void candidates_compact(int* ids, float* x, int* counts, const int* keep, int R, int stride,
                        cudaStream_t stream = nullptr, CompactVersion version = CompactVersion::Auto);
// k: the effective k (> 0).
void top_k_mark(int* keep, const float* x, const int* order, const int* counts, int k, bool hf, int R, int stride,
                cudaStream_t stream = nullptr);
void top_p_mark(int* keep, const float* probs, const int* order, const int* counts, float p, int min_keep, bool hf,
                int R, int stride, cudaStream_t stream = nullptr);
// Dense (R, vocab) distribution of the candidates; selected null: their probs; else one-hot.
void candidates_scatter(float* out, const int* ids, const float* probs, const int* counts, const int* selected,
                        int R, int stride, int vocab, cudaStream_t stream = nullptr);
// values: probs (hf) or logits (llamacpp), ranked by `order` over the same values.
void min_p_mark(int* keep, const float* values, const int* order, const int* counts, float min_p, int min_keep,
                bool hf, int R, int stride, cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
