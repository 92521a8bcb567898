// DeviceModel: weight upload and RoPE tables — see device_model.h.
#include "optimized/device_model.h"

#include <cstring>
#include <string>

#include "reference/compute/ops.h"
#include "reference/model/quant.h"

namespace oracle::optimized {
namespace {

void put(DeviceBuffer<float>& dst, const float* src, size_t n) {
  dst.resize(n);
  dst.upload(src, n);
}

const TensorInfo* find_tensor(const Model& m, const std::string& name) {
  for (const TensorInfo& t : m.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// Raw Q8_0/Q4_0 blocks of `name` if they dequantize to exactly `w` (N, K).
bool put_quantized(DeviceMatrix& dst, const Model& m, const std::string& name, const float* w, size_t N,
                   size_t K) {
  const TensorInfo* t = find_tensor(m, name);
  if (!t || (t->type != DType::Q8_0 && t->type != DType::Q4_0) || K % 32 != 0) return false;
  const size_t bytes = N * (K / 32) * (t->type == DType::Q8_0 ? 34 : 18);
  if (t->n_bytes != bytes) return false;
  std::vector<float> deq(N * K);  // (N, K)
  dequantize_row(t->type, t->data, (int64_t)(N * K), deq.data());
  if (std::memcmp(deq.data(), w, N * K * sizeof(float)) != 0) return false;
  dst.type = t->type;
  dst.quant.resize(bytes);
  dst.quant.upload(t->data, bytes);
  return true;
}

}  // namespace

void DeviceModel::put_matrix(DeviceMatrix& dst, const Model& m, const std::string& name, const float* w,
                             size_t N, size_t K) {
  if (options_.keep_quantized && put_quantized(dst, m, name, w, N, K)) {
    n_quantized_++;
    return;
  }
  dst.type = DType::F32;
  put(dst.f32, w, N * K);
}

DeviceModel::DeviceModel(const Model& model, const DeviceModelOptions& options)
    : options_(options), config_(model.config) {
  const Config& c = config_;
  const size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
  const Weights& w = model.weights;
  put(token_embedding, w.token_embedding, (size_t)c.vocab_size * c.dim);
  put(final_norm, w.final_norm, c.dim);
  put_matrix(classifier, model, c.tied_classifier ? "token_embd.weight" : "output.weight", w.classifier,
             c.vocab_size, c.dim);
  layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; l++) {
    const LayerWeights& s = w.layers[l];
    DeviceLayer& d = layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";  // GGUF tensor names
    put(d.attn_norm, s.attn_norm, c.dim);
    put_matrix(d.wq, model, p + "attn_q.weight", s.wq, q_dim, c.dim);
    put_matrix(d.wk, model, p + "attn_k.weight", s.wk, kv_dim, c.dim);
    put_matrix(d.wv, model, p + "attn_v.weight", s.wv, kv_dim, c.dim);
    put_matrix(d.wo, model, p + "attn_output.weight", s.wo, c.dim, q_dim);
    put(d.ffn_norm, s.ffn_norm, c.dim);
    put_matrix(d.w_gate, model, p + "ffn_gate.weight", s.w_gate, c.hidden_dim, c.dim);
    put_matrix(d.w_down, model, p + "ffn_down.weight", s.w_down, c.dim, c.hidden_dim);
    put_matrix(d.w_up, model, p + "ffn_up.weight", s.w_up, c.hidden_dim, c.dim);
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
