// ============================================================================
// GPT-2 byte-level BPE, as llama.cpp's llm_tokenizer_bpe for pre-tokenizer
// "gpt-2": split the text with the GPT-2 regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (hand-written matcher, llama.cpp's unicode_regex_split_custom_gpt2), map
// every byte of a word to its bytes_to_unicode character, then merge adjacent
// symbols by merge rank (lowest rank first; ties: leftmost).
// ============================================================================
#include <algorithm>
#include <queue>

#include "reference/base/errors.h"
#include "reference/tokenizer/tokenizer_impl.h"
#include "reference/tokenizer/unicode_class.h"
#include "reference/base/utf8.h"

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
    int type = t.vocab.token_types.empty() ? kTokNormal : t.vocab.token_types[id];
    const std::string& piece = t.vocab.tokens[id];
    if (type == kTokNormal) t.token_text[id] = unmap_bytes(inverse, piece);
    else if (type == kTokUserDefined) t.token_text[id] = piece;
    else if (type == kTokUnknown) t.token_text[id] = "\xE2\x96\x85";  // U+2585, as llama.cpp
    else t.token_text[id] = "";                                         // control, unused
  }
}

// ---- Pre-tokenizer (the GPT-2 regex, by hand) -------------------------------------
namespace {

// Class of the code point at `pos`; "None" past the end (matches nothing).
enum class Cls { None, Letter, Number, Whitespace, Other };

class Gpt2Splitter {
 public:
  explicit Gpt2Splitter(const std::string& text);
  std::vector<std::string> run();

 private:
  Cls cls(size_t pos) const;
  uint32_t cp(size_t pos) const { return pos < cps_.size() ? cps_[pos] : 0xFFFFFFFFu; }
  bool contraction(size_t& pos) const;
  size_t skip_whitespace(size_t pos);
  void add(size_t end);

  const std::string& text_;
  std::vector<uint32_t> cps_;     // (n_cps) code points of the text
  std::vector<size_t> offsets_;   // (n_cps + 1) byte offset of each code point
  size_t prev_end_ = 0;           // code point index where the current word starts
  std::vector<std::string> words_;
};

Gpt2Splitter::Gpt2Splitter(const std::string& text) : text_(text), cps_(utf8_to_codepoints(text)) {
  size_t off = 0;
  for (size_t i = 0; i < cps_.size(); i++) {
    offsets_.push_back(off);
    off += (size_t)utf8_sequence_length((uint8_t)text[off]);
  }
  offsets_.push_back(text.size());
}

Cls Gpt2Splitter::cls(size_t pos) const {
  if (pos >= cps_.size()) return Cls::None;
  switch (unicode_class(cps_[pos])) {
    case UnicodeClass::Letter: return Cls::Letter;
    case UnicodeClass::Number: return Cls::Number;
    case UnicodeClass::Whitespace: return Cls::Whitespace;
    default: return Cls::Other;
  }
}

void Gpt2Splitter::add(size_t end) {
  if (end > prev_end_) words_.push_back(text_.substr(offsets_[prev_end_], offsets_[end] - offsets_[prev_end_]));
  prev_end_ = end;
}

// 's|'t|'re|'ve|'m|'ll|'d (lower case only, as the regex).
bool Gpt2Splitter::contraction(size_t& pos) const {
  if (cp(pos) != '\'') return false;
  uint32_t c1 = cp(pos + 1), c2 = cp(pos + 2);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
    pos += 2;
    return true;
  }
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
    pos += 3;
    return true;
  }
  return false;
}

// \s+(?!\S)|\s+ : a whitespace run keeps its last character for the next word
// unless the run ends the text.
size_t Gpt2Splitter::skip_whitespace(size_t pos) {
  size_t n = 0;
  while (cls(pos + n) == Cls::Whitespace) n++;
  if (n > 1 && pos + n < cps_.size()) return pos + n - 1;
  return pos + (n > 0 ? n : 1);  // n == 0: a character no rule matches stands alone
}

std::vector<std::string> Gpt2Splitter::run() {
  size_t pos = 0;
  while (pos < cps_.size()) {
    if (contraction(pos)) {
      add(pos);
      continue;
    }
    bool space = cp(pos) == ' ';
    Cls c = space ? cls(pos + 1) : cls(pos);
    if (c == Cls::Letter || c == Cls::Number || c == Cls::Other) {  //  ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+
      pos += space ? 1 : 0;
      while (cls(pos) == c) pos++;
    } else {
      pos = skip_whitespace(pos);
    }
    add(pos);
  }
  return words_;
}

}  // namespace

std::vector<std::string> gpt2_pretokenize(const std::string& text) {
  Gpt2Splitter splitter(text);
  return splitter.run();
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
  for (const std::string& word : gpt2_pretokenize(text)) {
    std::string mapped;
    for (char c : word) mapped += t.byte_char[(uint8_t)c];
    BpeWord bpe(t, std::move(mapped));
    bpe.run(out);
  }
}

}  // namespace oracle
