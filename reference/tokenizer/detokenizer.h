#pragma once
// ============================================================================
// StreamingDetokenizer: token ids in, complete UTF-8 text out. Bytes of a
// character split over several tokens (byte fallback <0xE2><0x82><0xAC>, or a
// GPT-2 token ending mid-character) are held until the character is complete.
// Ill-formed byte sequences from a model become U+FFFD (one per maximal
// subpart, as Python's errors="replace") and are counted, never dropped.
// ============================================================================
#include <string>

#include "reference/tokenizer/tokenizer.h"
#include "base/utf8.h"

namespace oracle {

class StreamingDetokenizer {
 public:
  // `prev` is the last prompt token (-1 for none): SentencePiece strips the
  // leading space of a piece that follows BOS or starts the text.
  explicit StreamingDetokenizer(Tokenizer tokenizer, int prev = -1);
  // The text that became complete with `token` (possibly empty).
  std::string push(int token);
  // End of stream: an unfinished character becomes U+FFFD.
  std::string finish();
  // Ill-formed sequences replaced so far.
  int n_replaced() const { return decoder_.n_replaced(); }
  // Bytes held back waiting for the rest of a character (0..3).
  size_t n_pending() const { return decoder_.n_pending(); }

 private:
  Tokenizer tokenizer_;
  int prev_;
  Utf8Decoder decoder_;
};

}  // namespace oracle
