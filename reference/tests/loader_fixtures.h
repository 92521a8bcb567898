#pragma once
// Helpers for the loader tests: fixture lookup, a scratch directory, tensor by
// tensor comparison of two models, and a Hugging Face (config.json +
// model.safetensors) writer that applies HF's rotate-half permutation to q/k.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/model/model.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "test_support.h"

namespace oracle::test {

// ---- fixtures and scratch files -----------------------------------------------------------
inline std::string fixture(const std::string& rel) {
  const std::string path = models(rel);
  if (!have(path)) FAIL("missing fixture " << path << " (set ORACLE_SHARED_DIR)");
  return path;
}

// A fresh directory under /tmp, unique per process and tag, removed at scope exit.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("oracle_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

// ---- comparing weights ----------------------------------------------------------------------
struct NamedTensor {
  std::string name;
  const float* data;  // the values (for a non-F32 matrix: `values` dequantized)
  size_t n;
  const uint8_t* stored = nullptr;  // where the tensor lives (mapped file or owned)
  std::shared_ptr<std::vector<float>> values;
};

inline NamedTensor named(const std::string& name, const float* p, size_t n) {
  return {name, p, n, reinterpret_cast<const uint8_t*>(p), nullptr};
}

// A (rows, cols) matrix in any stored type, dequantized exactly.
inline NamedTensor named(const std::string& name, const WeightMatrix& w, size_t rows, size_t cols) {
  if (const float* f = w.f32()) return named(name, f, rows * cols);
  auto v = std::make_shared<std::vector<float>>(rows * cols);
  const int64_t rb = dtype_row_bytes(w.type, (int64_t)cols);
  for (size_t r = 0; r < rows; r++) dequantize_row(w.type, w.data + r * rb, (int64_t)cols, v->data() + r * cols);
  return {name, v->data(), rows * cols, w.data, v};
}

// Every tensor of the in-memory model as float32 values, in a fixed order.
inline std::vector<NamedTensor> weight_list(const Model& m) {
  const Config& c = m.config;
  const size_t dim = c.dim, hid = c.hidden_dim, q = size_t(c.n_heads) * c.head_dim;
  const size_t kv = size_t(c.n_kv_heads) * c.head_dim, vocab = c.vocab_size;
  std::vector<NamedTensor> list = {named("token_embedding", m.weights.token_embedding, vocab, dim)};
  for (int l = 0; l < c.n_layers; l++) {
    const LayerWeights& w = m.weights.layers[l];
    const std::string p = "layer" + std::to_string(l) + ".";
    list.push_back(named(p + "attn_norm", w.attn_norm, dim));
    list.push_back(named(p + "wq", w.wq, q, dim));
    list.push_back(named(p + "wk", w.wk, kv, dim));
    list.push_back(named(p + "wv", w.wv, kv, dim));
    list.push_back(named(p + "wo", w.wo, dim, q));
    list.push_back(named(p + "ffn_norm", w.ffn_norm, dim));
    list.push_back(named(p + "w_gate", w.w_gate, hid, dim));
    list.push_back(named(p + "w_down", w.w_down, dim, hid));
    list.push_back(named(p + "w_up", w.w_up, hid, dim));
  }
  list.push_back(named("final_norm", m.weights.final_norm, dim));
  list.push_back(named("classifier", m.weights.classifier, vocab, dim));
  return list;
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Bitwise comparison of got[i] with expect(want[i]); prints the first mismatches.
inline void compare_tensor(const std::string& name, const float* got, const float* want, size_t n,
                           const std::function<float(float)>& expect) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const float e = expect(want[i]);
    if (bits_of(got[i]) == bits_of(e)) continue;
    if (++bad <= 3)
      UNSCOPED_INFO(name << "[" << i << "]: got 0x" << std::hex << bits_of(got[i]) << " want 0x"
                         << bits_of(e) << std::dec << " (" << got[i] << " vs " << e << ")");
  }
  INFO(name << ": " << bad << " of " << n << " elements differ");
  CHECK(bad == 0);
}

inline float identity(float x) { return x; }
inline float round_fp16(float x) { return num::fp16_to_f32(num::f32_to_fp16(x)); }
inline float round_bf16(float x) { return num::bf16_to_f32(num::f32_to_bf16(x)); }

// Compares all tensors; `matrix_expect` applies to 2-D weights, norms use `norm_expect`.
inline void compare_models(const Model& got, const Model& want,
                           const std::function<float(float)>& matrix_expect,
                           const std::function<float(float)>& norm_expect = identity) {
  auto a = weight_list(got), b = weight_list(want);
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); k++) {
    REQUIRE(a[k].n == b[k].n);
    const bool norm = a[k].name.find("norm") != std::string::npos;
    compare_tensor(a[k].name, a[k].data, b[k].data, a[k].n, norm ? norm_expect : matrix_expect);
  }
}

inline void compare_configs(const Config& a, const Config& b) {
  CHECK(a.dim == b.dim);
  CHECK(a.hidden_dim == b.hidden_dim);
  CHECK(a.n_layers == b.n_layers);
  CHECK(a.n_heads == b.n_heads);
  CHECK(a.n_kv_heads == b.n_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.seq_len == b.seq_len);
  CHECK(bits_of(a.rope_theta) == bits_of(b.rope_theta));
  CHECK(bits_of(a.norm_eps) == bits_of(b.norm_eps));
  CHECK(a.tied_classifier == b.tied_classifier);
  CHECK(a.stop_on_bos == b.stop_on_bos);
}

// ---- Hugging Face writer ---------------------------------------------------------------------------
// convert_llama_weights_to_hf: w.view(n_heads, rows/n_heads/2, 2, cols).transpose(1, 2):
// HF row (h, a, b) = original row (h, b, a), a in {0,1}, b < head_dim/2.
inline std::vector<float> hf_permute(const float* w, int n_heads, int head_dim, int cols) {
  std::vector<float> out(size_t(n_heads) * head_dim * cols);
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; h++)
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < half; b++)
        std::memcpy(&out[(size_t(h) * head_dim + size_t(a) * half + b) * cols],
                    w + (size_t(h) * head_dim + 2 * size_t(b) + a) * cols, sizeof(float) * cols);
  return out;
}

struct HfTensor {
  std::string name;
  std::vector<int64_t> shape;  // torch order
  std::vector<float> values;
};

inline std::vector<HfTensor> hf_tensors(const Model& m, bool write_lm_head) {
  const Config& c = m.config;
  const int64_t dim = c.dim, hid = c.hidden_dim, hd = c.head_dim;
  const int64_t q = int64_t(c.n_heads) * hd, kv = int64_t(c.n_kv_heads) * hd;
  auto vec = [](const WeightMatrix& w, size_t n) { return std::vector<float>(w.f32(), w.f32() + n); };
  std::vector<HfTensor> t = {{"model.embed_tokens.weight", {c.vocab_size, dim},
                              vec(m.weights.token_embedding, size_t(c.vocab_size) * dim)}};
  for (int l = 0; l < c.n_layers; l++) {
    const LayerWeights& w = m.weights.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {dim}, vec(w.attn_norm, dim)});
    t.push_back({p + "self_attn.q_proj.weight", {q, dim}, hf_permute(w.wq.f32(), c.n_heads, hd, dim)});
    t.push_back({p + "self_attn.k_proj.weight", {kv, dim}, hf_permute(w.wk.f32(), c.n_kv_heads, hd, dim)});
    t.push_back({p + "self_attn.v_proj.weight", {kv, dim}, vec(w.wv, kv * dim)});
    t.push_back({p + "self_attn.o_proj.weight", {dim, q}, vec(w.wo, dim * q)});
    t.push_back({p + "post_attention_layernorm.weight", {dim}, vec(w.ffn_norm, dim)});
    t.push_back({p + "mlp.gate_proj.weight", {hid, dim}, vec(w.w_gate, hid * dim)});
    t.push_back({p + "mlp.down_proj.weight", {dim, hid}, vec(w.w_down, dim * hid)});
    t.push_back({p + "mlp.up_proj.weight", {hid, dim}, vec(w.w_up, hid * dim)});
  }
  t.push_back({"model.norm.weight", {dim}, vec(m.weights.final_norm, dim)});
  if (write_lm_head)
    t.push_back({"lm_head.weight", {c.vocab_size, dim}, vec(m.weights.classifier, size_t(c.vocab_size) * dim)});
  return t;
}

// dtype: "F32", "F16" or "BF16".
inline void append_values(std::vector<uint8_t>& out, const std::vector<float>& v, const std::string& dtype) {
  for (float x : v) {
    if (dtype == "F32") {
      uint32_t u = bits_of(x);
      for (int k = 0; k < 4; k++) out.push_back(uint8_t(u >> (8 * k)));
    } else {
      uint16_t h = dtype == "F16" ? num::f32_to_fp16(x) : num::f32_to_bf16(x);
      out.push_back(uint8_t(h & 0xff));
      out.push_back(uint8_t(h >> 8));
    }
  }
}

inline void write_safetensors(const std::string& path, const std::vector<HfTensor>& tensors,
                              const std::string& dtype) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<uint8_t> data;
  for (const HfTensor& t : tensors) {
    const size_t begin = data.size();
    append_values(data, t.values, dtype);
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::vector<uint8_t> file(8);
  const uint64_t n = text.size();
  for (int k = 0; k < 8; k++) file[k] = uint8_t(n >> (8 * k));
  file.insert(file.end(), text.begin(), text.end());
  file.insert(file.end(), data.begin(), data.end());
  write_bytes(path, file.data(), file.size());
}

inline void write_hf_config(const std::string& path, const Config& c, bool tied) {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
                      {"hidden_size", c.dim}, {"intermediate_size", c.hidden_dim},
                      {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
                      {"num_key_value_heads", c.n_kv_heads}, {"vocab_size", c.vocab_size},
                      {"max_position_embeddings", c.seq_len}, {"rms_norm_eps", 1e-5},
                      {"rope_theta", 10000.0}, {"hidden_act", "silu"}, {"tie_word_embeddings", tied},
                      {"rope_scaling", nullptr}};
  std::ofstream(path) << j.dump(2);
}

// Writes config.json + model.safetensors for `m` into dir.
inline void write_hf_model(const std::string& dir, const Model& m, const std::string& dtype, bool tied) {
  write_hf_config(dir + "/config.json", m.config, tied);
  write_safetensors(dir + "/model.safetensors", hf_tensors(m, !tied), dtype);
}

}  // namespace oracle::test
