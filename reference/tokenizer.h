#pragma once
// ============================================================================
// Tokenizer: SentencePiece-style BPE (scores + byte fallback, dummy prefix)
// and GPT-2 byte-level BPE (merges). Built from a Vocab (GGUF-embedded or a
// llama2.c tokenizer.bin).            [owner: tokenizer work; contract below]
// ============================================================================
#include <string>
#include <vector>

#include "reference/model.h"

namespace oracle {

// llama2.c tokenizer.bin / tok512.bin -> Vocab (SentencePiece, BOS 1, EOS 2).
// `expected_vocab_size` > 0 is checked against the file (InputError on mismatch).
Vocab load_llama2c_tokenizer(const std::string& path, int expected_vocab_size);

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab);
  // Encodes UTF-8 text; InputError("<text>", "prompt", ...) on invalid UTF-8.
  std::vector<int> encode(const std::string& text, bool add_bos) const;
  // The raw bytes token `id` contributes (byte-fallback <0xAB> -> one byte,
  // U+2581 -> space, GPT-2 byte mapping undone). `prev` is the previous token
  // (SentencePiece strips the leading space after BOS).
  std::string token_bytes(int prev, int id) const;
  // decode(encode(s)) == s for valid UTF-8 (dummy prefix removed).
  std::string decode(const std::vector<int>& ids) const;
  int vocab_size() const;
  int bos_id() const;
  int eos_id() const;
  const Vocab& vocab() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace oracle
