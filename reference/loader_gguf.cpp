// GGUF -> Model for the `llama` architecture, and the embedded tokenizer -> Vocab.
#include "reference/errors.h"
#include "reference/gguf.h"

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
  v.add_bos = g.get_bool("tokenizer.ggml.add_bos_token", spm);
  v.add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix", spm);
  v.pre = g.get_string("tokenizer.ggml.pre", "");
  for (const std::string& t : v.tokens)
    v.max_token_length = std::max(v.max_token_length, static_cast<int>(t.size()));
  return v;
}

Vocab load_gguf_vocab(const std::string& path) {
  GgufFile g(path);
  return vocab_from_gguf(g);
}

}  // namespace oracle
