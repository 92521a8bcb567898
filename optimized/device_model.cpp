// DeviceModel: weight upload and RoPE tables — see device_model.h.
#include "optimized/device_model.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "reference/compute/rope_table.h"
#include "reference/model/quant.h"

namespace oracle::optimized {
namespace {

void put(DeviceBuffer<float>& dst, const float* src, size_t n) {
  dst.resize(n);
  dst.upload(src, n);
}

// (N, K) stored-type rows -> float32 on the device, dequantized on the host
// through a bounded staging buffer (about 4 MiB), never a whole-model copy.
void put_dequantized(DeviceBuffer<float>& dst, const WeightMatrix& w, size_t N, size_t K) {
  dst.resize(N * K);
  if (const float* f = w.f32()) {  // F32: straight from the mapped file
    dst.upload(f, N * K);
    return;
  }
  const size_t row_bytes = (size_t)dtype_row_bytes(w.type, (int64_t)K);
  const size_t rows_per_chunk = std::max<size_t>(1, (size_t(1) << 20) / K);
  std::vector<float> stage(rows_per_chunk * K);  // (rows_per_chunk, K)
  for (size_t r0 = 0; r0 < N; r0 += rows_per_chunk) {
    const size_t n = std::min(rows_per_chunk, N - r0);
    for (size_t r = 0; r < n; r++)
      dequantize_row(w.type, w.data + (r0 + r) * row_bytes, (int64_t)K, stage.data() + r * K);
    dst.upload(stage.data(), n * K, r0 * K);
  }
}

}  // namespace

// With keep_quantized, every stored type but F32 and I8_ROW: the file's blocks as they
// are, for the dequantizing GEMV (kernels::matmul on their typed view); else float32.
void DeviceModel::put_matrix(DeviceMatrix& dst, const WeightMatrix& w, size_t N, size_t K) {
  const bool stored = kernels::matmul_reads(w.type);
  const bool float_type = w.type == DType::F16 || w.type == DType::BF16;
  if (options_.keep_quantized && stored && w.type != DType::F32 && !(float_type && options_.float_types_as_f32) &&
      K % (size_t)dtype_block_elems(w.type) == 0) {
    const size_t bytes = N * (size_t)dtype_row_bytes(w.type, (int64_t)K);
    dst.type = w.type;
    dst.quant.resize(bytes);
    dst.quant.upload(w.data, bytes);
    n_quantized_++;
    matrix_bytes_ += (double)bytes;
    return;
  }
  dst.type = DType::F32;
  put_dequantized(dst.f32, w, N, K);
  matrix_bytes_ += 4.0 * (double)N * (double)K;
}

DeviceModel::DeviceModel(const Model& model, const DeviceModelOptions& options)
    : options_(options), config_(model.config) {
  const Config& c = config_;
  const size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
  const Weights& w = model.weights;
  put_dequantized(token_embedding, w.token_embedding, c.vocab_size, c.dim);
  put(final_norm, w.final_norm, c.dim);
  put_matrix(classifier, w.classifier, c.vocab_size, c.dim);
  layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; l++) {
    const LayerWeights& s = w.layers[l];
    DeviceLayer& d = layers[l];
    put(d.attn_norm, s.attn_norm, c.dim);
    put_matrix(d.wq, s.wq, q_dim, c.dim);
    put_matrix(d.wk, s.wk, kv_dim, c.dim);
    put_matrix(d.wv, s.wv, kv_dim, c.dim);
    put_matrix(d.wo, s.wo, c.dim, q_dim);
    put(d.ffn_norm, s.ffn_norm, c.dim);
    put_matrix(d.w_gate, s.w_gate, c.hidden_dim, c.dim);
    put_matrix(d.w_down, s.w_down, c.dim, c.hidden_dim);
    put_matrix(d.w_up, s.w_up, c.hidden_dim, c.dim);
    if (s.bq) put(d.bq, s.bq, q_dim);
    if (s.bk) put(d.bk, s.bk, kv_dim);
    if (s.bv) put(d.bv, s.bv, kv_dim);
  }
  norm_bytes_ = 4.0 * ((2.0 * c.n_layers + 2.0) * c.dim);  // layer norms, final norm, one embedding row
  if (c.qkv_bias) norm_bytes_ += 4.0 * c.n_layers * (double)(q_dim + 2 * kv_dim);
  const int half = c.head_dim / 2;
  std::vector<float> cos_t((size_t)c.seq_len * half), sin_t((size_t)c.seq_len * half);
  for (int p = 0; p < c.seq_len; p++)
    (options_.ggml_rope ? rope_table_row_ggml : rope_table_row)(c, p, &cos_t[(size_t)p * half], &sin_t[(size_t)p * half]);
  rope_cos.upload(cos_t);
  rope_sin.upload(sin_t);
}

}  // namespace oracle::optimized
