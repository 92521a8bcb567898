// GGUF -> Model for the `llama` and `qwen2` architectures, and the embedded tokenizer -> Vocab.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/loaders.h"
#include "reference/model/quant.h"
#include "reference/model/gguf_keys.h"

namespace oracle {

// ---- tokenizer.ggml.* -> Vocab ------------------------------------------------------------
namespace {

// An id key, when present, must name a token of the vocabulary.
int read_token_id(const GgufFile& g, const std::string& key, int fallback, size_t n_vocab) {
  if (!g.has(key)) return fallback;
  int64_t id = g.get_int(key);
  require_input(id >= 0 && static_cast<uint64_t>(id) < n_vocab, g.path(), key,
                "token id " + std::to_string(id) + " outside the vocabulary of " +
                    std::to_string(n_vocab));
  return static_cast<int>(id);
}

// llama.cpp reads the FIM ids as uint32 and ignores (with a warning) one outside the
// vocabulary, keeping LLAMA_TOKEN_NULL; such a file loads there, so it loads here (-1).
int read_fim_id(const GgufFile& g, const std::string& key, int current, size_t n_vocab) {
  if (!g.has(key)) return current;
  const int64_t id = g.get_int(key);
  return id >= 0 && static_cast<uint64_t>(id) < n_vocab ? static_cast<int>(id) : current;
}

VocabType read_vocab_type(const GgufFile& g) {
  const std::string key = "tokenizer.ggml.model";
  std::string model = g.get_string(key);
  if (model == "llama") return VocabType::SentencePiece;
  if (model == "gpt2") return VocabType::Gpt2;
  throw InputError(g.path(), key, "unsupported tokenizer model '" + model + "' (need llama or gpt2)");
}

void read_vocab_arrays(const GgufFile& g, Vocab& v) {
  v.tokens = g.get_strings("tokenizer.ggml.tokens");
  const size_t n = v.tokens.size();
  require_input(n > 0, g.path(), "tokenizer.ggml.tokens", "empty vocabulary");
  if (g.has("tokenizer.ggml.scores")) {
    for (double s : g.get_floats("tokenizer.ggml.scores")) v.scores.push_back(static_cast<float>(s));
    require_input(v.scores.size() == n, g.path(), "tokenizer.ggml.scores",
                  std::to_string(v.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  }
  if (g.has("tokenizer.ggml.token_type")) {
    for (int64_t t : g.get_ints("tokenizer.ggml.token_type")) v.token_types.push_back(static_cast<int>(t));
    require_input(v.token_types.size() == n, g.path(), "tokenizer.ggml.token_type",
                  std::to_string(v.token_types.size()) + " types for " + std::to_string(n) + " tokens");
  }
  if (g.has("tokenizer.ggml.merges")) v.merges = g.get_strings("tokenizer.ggml.merges");
}

}  // namespace

Vocab vocab_from_gguf(const GgufFile& g) {
  Vocab v;
  v.source = g.path();
  v.type = read_vocab_type(g);
  read_vocab_arrays(g, v);
  const bool spm = v.type == VocabType::SentencePiece;
  require_input(spm || !v.merges.empty(), g.path(), "tokenizer.ggml.merges",
                "a gpt2 tokenizer needs merges");
  const size_t n = v.tokens.size();
  v.bos_id = read_token_id(g, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n);
  v.eos_id = read_token_id(g, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n);
  v.unk_id = read_token_id(g, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n);
  v.add_bos_explicit = g.has("tokenizer.ggml.add_bos_token");
  v.add_bos = g.get_bool("tokenizer.ggml.add_bos_token", spm);
  v.add_eos = g.get_bool("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix", spm);
  v.remove_extra_whitespaces = g.get_bool("tokenizer.ggml.remove_extra_whitespaces", false);
  v.eot_id = read_token_id(g, "tokenizer.ggml.eot_token_id", -1, n);
  v.eom_id = read_token_id(g, "tokenizer.ggml.eom_token_id", -1, n);
  const char* const fim[6] = {"pre", "suf", "mid", "pad", "rep", "sep"};
  for (int i = 0; i < 6; i++)
    v.fim_ids[i] = read_fim_id(g, std::string("tokenizer.ggml.fim_") + fim[i] + "_token_id", -1, n);
  const char* const deprecated[3] = {"prefix", "suffix", "middle"};  // read after, as llama.cpp
  for (int i = 0; i < 3; i++)
    v.fim_ids[i] = read_fim_id(g, std::string("tokenizer.ggml.") + deprecated[i] + "_token_id", v.fim_ids[i], n);
  v.pre = g.get_string("tokenizer.ggml.pre", "");
  v.chat_template = g.get_string("tokenizer.chat_template", "");
  v.name = g.get_string("general.name", "");
  for (const std::string& t : v.tokens)
    v.max_token_length = std::max(v.max_token_length, static_cast<int>(t.size()));
  return v;
}

Vocab load_gguf_vocab(const std::string& path) {
  GgufFile g(path);
  return vocab_from_gguf(g);
}

// ---- llama / qwen2 metadata -> Config ---------------------------------------------------------------
namespace {

int size_key(const GgufFile& g, const std::string& key) {
  int64_t v = g.get_int(key);
  require_input(v > 0 && v <= (int64_t(1) << 24), g.path(), key,
                "value " + std::to_string(v) + " out of range");
  return static_cast<int>(v);
}

// llama-convert-llama2c-to-ggml writes the misspelled key below and nothing else
// does; its models come from llama2.c, whose stories are delimited by BOS.
// A project-written file may state it explicitly with `oracle.stop_on_bos`.
bool read_stop_on_bos(const GgufFile& g) {
  if (g.has("oracle.stop_on_bos")) return g.get_bool("oracle.stop_on_bos", false);
  return g.has("tokenizer.ggml.seperator_token_id");
}

// ---- rope.scaling.* -> RopeConfig (docs/numerics.md §4.3) ---------------------------------
RopeScaling read_scaling_type(const GgufFile& g, const std::string& a, bool has_factor) {
  const std::string key = a + "rope.scaling.type";
  // llama.cpp's default type is "linear" (a bare factor scales linearly).
  const std::string type = g.get_string(key, has_factor ? "linear" : "none");
  if (type == "none") return RopeScaling::None;
  if (type == "linear") return RopeScaling::Linear;
  if (type == "yarn") return RopeScaling::Yarn;
  throw InputError(g.path(), key, "RoPE scaling '" + type + "' is not implemented (none, linear, yarn)");
}

// A key llama.cpp does not read for this architecture: accepted only at the value it uses.
void require_value(const GgufFile& g, const std::string& key, double expected) {
  if (!g.has(key)) return;
  const double v = g.get_float(key);
  require_input(v == expected || std::fabs(v - expected) <= 1e-6 * std::fabs(expected), g.path(), key,
                "value " + std::to_string(v) + " is not implemented (llama.cpp uses " +
                    std::to_string(expected) + " for this architecture)");
}

RopeConfig read_rope(const GgufFile& g, const std::string& a, int context_length) {
  RopeConfig r;
  std::string factor_key = a + "rope.scaling.factor";
  if (!g.has(factor_key) && g.has(a + "rope.scale_linear")) factor_key = a + "rope.scale_linear";
  const double factor = g.get_float(factor_key, 0.0);  // 0: unset (llama.cpp: freq_scale 1)
  require_input(std::isfinite(factor) && factor >= 0.0, g.path(), factor_key, "must be a positive number");
  r.scaling = read_scaling_type(g, a, g.has(factor_key));
  r.factor = factor == 0.0 ? 1.0f : (float)factor;
  require_input(r.scaling != RopeScaling::None || r.factor == 1.0f, g.path(), factor_key,
                "a scaling factor with rope.scaling.type none is contradictory");
  if (r.scaling == RopeScaling::Linear && r.factor == 1.0f) r.scaling = RopeScaling::None;
  const std::string orig_key = a + "rope.scaling.original_context_length";
  r.original_context = g.has(orig_key) ? size_key(g, orig_key) : context_length;
  r.attn_factor = (float)g.get_float(a + "rope.scaling.attn_factor", 1.0);
  require_input(std::isfinite(r.attn_factor) && r.attn_factor > 0.0f, g.path(), a + "rope.scaling.attn_factor",
                "must be a positive number");
  const bool yarn = r.scaling == RopeScaling::Yarn;
  require_value(g, a + "rope.scaling.yarn_ext_factor", yarn ? 1.0 : 0.0);
  require_value(g, a + "rope.scaling.yarn_beta_fast", 32.0);
  require_value(g, a + "rope.scaling.yarn_beta_slow", 1.0);
  require_value(g, a + "rope.scaling.yarn_log_multiplier", 0.0);
  require_value(g, a + "rope.scaling.yarn_attn_factor", r.factor > 1.0f ? 1.0 + 0.1 * std::log((double)r.factor) : 1.0);
  return r;
}

// A float metadata value as float32: finite and > 0 (a double beyond float's
// range would be an undefined conversion; +inf passes a plain "> 0" check).
float float_key(const GgufFile& g, const std::string& key, double fallback) {
  const double v = fallback < 0 ? g.get_float(key) : g.get_float(key, fallback);
  require_input(std::isfinite(v) && v > 0.0 && v <= 3.0e38, g.path(), key,
                "must be a finite number > 0, got " + std::to_string(v));
  return static_cast<float>(v);
}

// block_count must cover every blk.N tensor the file holds (a smaller count
// would silently run only the first layers), and the tensors must reach its
// last layer — checked before a slot per layer is allocated, so a damaged
// count (up to 2^31) costs nothing.
void check_block_count(const GgufFile& g, int n_layers) {
  const std::string key = g.get_string("general.architecture") + ".block_count";
  int top = -1;  // highest blk.N seen
  for (const GgufTensorInfo& t : g.tensors()) {
    if (t.name.rfind("blk.", 0) != 0) continue;
    const size_t dot = t.name.find('.', 4);
    const std::string index = t.name.substr(4, dot == std::string::npos ? std::string::npos : dot - 4);
    const bool digits = !index.empty() && index.size() < 9 && index.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) continue;
    require_input(std::stoi(index) < n_layers, g.path(), key,
                  std::to_string(n_layers) + " layers, but the file holds tensor '" + t.name + "'");
    top = std::max(top, std::stoi(index));
  }
  require_input(top == n_layers - 1, g.path(), key,
                std::to_string(n_layers) + " layers, but the file's last block tensor is " +
                    (top < 0 ? std::string("absent") : "in blk." + std::to_string(top)));
}

Config read_arch_config(const GgufFile& g) {
  const std::string arch = g.get_string("general.architecture");
  require_input(arch == "llama" || arch == "qwen2", g.path(), "general.architecture",
                "unsupported architecture '" + arch + "' (need llama or qwen2)");
  const std::string a = arch + ".";
  Config c;
  c.dim = size_key(g, a + "embedding_length");
  c.hidden_dim = size_key(g, a + "feed_forward_length");
  c.n_layers = size_key(g, a + "block_count");
  c.n_heads = size_key(g, a + "attention.head_count");
  c.n_kv_heads = g.has(a + "attention.head_count_kv") ? size_key(g, a + "attention.head_count_kv") : c.n_heads;
  c.seq_len = size_key(g, a + "context_length");
  c.rope_theta = float_key(g, a + "rope.freq_base", 10000.0);
  c.norm_eps = float_key(g, a + "attention.layer_norm_rms_epsilon", -1.0);
  require_input(c.dim % c.n_heads == 0, g.path(), a + "attention.head_count",
                std::to_string(c.n_heads) + " does not divide embedding_length " + std::to_string(c.dim));
  c.head_dim = c.dim / c.n_heads;
  for (const std::string key : {"rope.dimension_count", "attention.key_length", "attention.value_length"})
    require_input(!g.has(a + key) || g.get_int(a + key) == c.head_dim, g.path(), a + key,
                  "must equal the head dimension " + std::to_string(c.head_dim) +
                      " (partial rotary / other head sizes are not supported)");
  for (const std::string key : {"expert_count", "expert_used_count"})
    require_input(g.get_int(a + key, 0) == 0, g.path(), a + key, "mixture of experts is not implemented");
  c.rope = read_rope(g, a, c.seq_len);
  c.stop_on_bos = read_stop_on_bos(g);
  c.architecture = arch;
  return c;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); k++) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// ---- tensors -> Weights (matrices mapped in their stored type) ------------------------------------------------------------
const GgufTensorInfo& need_tensor(const GgufFile& g, const std::string& name,
                                  const std::vector<int64_t>& dims) {
  const GgufTensorInfo* t = g.find_tensor(name);
  require_input(t != nullptr, g.path(), name, "missing tensor");
  require_input(t->dims == dims, g.path(), name,
                "shape " + dims_text(t->dims) + " but the config needs " + dims_text(dims));
  return *t;
}

// Norm vectors: F32 stays mapped; any other type is dequantized into weights.owned.
const float* tensor_f32(const GgufTensorInfo& t, Weights& w) {
  const auto type = static_cast<DType>(t.ggml_type);
  if (type == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(t.data);
  std::vector<float> out(static_cast<size_t>(t.n_elements()));  // (n)
  dequantize_row(type, t.data, t.n_elements(), out.data());
  return keep_owned(w, std::move(out));
}

// Matrices stay mapped in their stored type (docs/numerics.md, "Stored-type weights").
WeightMatrix tensor_matrix(const GgufFile& g, const GgufTensorInfo& t) {
  const auto type = static_cast<DType>(t.ggml_type);
  require_input(dtype_row_bytes(type, t.dims[0]) > 0, g.path(), t.name,
                std::string(dtype_name(type)) + " rows of " + std::to_string(t.dims[0]) +
                    " elements are not a whole number of blocks");
  return WeightMatrix(type, t.data);
}

const float* load_vector(const GgufFile& g, Model& m, const std::string& name,
                         const std::vector<int64_t>& dims) {
  return tensor_f32(need_tensor(g, name, dims), m.weights);
}

WeightMatrix load_matrix(const GgufFile& g, const std::string& name, const std::vector<int64_t>& dims) {
  return tensor_matrix(g, need_tensor(g, name, dims));
}

// qwen2 GGUFs keep HF's rotate-half (NEOX) rows in attn_q/attn_k (convert_hf_to_gguf
// permutes only llama's); they are permuted to interleaved pairs here — rows copied
// in their stored type into weights.owned_raw — and their biases too. GGUF llama
// rows are already interleaved pairs.
WeightMatrix load_rope_matrix(const GgufFile& g, Model& m, const std::string& name, const std::vector<int64_t>& dims,
                              int n_heads) {
  const WeightMatrix w = load_matrix(g, name, dims);
  if (m.config.architecture != "qwen2") return w;
  const size_t row_bytes = (size_t)dtype_row_bytes(w.type, dims[0]);
  auto& raw = m.weights.owned_raw.emplace_back(unpermute_rotate_half_rows(w.data, n_heads, m.config.head_dim, row_bytes));
  return WeightMatrix(w.type, raw.data());
}

const float* load_optional_rope_bias(const GgufFile& g, Model& m, const std::string& name, int64_t n, int n_heads) {
  if (!g.find_tensor(name)) return nullptr;
  const float* b = load_vector(g, m, name, {n});
  if (m.config.architecture != "qwen2") return b;
  return keep_owned(m.weights, unpermute_rotate_half(b, n_heads, m.config.head_dim, 1));
}

// Llama 3 frequency factors (one per rotary pair), applied as llama.cpp does: angle / ff.
void load_freq_factors(const GgufFile& g, Model& m) {
  const GgufTensorInfo* t = g.find_tensor("rope_freqs.weight");
  if (!t) return;
  const int half = m.config.head_dim / 2;
  require_input(t->ggml_type == (uint32_t)DType::F32, g.path(), t->name, "must be F32");
  const float* ff = tensor_f32(need_tensor(g, t->name, {half}), m.weights);
  for (int i = 0; i < half; i++)
    require_input(std::isfinite(ff[i]) && ff[i] > 0.0f, g.path(), t->name,
                  "factor " + std::to_string(i) + " is not a positive number");
  m.config.rope.freq_factors.assign(ff, ff + half);
}

void load_layer(const GgufFile& g, Model& m, int l) {
  const Config& c = m.config;
  const int64_t dim = c.dim, hid = c.hidden_dim;
  const int64_t q = int64_t(c.n_heads) * c.head_dim, kv = int64_t(c.n_kv_heads) * c.head_dim;
  const std::string p = "blk." + std::to_string(l) + ".";
  LayerWeights& lw = m.weights.layers[l];
  lw.attn_norm = load_vector(g, m, p + "attn_norm.weight", {dim});
  lw.wq = load_rope_matrix(g, m, p + "attn_q.weight", {dim, q}, c.n_heads);
  lw.wk = load_rope_matrix(g, m, p + "attn_k.weight", {dim, kv}, c.n_kv_heads);
  lw.wv = load_matrix(g, p + "attn_v.weight", {dim, kv});
  lw.wo = load_matrix(g, p + "attn_output.weight", {q, dim});
  lw.ffn_norm = load_vector(g, m, p + "ffn_norm.weight", {dim});
  lw.w_gate = load_matrix(g, p + "ffn_gate.weight", {dim, hid});
  lw.w_down = load_matrix(g, p + "ffn_down.weight", {hid, dim});
  lw.w_up = load_matrix(g, p + "ffn_up.weight", {dim, hid});
  lw.bq = load_optional_rope_bias(g, m, p + "attn_q.bias", q, c.n_heads);
  lw.bk = load_optional_rope_bias(g, m, p + "attn_k.bias", kv, c.n_kv_heads);
  lw.bv = g.find_tensor(p + "attn_v.bias") ? load_vector(g, m, p + "attn_v.bias", {kv}) : nullptr;
  if (lw.bq || lw.bk || lw.bv) m.config.qkv_bias = true;
}

// output.weight absent, or a byte-identical copy of token_embd (what the llama2.c
// converter writes for tied models) => the classifier is the embedding.
void load_classifier(const GgufFile& g, Model& m) {
  const GgufTensorInfo* out = g.find_tensor("output.weight");
  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  bool same = out && out->ggml_type == emb->ggml_type && out->n_bytes == emb->n_bytes &&
              out->dims == emb->dims && std::memcmp(out->data, emb->data, out->n_bytes) == 0;
  m.config.tied_classifier = out == nullptr || same;
  if (m.config.tied_classifier) m.weights.classifier = m.weights.token_embedding;
  else m.weights.classifier = load_matrix(g, "output.weight", emb->dims);
}

void load_weights(const GgufFile& g, Model& m) {
  const int64_t dim = m.config.dim, vocab = m.config.vocab_size;
  m.weights.token_embedding = load_matrix(g, "token_embd.weight", {dim, vocab});
  m.weights.layers.resize(m.config.n_layers);
  for (int l = 0; l < m.config.n_layers; l++) load_layer(g, m, l);
  m.weights.final_norm = load_vector(g, m, "output_norm.weight", {dim});
  load_classifier(g, m);
  load_freq_factors(g, m);
}

// The vocabulary size comes from token_embd.weight (ne[1]); llama.vocab_size and
// an embedded tokenizer must agree with it.
int read_vocab_size(const GgufFile& g, int dim) {
  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  require_input(emb != nullptr, g.path(), "token_embd.weight", "missing tensor");
  require_input(emb->dims.size() == 2 && emb->dims[0] == dim, g.path(), "token_embd.weight",
                "shape " + dims_text(emb->dims) + " but the config needs [" + std::to_string(dim) + ", n_vocab]");
  int64_t n = emb->dims[1];
  const std::string key = g.get_string("general.architecture") + ".vocab_size";
  require_input(!g.has(key) || g.get_int(key) == n, g.path(), key, "disagrees with token_embd.weight (" + std::to_string(n) + " rows)");
  return static_cast<int>(n);
}

void read_embedded_vocab(const GgufFile& g, Model& m) {
  if (!g.has("tokenizer.ggml.tokens")) return;  // tokenizer comes from a separate file
  m.vocab = vocab_from_gguf(g);
  require_input(m.vocab.tokens.size() == static_cast<size_t>(m.config.vocab_size), g.path(),
                "tokenizer.ggml.tokens",
                "vocabulary size " + std::to_string(m.vocab.tokens.size()) +
                    " disagrees with the model's " + std::to_string(m.config.vocab_size) +
                    " (token_embd.weight)");
}

void fill_tensor_table(const GgufFile& g, Model& m) {
  for (const GgufTensorInfo& t : g.tensors())
    m.tensors.push_back(TensorInfo{t.name, static_cast<DType>(t.ggml_type), t.dims, t.data, t.n_bytes});
}

}  // namespace

// ---- load_gguf ---------------------------------------------------------------------------------
Model load_gguf(const std::string& path, const LoadOptions& options) {
  GgufFile g(path, options.residency);
  Model m;
  m.file = g.file();
  m.path = path;
  m.format = "gguf";
  m.config = read_arch_config(g);
  check_gguf_keys(g, m.config.architecture, m.config.n_layers);
  m.config.vocab_size = read_vocab_size(g, m.config.dim);
  validate_config(m.config, path);
  check_block_count(g, m.config.n_layers);
  load_weights(g, m);
  read_embedded_vocab(g, m);
  fill_tensor_table(g, m);
  apply_context_override(m.config, options, path);
  return m;
}

}  // namespace oracle
