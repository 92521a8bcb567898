#pragma once
// ============================================================================
// Tensor-parallel slicing of the forward pass (docs/scale.md). Rank r of R
// computes only its rows of every weight matrix's output, each output element
// whole, in the canonical order (one dot product per element, as with R = 1):
//   q, k, v, attention   by KV-head groups: kv heads H_kv(r), query heads
//                        H_kv(r) * group (heads stay whole on one rank)
//   o, down              rows of dim
//   gate, up             rows of hidden_dim
//   LM head              rows of vocab_size
// and the pieces are all-gathered (exact copies) before the next op that needs
// the whole vector. So the logits are the same bits for every R. The reference
// never communicates itself: `all_gather` is supplied by the caller
// (distributed/tensor_parallel.h binds it to MPI or to in-process threads).
// ============================================================================
#include <functional>
#include <span>

#include "reference/model/model.h"

namespace oracle {

struct RowRange {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};

// Rows [begin, end) of n for `rank` of `ranks`: contiguous, in rank order;
// the first n % ranks ranks get one row more (uneven splits; a rank may get none).
RowRange split_range(int n, int rank, int ranks);

// One rank's slices (in output rows of each matrix).
struct SliceLayout {
  RowRange kv_heads;  // of n_kv_heads
  RowRange q_rows;    // of n_heads * head_dim: the query heads of those kv heads
  RowRange kv_rows;   // of n_kv_heads * head_dim
  RowRange dim_rows;  // of dim (wo, w_down)
  RowRange hidden_rows;  // of hidden_dim (w_gate, w_up)
  RowRange vocab_rows;   // of vocab_size (classifier)
};
SliceLayout slice_layout(const Config& c, int rank, int ranks);

struct TensorSplit {
  int rank = 0, ranks = 1;
  // all = every rank's `mine` concatenated in rank order (exact copies), on every
  // rank; counts[r] = floats from rank r. Collective: every rank calls it in the same order.
  std::function<void(std::span<const float> mine, std::span<const int> counts, float* all)> all_gather;
};

// The config a rank's KV cache is built with: n_kv_heads = its kv-head slice
// (the cache then holds only its K/V: KV bytes / ranks, up to rounding).
Config kv_slice_config(const Config& c, const TensorSplit* split);

// Bytes of the weight rows a rank reads: its slices of every matrix, plus what
// every rank holds whole (norms, its embedding rows are read on demand).
uint64_t slice_weight_bytes(const Model& m, const SliceLayout& s);

}  // namespace oracle
