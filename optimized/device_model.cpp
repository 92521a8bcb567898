// DeviceModel: weight upload and RoPE tables — see device_model.h.
#include "optimized/device_model.h"

#include "reference/ops.h"

namespace oracle::optimized {
namespace {

void put(DeviceBuffer<float>& dst, const float* src, size_t n) {
  dst.resize(n);
  dst.upload(src, n);
}

}  // namespace

DeviceModel::DeviceModel(const Model& model) : config_(model.config) {
  const Config& c = config_;
  const size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
  const Weights& w = model.weights;
  put(token_embedding, w.token_embedding, (size_t)c.vocab_size * c.dim);
  put(final_norm, w.final_norm, c.dim);
  put(classifier, w.classifier, (size_t)c.vocab_size * c.dim);
  layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; l++) {
    const LayerWeights& s = w.layers[l];
    DeviceLayer& d = layers[l];
    put(d.attn_norm, s.attn_norm, c.dim);
    put(d.wq, s.wq, q_dim * c.dim);
    put(d.wk, s.wk, kv_dim * c.dim);
    put(d.wv, s.wv, kv_dim * c.dim);
    put(d.wo, s.wo, (size_t)c.dim * q_dim);
    put(d.ffn_norm, s.ffn_norm, c.dim);
    put(d.w_gate, s.w_gate, (size_t)c.hidden_dim * c.dim);
    put(d.w_down, s.w_down, (size_t)c.dim * c.hidden_dim);
    put(d.w_up, s.w_up, (size_t)c.hidden_dim * c.dim);
  }
  const int half = c.head_dim / 2;
  std::vector<float> freqs(half), cos_t((size_t)c.seq_len * half), sin_t((size_t)c.seq_len * half);
  ops::rope_freqs(freqs.data(), c.rope_theta, c.head_dim);
  for (int p = 0; p < c.seq_len; p++)
    ops::rope_row(&cos_t[(size_t)p * half], &sin_t[(size_t)p * half], freqs.data(), c.head_dim, p);
  rope_cos.upload(cos_t);
  rope_sin.upload(sin_t);
}

}  // namespace oracle::optimized
