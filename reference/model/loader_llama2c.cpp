// llama2.c checkpoint (Karpathy's run.c "legacy" export): 7 int32 header
// dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
// (vocab_size < 0 => untied classifier stored last), then float32 tensors:
//   token_embedding (vocab, dim), rms_att (L, dim), wq (L, dim, dim),
//   wk (L, kv_dim, dim), wv (L, kv_dim, dim), wo (L, dim, dim), rms_ffn (L, dim),
//   w1 (L, hidden, dim), w2 (L, dim, hidden), w3 (L, hidden, dim), rms_final (dim),
//   freq_cis_real (seq_len, head_dim/2), freq_cis_imag (same)  [skipped],
//   wcls (vocab, dim)  [only when vocab_size < 0].
#include <cstring>

#include "base/errors.h"
#include "reference/model/loaders.h"
#include "base/escape.h"

namespace oracle {

namespace {

constexpr int64_t kMaxHeaderValue = int64_t(1) << 24;  // bounds every size product below 2^62

Config read_llama2c_header(const MappedFile& f) {
  int32_t h[7];
  std::memcpy(h, f.at(0, sizeof(h), "header"), sizeof(h));
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  // No magic in this format: a first field out of range means "not a checkpoint
  // at all" (a damaged GGUF, some other file) more often than a bad dim.
  require_input(h[0] > 0 && h[0] <= kMaxHeaderValue, f.path(), "magic",
                "neither a GGUF file (magic \"GGUF\") nor a llama2.c checkpoint: the first bytes '" +
                    escape_bytes(std::string(reinterpret_cast<const char*>(h), 4)) + "' read as header.dim = " +
                    std::to_string(h[0]) + ", out of range");
  for (int k = 0; k < 7; k++) {
    int64_t v = h[k] < 0 ? -int64_t(h[k]) : h[k];
    require_input(v > 0 && v <= kMaxHeaderValue, f.path(), std::string("header.") + names[k],
                  "value " + std::to_string(h[k]) + " out of range");
  }
  Config c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5] < 0 ? -h[5] : h[5];
  c.tied_classifier = h[5] > 0;
  c.seq_len = h[6];
  for (int k : {0, 1, 2, 3, 4, 6})
    require_input(h[k] > 0, f.path(), std::string("header.") + names[k], "must be positive");
  require_input(c.dim % c.n_heads == 0, f.path(), "header.n_heads",
                "dim " + std::to_string(c.dim) + " is not divisible by n_heads " + std::to_string(c.n_heads));
  c.head_dim = c.dim / c.n_heads;
  c.rope_theta = 10000.0f;
  c.norm_eps = 1e-5f;
  c.stop_on_bos = true;  // llama2.c stories are delimited by BOS
  return c;
}

// Walks the tensors in file order; each `take` checks the bytes exist.
struct Walker {
  const MappedFile& f;
  uint64_t pos = 28;
  std::vector<TensorInfo>* table;

  const float* take(const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const uint8_t* p = f.at(pos, uint64_t(n) * 4, name);
    pos += uint64_t(n) * 4;
    table->push_back(TensorInfo{name, DType::F32, shape, p, uint64_t(n) * 4});
    return reinterpret_cast<const float*>(p);
  }
};

std::string blk(int l, const char* what) { return "blk." + std::to_string(l) + "." + what + ".weight"; }

// Per-layer tensors are stored stacked: all layers of rms_att, then all wq, ...
template <class Member>
void take_stacked(Walker& wk, Model& m, const char* name, std::vector<int64_t> shape,
                  Member LayerWeights::*member) {
  for (int l = 0; l < m.config.n_layers; l++)
    m.weights.layers[l].*member = wk.take(blk(l, name), shape);
}

// The first stacked tensor (n_layers x rms_att) must fit in what is left
// before a slot per layer is allocated: a damaged n_layers (up to 2^24) must
// not cost gigabytes. A file cut later still names the tensor it was cut in.
void require_layers_fit(const Walker& wk, const Config& c) {
  const uint64_t left = wk.f.size() - wk.pos, per_layer = uint64_t(c.dim) * 4;
  require_input(uint64_t(c.n_layers) <= left / per_layer, wk.f.path(), "header.n_layers",
                std::to_string(c.n_layers) + " layers of rms_att need " +
                    std::to_string(uint64_t(c.n_layers) * per_layer) + " bytes, but " +
                    std::to_string(left) + " remain after the embedding");
}

void take_layers(Walker& wk, Model& m) {
  const Config& c = m.config;
  const int64_t dim = c.dim, hid = c.hidden_dim, kv = int64_t(c.n_kv_heads) * c.head_dim;
  require_layers_fit(wk, c);
  m.weights.layers.resize(c.n_layers);
  // shapes in ggml order (row length first), like TensorInfo::shape
  take_stacked(wk, m, "attn_norm", {dim}, &LayerWeights::attn_norm);
  take_stacked(wk, m, "attn_q", {dim, dim}, &LayerWeights::wq);
  take_stacked(wk, m, "attn_k", {dim, kv}, &LayerWeights::wk);
  take_stacked(wk, m, "attn_v", {dim, kv}, &LayerWeights::wv);
  take_stacked(wk, m, "attn_output", {dim, dim}, &LayerWeights::wo);
  take_stacked(wk, m, "ffn_norm", {dim}, &LayerWeights::ffn_norm);
  take_stacked(wk, m, "ffn_gate", {dim, hid}, &LayerWeights::w_gate);
  take_stacked(wk, m, "ffn_down", {hid, dim}, &LayerWeights::w_down);
  take_stacked(wk, m, "ffn_up", {dim, hid}, &LayerWeights::w_up);
}

void take_all(const MappedFile& f, Model& m) {
  const Config& c = m.config;
  Walker wk{f, 28, &m.tensors};
  m.weights.token_embedding = wk.take("token_embd.weight", {c.dim, c.vocab_size});
  take_layers(wk, m);
  m.weights.final_norm = wk.take("output_norm.weight", {c.dim});
  std::vector<TensorInfo> skipped;
  Walker legacy{f, wk.pos, &skipped};  // RoPE tables of old exports: not used
  legacy.take("freq_cis_real", {c.head_dim / 2, c.seq_len});
  legacy.take("freq_cis_imag", {c.head_dim / 2, c.seq_len});
  wk.pos = legacy.pos;
  m.weights.classifier = c.tied_classifier ? m.weights.token_embedding
                                           : wk.take("output.weight", {c.dim, c.vocab_size});
  require_input(wk.pos == f.size(), f.path(), "file size",
                std::to_string(f.size()) + " bytes but the header describes " +
                    std::to_string(wk.pos) + " (trailing data, or a wrong vocab_size sign)");
}

}  // namespace

Model load_llama2c(const std::string& path, const LoadOptions& options) {
  Model m;
  m.file = std::make_shared<MappedFile>(path, options.residency);
  m.path = path;
  m.format = "llama2c";
  m.config = read_llama2c_header(*m.file);
  validate_config(m.config, path);
  take_all(*m.file, m);
  apply_context_override(m.config, options, path);
  return m;
}

}  // namespace oracle
