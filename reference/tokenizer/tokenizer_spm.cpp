// ============================================================================
// SentencePiece BPE encoding, as llama.cpp's llm_tokenizer_spm_session:
// split into UTF-8 characters, repeatedly merge the adjacent pair whose
// concatenation is a piece with the highest score (ties: leftmost), then emit
// each symbol as its piece, or (a character that is no piece) as byte-fallback
// tokens <0xXX>. Every merged symbol is a piece by construction, so llama.cpp's
// rev_merge re-split can never trigger and is left out.
// ============================================================================
#include <queue>

#include "faults/fault.h"
#include "reference/tokenizer/tokenizer_impl.h"
#include "base/utf8.h"

namespace oracle {

namespace {

struct Symbol {
  int prev;      // index of the previous live symbol, -1 at the start
  int next;      // index of the next live symbol, -1 at the end
  size_t start;  // byte offset into the text
  size_t n;      // byte length; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of left + right when queued (stale entries are skipped)
};

// Priority: higher score first; equal scores: smaller left index first.
struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    if (fault::active(fault::Fault::TOKENIZER_TIE_RIGHTMOST))
      return l.score < r.score || (l.score == r.score && l.left < r.left);  // FAULT: ties go right
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Tokenizer::Impl& t, const std::string& text) : t_(t), text_(text) {}
  void run(std::vector<int>& out);

 private:
  void split_chars();
  void try_add_bigram(int left, int right);
  void merge(const Bigram& b);
  void resegment(const Symbol& s, std::vector<int>& out) const;
  std::string str(const Symbol& s) const { return text_.substr(s.start, s.n); }

  const Tokenizer::Impl& t_;
  const std::string& text_;
  std::vector<Symbol> symbols_;  // (n_chars) one per UTF-8 character initially
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

// ---- Session ---------------------------------------------------------------------
void SpmSession::split_chars() {
  size_t offs = 0;
  int index = 0;
  while (offs < text_.size()) {
    size_t len = (size_t)utf8_sequence_length((uint8_t)text_[offs]);
    if (len > text_.size() - offs) len = text_.size() - offs;
    offs += len;
    symbols_.push_back({index - 1, offs == text_.size() ? -1 : index + 1, offs - len, len});
    index++;
  }
}

void SpmSession::try_add_bigram(int left, int right) {
  if (left == -1 || right == -1) return;
  std::string piece = text_.substr(symbols_[left].start, symbols_[left].n + symbols_[right].n);
  int id = t_.find(piece);
  if (id < 0) return;
  queue_.push({left, right, t_.vocab.scores[id], piece.size()});
}

void SpmSession::merge(const Bigram& b) {
  Symbol& left = symbols_[b.left];
  Symbol& right = symbols_[b.right];
  left.n += right.n;
  right.n = 0;
  left.next = right.next;
  if (right.next >= 0) symbols_[right.next].prev = b.left;
  try_add_bigram(left.prev, b.left);
  try_add_bigram(b.left, left.next);
}

void SpmSession::resegment(const Symbol& s, std::vector<int>& out) const {
  std::string piece = str(s);
  int id = t_.find(piece);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  for (char c : piece) {  // byte fallback; <unk> if the vocabulary has no byte tokens
    int byte_id = t_.byte_to_id[(uint8_t)c];
    out.push_back(byte_id >= 0 ? byte_id : t_.vocab.unk_id);
  }
}

void SpmSession::run(std::vector<int>& out) {
  split_chars();
  if (symbols_.empty()) return;
  for (int i = 1; i < (int)symbols_.size(); i++) try_add_bigram(i - 1, i);
  while (!queue_.empty()) {
    Bigram b = queue_.top();
    queue_.pop();
    const Symbol& left = symbols_[b.left];
    const Symbol& right = symbols_[b.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;  // stale
    merge(b);
  }
  for (int i = 0; i != -1; i = symbols_[i].next) resegment(symbols_[i], out);
}

}  // namespace

void encode_spm(const Tokenizer::Impl& t, const std::string& text, std::vector<int>& out) {
  SpmSession session(t, text);
  session.run(out);
}

}  // namespace oracle
