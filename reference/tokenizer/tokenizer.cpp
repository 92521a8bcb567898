// ============================================================================
// Tokenizer: vocabulary checks, lookup tables, encode/decode dispatch.
// The algorithms live in tokenizer_spm.cpp and tokenizer_gpt2.cpp.
// ============================================================================
#include "reference/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "faults/fault.h"
#include "base/errors.h"
#include "reference/tokenizer/tokenizer_impl.h"
#include "base/utf8.h"

namespace oracle {

// ---- Vocabulary checks -------------------------------------------------------------
static void check_id(const Vocab& v, int id, const char* field) {
  require_input(id >= -1 && id < (int)v.tokens.size(), v.source, field,
                "token id " + std::to_string(id) + " outside the vocabulary of " +
                    std::to_string(v.tokens.size()));
}

static void check_vocab(Vocab& v) {
  size_t n = v.tokens.size();
  require_input(n > 0, v.source, "tokenizer.ggml.tokens", "empty vocabulary");
  if (v.scores.empty()) v.scores.assign(n, 0.0f);  // llama.cpp: scores are optional
  require_input(v.scores.size() == n, v.source, "tokenizer.ggml.scores",
                std::to_string(v.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  require_input(v.token_types.empty() || v.token_types.size() == n, v.source,
                "tokenizer.ggml.token_type",
                std::to_string(v.token_types.size()) + " types for " + std::to_string(n) + " tokens");
  check_id(v, v.bos_id, "tokenizer.ggml.bos_token_id");
  check_id(v, v.eos_id, "tokenizer.ggml.eos_token_id");
  check_id(v, v.unk_id, "tokenizer.ggml.unknown_token_id");
  require_input(v.type != VocabType::Gpt2 || !v.merges.empty(), v.source, "tokenizer.ggml.merges",
                "a GPT-2 vocabulary needs merges");
  check_id(v, v.eot_id, "tokenizer.ggml.eot_token_id");
  check_id(v, v.eom_id, "tokenizer.ggml.eom_token_id");
}

static std::string names_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// GPT-2 family: the pre-tokenizer named by the file, or InputError naming the key.
static const PreTokenizer* resolve_pretokenizer(Vocab& v) {
  if (v.type != VocabType::Gpt2) return nullptr;
  const PreTokenizer* pre = find_pretokenizer(v.pre);
  require_input(pre != nullptr, v.source, "tokenizer.ggml.pre",
                (v.pre.empty() ? std::string("missing") : "unsupported pre-tokenizer '" + v.pre + "'") +
                    " (accepted: " + names_list(accepted_pretokenizer_names()) + ")");
  if (!v.add_bos_explicit) v.add_bos = pre->default_add_bos;
  return pre;
}

void require_vocab_size(const Vocab& vocab, int model_vocab_size, const std::string& model_path) {
  require_input((int)vocab.tokens.size() == model_vocab_size, vocab.source, "vocab_size",
                "tokenizer has " + std::to_string(vocab.tokens.size()) + " tokens but model " +
                    model_path + " has vocab_size " + std::to_string(model_vocab_size));
}

// ---- SentencePiece tables ------------------------------------------------------------
// "<0xAB>" -> 0xAB, or -1.
static int parse_byte_piece(const std::string& piece) {
  unsigned value = 0;
  char tail = 0;
  if (piece.size() != 6 || std::sscanf(piece.c_str(), "<0x%2X%c", &value, &tail) != 2 || tail != '>')
    return -1;
  return (int)value;
}

static std::string unescape_spaces(const std::string& piece) {
  std::string out;
  for (size_t i = 0; i < piece.size(); i++) {
    if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += piece[i];
    }
  }
  return out;
}

static void spm_build_tables(Tokenizer::Impl& t) {
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    t.byte_to_id[b] = t.find(name);
  }
  for (size_t id = 0; id < t.vocab.tokens.size(); id++) {
    const std::string& piece = t.vocab.tokens[id];
    int byte = parse_byte_piece(piece);
    int type = t.text_type(id, t.vocab.token_types.empty() ? (byte >= 0 ? kTokByte : kTokNormal) : t.vocab.token_types[id]);
    if (type == kTokByte && byte >= 0) t.token_text[id] = std::string(1, (char)byte);
    else if (type == kTokNormal || type == kTokUserDefined) t.token_text[id] = unescape_spaces(piece);
    else if (type == kTokUnknown) t.token_text[id] = "\xE2\x96\x85";  // U+2585, as llama.cpp
    else t.token_text[id] = "";                                         // control, unused
  }
}

// ---- Tokenizer -------------------------------------------------------------------------
Tokenizer::Tokenizer(Vocab vocab) {
  auto impl = std::make_shared<Impl>();
  check_vocab(vocab);
  impl->pre = resolve_pretokenizer(vocab);
  impl->vocab = std::move(vocab);
  const std::vector<std::string>& tokens = impl->vocab.tokens;
  for (size_t id = 0; id < tokens.size(); id++) impl->token_to_id[tokens[id]] = (int)id;
  impl->token_text.resize(tokens.size());
  build_special_tables(*impl);  // first: llama.cpp's EOG exceptions change how a token prints
  if (impl->vocab.type == VocabType::Gpt2) gpt2_build_tables(*impl);
  else spm_build_tables(*impl);
  for (size_t id = 0; id < tokens.size(); id++)
    if (impl->attr[id] & kAttrControl) impl->token_text[id].clear();  // control tokens print nothing
  impl_ = std::move(impl);
}

// sentencepiece's remove_extra_whitespaces: drop leading and trailing spaces,
// collapse every run of spaces to one.
static std::string collapse_spaces(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// SentencePiece, one raw fragment: dummy prefix when it starts the text or
// follows a special token (llama.cpp), spaces -> U+2581.
static void encode_spm_fragment(const Tokenizer::Impl& t, std::string text, bool prev_special,
                                std::vector<int>& ids) {
  const Vocab& v = t.vocab;
  if (v.remove_extra_whitespaces) text = collapse_spaces(text);
  std::string escaped = v.add_space_prefix && prev_special ? "\xE2\x96\x81" : "";
  for (char c : text) escaped += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  encode_spm(t, escaped, ids);
}

std::vector<int> Tokenizer::encode(const std::string& text, bool add_bos) const {
  return encode(text, EncodeOptions{add_bos, false, false});
}

std::vector<int> Tokenizer::encode(const std::string& text, const EncodeOptions& o) const {
  require_utf8(text, "<text>", "prompt");
  const Vocab& v = impl_->vocab;
  std::vector<int> ids;
  if (o.add_bos && v.bos_id >= 0) ids.push_back(v.bos_id);
  bool prev_special = true;  // SentencePiece: the first fragment gets the dummy prefix
  for (const Fragment& f : partition_special(*impl_, text, o.parse_special)) {
    if (f.token >= 0) {
      ids.push_back(f.token);
      prev_special = true;
      continue;
    }
    if (v.type == VocabType::Gpt2) encode_gpt2(*impl_, text.substr(f.offset, f.length), ids);
    else encode_spm_fragment(*impl_, text.substr(f.offset, f.length), prev_special, ids);
    prev_special = false;
  }
  if (o.add_eos && v.eos_id >= 0) ids.push_back(v.eos_id);
  return ids;
}

std::string Tokenizer::token_bytes(int prev, int id) const {
  const Vocab& v = impl_->vocab;
  require_input(id >= 0 && id < (int)v.tokens.size(), v.source, "token",
                "token id " + std::to_string(id) + " outside the vocabulary");
  const std::string& text = impl_->token_text[id];
  bool at_start = prev < 0 || prev == v.bos_id;
  if (fault::active(fault::Fault::TOKENIZER_KEEP_DUMMY_PREFIX))
    at_start = false;  // FAULT: the SentencePiece dummy-prefix space is never stripped
  if (v.type == VocabType::SentencePiece && v.add_space_prefix && at_start && !text.empty() &&
      text[0] == ' ')
    return text.substr(1);
  return text;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  int prev = -1;
  for (int id : ids) {
    out += token_bytes(prev, id);
    prev = id;
  }
  return out;
}

int Tokenizer::vocab_size() const { return (int)impl_->vocab.tokens.size(); }
int Tokenizer::bos_id() const { return impl_->vocab.bos_id; }
int Tokenizer::eos_id() const { return impl_->vocab.eos_id; }
const std::vector<int>& Tokenizer::eog_ids() const { return impl_->eog_ids; }
bool Tokenizer::is_eog(int id) const {
  return std::binary_search(impl_->eog_ids.begin(), impl_->eog_ids.end(), id);
}
const Vocab& Tokenizer::vocab() const { return impl_->vocab; }

}  // namespace oracle
