// GGUF -> Model for the `llama` architecture, and the embedded tokenizer -> Vocab.
#include <cstring>

#include "reference/base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/loaders.h"
#include "reference/model/quant.h"

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

// ---- llama metadata -> Config ---------------------------------------------------------------
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

Config read_llama_config(const GgufFile& g) {
  std::string arch = g.get_string("general.architecture");
  require_input(arch == "llama", g.path(), "general.architecture",
                "unsupported architecture '" + arch + "' (need llama)");
  Config c;
  c.dim = size_key(g, "llama.embedding_length");
  c.hidden_dim = size_key(g, "llama.feed_forward_length");
  c.n_layers = size_key(g, "llama.block_count");
  c.n_heads = size_key(g, "llama.attention.head_count");
  c.n_kv_heads = g.has("llama.attention.head_count_kv") ? size_key(g, "llama.attention.head_count_kv") : c.n_heads;
  c.seq_len = size_key(g, "llama.context_length");
  c.rope_theta = static_cast<float>(g.get_float("llama.rope.freq_base", 10000.0));
  c.norm_eps = static_cast<float>(g.get_float("llama.attention.layer_norm_rms_epsilon"));
  require_input(c.dim % c.n_heads == 0, g.path(), "llama.attention.head_count",
                std::to_string(c.n_heads) + " does not divide embedding_length " + std::to_string(c.dim));
  c.head_dim = c.dim / c.n_heads;
  for (const char* key : {"llama.rope.dimension_count", "llama.attention.key_length"})
    require_input(!g.has(key) || g.get_int(key) == c.head_dim, g.path(), key,
                  "must equal the head dimension " + std::to_string(c.head_dim) +
                      " (partial rotary / other head sizes are not supported)");
  c.stop_on_bos = read_stop_on_bos(g);
  c.architecture = arch;
  return c;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); k++) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// ---- tensors -> float32 Weights ------------------------------------------------------------
const GgufTensorInfo& need_tensor(const GgufFile& g, const std::string& name,
                                  const std::vector<int64_t>& dims) {
  const GgufTensorInfo* t = g.find_tensor(name);
  require_input(t != nullptr, g.path(), name, "missing tensor");
  require_input(t->dims == dims, g.path(), name,
                "shape " + dims_text(t->dims) + " but the config needs " + dims_text(dims));
  return *t;
}

// F32 stays mapped; every other type is dequantized row by row into weights.owned.
const float* tensor_f32(const GgufTensorInfo& t, Weights& w) {
  const auto type = static_cast<DType>(t.ggml_type);
  if (type == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(t.data);
  const int64_t row_len = t.dims[0];
  const int64_t row_bytes = dtype_row_bytes(type, row_len);
  const int64_t rows = t.n_elements() / row_len;
  std::vector<float> out(static_cast<size_t>(t.n_elements()));  // (rows, row_len)
  for (int64_t r = 0; r < rows; r++)
    dequantize_row(type, t.data + r * row_bytes, row_len, out.data() + r * row_len);
  return keep_owned(w, std::move(out));
}

const float* load_tensor(const GgufFile& g, Model& m, const std::string& name,
                         const std::vector<int64_t>& dims) {
  return tensor_f32(need_tensor(g, name, dims), m.weights);
}

void load_layer(const GgufFile& g, Model& m, int l) {
  const Config& c = m.config;
  const int64_t dim = c.dim, hid = c.hidden_dim;
  const int64_t q = int64_t(c.n_heads) * c.head_dim, kv = int64_t(c.n_kv_heads) * c.head_dim;
  const std::string p = "blk." + std::to_string(l) + ".";
  LayerWeights& lw = m.weights.layers[l];
  lw.attn_norm = load_tensor(g, m, p + "attn_norm.weight", {dim});
  lw.wq = load_tensor(g, m, p + "attn_q.weight", {dim, q});  // GGUF llama rows: interleaved pairs
  lw.wk = load_tensor(g, m, p + "attn_k.weight", {dim, kv});
  lw.wv = load_tensor(g, m, p + "attn_v.weight", {dim, kv});
  lw.wo = load_tensor(g, m, p + "attn_output.weight", {q, dim});
  lw.ffn_norm = load_tensor(g, m, p + "ffn_norm.weight", {dim});
  lw.w_gate = load_tensor(g, m, p + "ffn_gate.weight", {dim, hid});
  lw.w_down = load_tensor(g, m, p + "ffn_down.weight", {hid, dim});
  lw.w_up = load_tensor(g, m, p + "ffn_up.weight", {dim, hid});
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
  else m.weights.classifier = load_tensor(g, m, "output.weight", emb->dims);
}

void load_weights(const GgufFile& g, Model& m) {
  const int64_t dim = m.config.dim, vocab = m.config.vocab_size;
  m.weights.token_embedding = load_tensor(g, m, "token_embd.weight", {dim, vocab});
  m.weights.layers.resize(m.config.n_layers);
  for (int l = 0; l < m.config.n_layers; l++) load_layer(g, m, l);
  m.weights.final_norm = load_tensor(g, m, "output_norm.weight", {dim});
  load_classifier(g, m);
}

// The vocabulary size comes from token_embd.weight (ne[1]); llama.vocab_size and
// an embedded tokenizer must agree with it.
int read_vocab_size(const GgufFile& g, int dim) {
  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  require_input(emb != nullptr, g.path(), "token_embd.weight", "missing tensor");
  require_input(emb->dims.size() == 2 && emb->dims[0] == dim, g.path(), "token_embd.weight",
                "shape " + dims_text(emb->dims) + " but the config needs [" + std::to_string(dim) + ", n_vocab]");
  int64_t n = emb->dims[1];
  require_input(!g.has("llama.vocab_size") || g.get_int("llama.vocab_size") == n, g.path(),
                "llama.vocab_size", "disagrees with token_embd.weight (" + std::to_string(n) + " rows)");
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
  GgufFile g(path);
  Model m;
  m.file = g.file();
  m.path = path;
  m.format = "gguf";
  m.config = read_llama_config(g);
  m.config.vocab_size = read_vocab_size(g, m.config.dim);
  validate_config(m.config, path);
  load_weights(g, m);
  read_embedded_vocab(g, m);
  fill_tensor_table(g, m);
  apply_context_override(m.config, options);
  return m;
}

}  // namespace oracle
