#pragma once
// ============================================================================
// Tokenizer: SentencePiece-style BPE (scores + byte fallback, dummy prefix)
// and GPT-2 byte-level BPE (merges). Built from a Vocab (GGUF-embedded or a
// llama2.c tokenizer.bin). Encoding follows llama.cpp's llm_tokenizer_spm /
// llm_tokenizer_bpe (and equals llama2.c's encode() on its tokenizers); see
// docs/tokenizer.md.
// ============================================================================
#include <memory>
#include <string>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

// llama2.c tokenizer.bin / tok512.bin -> Vocab (SentencePiece, BOS 1, EOS 2).
// Pieces are stored as in GGUF: U+2581 for space, "<s>"/"</s>" for ids 1/2.
// `expected_vocab_size` > 0 is checked against the number of records in the
// file (InputError(path, "vocab_size", ...) on mismatch).
Vocab load_llama2c_tokenizer(const std::string& path, int expected_vocab_size);

// InputError(vocab.source, "vocab_size", ...) when a tokenizer and a model disagree.
void require_vocab_size(const Vocab& vocab, int model_vocab_size, const std::string& model_path);

// What encode() adds and parses (llama.cpp's llama_tokenize add_special / parse_special).
struct EncodeOptions {
  bool add_bos = false;        // prepend BOS
  bool add_eos = false;        // append EOS (callers pass vocab().add_eos with add_bos)
  bool parse_special = false;  // control and unknown tokens written in the text become their ids
};

class Tokenizer {
 public:
  // Checks the vocabulary (sizes of scores/types, BOS/EOS ids, merges) and
  // builds the lookup tables; InputError(vocab.source, field, ...) if bad.
  explicit Tokenizer(Vocab vocab);
  // Encodes UTF-8 text; InputError("<text>", "prompt", ...) on invalid UTF-8.
  // User-defined tokens are always split out of the text first (as llama.cpp);
  // control/unknown tokens only with parse_special.
  std::vector<int> encode(const std::string& text, const EncodeOptions& options) const;
  // Plain text: encode(text, {add_bos, false, false}).
  std::vector<int> encode(const std::string& text, bool add_bos) const;
  // The raw bytes token `id` contributes (byte-fallback <0xAB> -> one byte,
  // U+2581 -> space, GPT-2 byte mapping undone, control tokens -> "", unknown
  // -> U+2585 as llama.cpp). `prev` is the previous token or -1 at the start:
  // SentencePiece strips one leading space after BOS or at the start.
  std::string token_bytes(int prev, int id) const;
  // decode(encode(s)) == s for valid UTF-8 (dummy prefix removed), except that
  // with SentencePiece vocabularies a literal U+2581 in s comes back as a space
  // (it is the same piece as an escaped space, as in sentencepiece and llama.cpp). The result
  // may be invalid UTF-8 if `ids` cut a byte-fallback character.
  std::string decode(const std::vector<int>& ids) const;
  int vocab_size() const;
  int bos_id() const;
  int eos_id() const;
  // End-of-generation ids (EOS, EOT, EOM and llama.cpp's EOG texts), sorted.
  const std::vector<int>& eog_ids() const;
  bool is_eog(int id) const;
  const Vocab& vocab() const;

  struct Impl;  // lookup tables (tokenizer_spm.cpp, tokenizer_gpt2.cpp)

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace oracle
