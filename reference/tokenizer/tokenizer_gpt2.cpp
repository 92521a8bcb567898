// ============================================================================
// GPT-2 byte-level BPE, as llama.cpp's llm_tokenizer_bpe: split the text
// with the vocabulary's pre-tokenizer patterns (pretokenizer.h, e.g. gpt-2's
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
// ), map every byte of a word to its bytes_to_unicode character, then merge
// adjacent symbols by merge rank (lowest rank first; ties: leftmost).
// ============================================================================
#include <algorithm>
#include <queue>

#include "base/errors.h"
#include "reference/tokenizer/tokenizer_impl.h"
#include "base/utf8.h"

namespace oracle {

// ---- Tables --------------------------------------------------------------------
static std::string merge_key(const std::string& left, const std::string& right) {
  return std::to_string(left.size()) + ":" + left + right;
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the other 68
// bytes to U+0100.. in increasing byte order.
static void build_byte_chars(Tokenizer::Impl& t) {
  int next = 0;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    uint32_t cp = printable ? (uint32_t)b : 256u + (uint32_t)next++;
    t.byte_char[b].clear();
    utf8_append(t.byte_char[b], cp);
  }
}

static void build_merges(Tokenizer::Impl& t) {
  const std::vector<std::string>& merges = t.vocab.merges;
  for (size_t i = 0; i < merges.size(); i++) {
    size_t pos = merges[i].find(' ', 1);
    require_input(pos != std::string::npos, t.vocab.source, "tokenizer.ggml.merges",
                  "merge " + std::to_string(i) + " has no space separating two pieces");
    t.merge_rank.emplace(merge_key(merges[i].substr(0, pos), merges[i].substr(pos + 1)), (int)i);
  }
}

// A normal token's text is bytes_to_unicode characters: map them back.
static std::string unmap_bytes(const std::unordered_map<uint32_t, char>& inverse,
                               const std::string& piece) {
  std::string out;
  for (uint32_t cp : utf8_to_codepoints(piece)) {
    auto it = inverse.find(cp);
    if (it != inverse.end()) out += it->second; else utf8_append(out, cp);  // not byte-level: verbatim
  }
  return out;
}

void gpt2_build_tables(Tokenizer::Impl& t) {
  build_byte_chars(t);
  build_merges(t);
  std::unordered_map<uint32_t, char> inverse;  // bytes_to_unicode character -> byte
  for (int b = 0; b < 256; b++) {
    t.byte_to_id[b] = t.find(t.byte_char[b]);
    inverse[utf8_to_codepoints(t.byte_char[b])[0]] = (char)b;
  }
  for (size_t id = 0; id < t.vocab.tokens.size(); id++) {
    int type = t.text_type(id, t.vocab.token_types.empty() ? kTokNormal : t.vocab.token_types[id]);
    const std::string& piece = t.vocab.tokens[id];
    if (type == kTokNormal) t.token_text[id] = unmap_bytes(inverse, piece);
    else if (type == kTokUserDefined) t.token_text[id] = piece;
    else if (type == kTokUnknown) t.token_text[id] = "\xE2\x96\x85";  // U+2585, as llama.cpp
    else t.token_text[id] = "";                                         // control, unused
  }
}

// ---- Pre-tokenizer ---------------------------------------------------------------
std::vector<std::string> gpt2_pretokenize(const std::string& text) {
  return regex_split_words(text, find_pretokenizer("gpt-2")->patterns);
}

// ---- Byte-level BPE over one word ---------------------------------------------------
namespace {

struct Symbol {
  int prev;      // previous live symbol, -1 at the start
  int next;      // next live symbol, -1 at the end
  size_t start;  // byte offset into the mapped word
  size_t n;      // byte length; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  int rank;
  std::string text;  // left + right when queued (stale entries are skipped)
};

// Priority: lower rank first; equal ranks: smaller left index first.
struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
  }
};

class BpeWord {
 public:
  BpeWord(const Tokenizer::Impl& t, std::string mapped) : t_(t), word_(std::move(mapped)) {}
  void run(std::vector<int>& out);

 private:
  std::string str(int i) const { return word_.substr(symbols_[i].start, symbols_[i].n); }
  void add_bigram(int left, int right);
  void emit(int i, std::vector<int>& out) const;

  const Tokenizer::Impl& t_;
  std::string word_;             // the word in bytes_to_unicode characters
  std::vector<Symbol> symbols_;  // (n_chars) one per character initially
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

void BpeWord::add_bigram(int left, int right) {
  if (left == -1 || right == -1) return;
  std::string l = str(left), r = str(right);
  auto it = t_.merge_rank.find(merge_key(l, r));
  if (it == t_.merge_rank.end()) return;
  queue_.push({left, right, it->second, l + r});
}

void BpeWord::emit(int i, std::vector<int>& out) const {
  std::string piece = str(i);
  int id = t_.find(piece);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  for (char c : piece) {  // as llama.cpp: single bytes that happen to be tokens
    int byte_id = t_.find(std::string(1, c));
    if (byte_id >= 0) out.push_back(byte_id);
  }
}

void BpeWord::run(std::vector<int>& out) {
  for (size_t off = 0; off < word_.size();) {
    size_t len = std::min((size_t)utf8_sequence_length((uint8_t)word_[off]), word_.size() - off);
    int index = (int)symbols_.size();
    off += len;
    symbols_.push_back({index - 1, off == word_.size() ? -1 : index + 1, off - len, len});
  }
  for (int i = 1; i < (int)symbols_.size(); i++) add_bigram(i - 1, i);
  while (!queue_.empty()) {
    Bigram b = queue_.top();
    queue_.pop();
    Symbol& left = symbols_[b.left];
    Symbol& right = symbols_[b.right];
    if (left.n == 0 || right.n == 0 || str(b.left) + str(b.right) != b.text) continue;  // stale
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols_[right.next].prev = b.left;
    add_bigram(left.prev, b.left);
    add_bigram(b.left, left.next);
  }
  for (int i = 0; i < (int)symbols_.size(); i++)
    if (symbols_[i].n > 0) emit(i, out);
}

}  // namespace

void encode_gpt2(const Tokenizer::Impl& t, const std::string& text, std::vector<int>& out) {
  for (const std::string& word : regex_split_words(text, t.pre->patterns)) {
    std::string mapped;
    for (char c : word) mapped += t.byte_char[(uint8_t)c];
    if (t.pre->ignore_merges) {  // llama-bpe: a word that is a token is taken whole
      int id = t.find(mapped);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    BpeWord bpe(t, std::move(mapped));
    bpe.run(out);
  }
}

}  // namespace oracle
