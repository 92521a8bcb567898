// Tensor-parallel slices (tensor_split.h): contiguous row ranges in rank order.
#include "reference/compute/tensor_split.h"

#include "reference/model/quant.h"

namespace oracle {

RowRange split_range(int n, int rank, int ranks) {
  const int base = n / ranks, extra = n % ranks;
  const int begin = rank * base + (rank < extra ? rank : extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

SliceLayout slice_layout(const Config& c, int rank, int ranks) {
  SliceLayout s;
  const int group = c.n_heads / c.n_kv_heads;  // query heads per kv head
  s.kv_heads = split_range(c.n_kv_heads, rank, ranks);
  s.q_rows = {s.kv_heads.begin * group * c.head_dim, s.kv_heads.end * group * c.head_dim};
  s.kv_rows = {s.kv_heads.begin * c.head_dim, s.kv_heads.end * c.head_dim};
  s.dim_rows = split_range(c.dim, rank, ranks);
  s.hidden_rows = split_range(c.hidden_dim, rank, ranks);
  s.vocab_rows = split_range(c.vocab_size, rank, ranks);
  return s;
}

Config kv_slice_config(const Config& c, const TensorSplit* split) {
  if (!split || split->ranks <= 1) return c;
  Config k = c;
  k.n_kv_heads = slice_layout(c, split->rank, split->ranks).kv_heads.size();
  return k;
}

namespace {

uint64_t rows_bytes(const WeightMatrix& w, RowRange r, int k) {
  return (uint64_t)r.size() * (uint64_t)dtype_row_bytes(w.type, k);
}

}  // namespace

uint64_t slice_weight_bytes(const Model& m, const SliceLayout& s) {
  const Config& c = m.config;
  uint64_t b = (uint64_t)(2 * c.n_layers + 1) * c.dim * sizeof(float);  // norms: every rank
  for (const LayerWeights& w : m.weights.layers) {
    b += rows_bytes(w.wq, s.q_rows, c.dim) + rows_bytes(w.wk, s.kv_rows, c.dim) + rows_bytes(w.wv, s.kv_rows, c.dim);
    b += rows_bytes(w.wo, s.dim_rows, c.n_heads * c.head_dim);
    b += rows_bytes(w.w_gate, s.hidden_rows, c.dim) + rows_bytes(w.w_up, s.hidden_rows, c.dim);
    b += rows_bytes(w.w_down, s.dim_rows, c.hidden_dim);
  }
  return b + rows_bytes(m.weights.classifier, s.vocab_rows, c.dim);
}

}  // namespace oracle
