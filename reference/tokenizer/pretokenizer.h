#pragma once
// ============================================================================
// The byte-level BPE pre-tokenizers named by GGUF `tokenizer.ggml.pre`: for
// each accepted name, llama.cpp's list of split patterns (llm_tokenizer_bpe in
// src/llama-vocab.cpp, applied one after the other as unicode_regex_split
// does) and its per-name switches. Names not listed are refused
// (InputError naming tokenizer.ggml.pre). Tested name by name against
// llama.cpp's conformance vectors (test_tokenizer_conformance, docs/tokenizer.md).
// ============================================================================
#include <string>
#include <vector>

#include "reference/tokenizer/regex_split.h"

namespace oracle {

struct PreTokenizer {
  std::string name;                  // canonical name (the vocabulary file it was tested on)
  std::vector<SplitRegex> patterns;  // applied in order
  bool ignore_merges = false;        // a word that is a token is emitted whole (llama-bpe)
  bool default_add_bos = false;      // BOS when the file has no add_bos_token key (llama-bpe)
};

// The pre-tokenizer for a GGUF `tokenizer.ggml.pre` value (aliases resolved),
// or nullptr if the name is not accepted.
const PreTokenizer* find_pretokenizer(const std::string& pre);
// Every accepted `tokenizer.ggml.pre` value (aliases included), sorted.
std::vector<std::string> accepted_pretokenizer_names();

}  // namespace oracle
