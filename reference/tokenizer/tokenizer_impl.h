#pragma once
// Internal to the tokenizer: the lookup tables shared by tokenizer.cpp,
// tokenizer_spm.cpp and tokenizer_gpt2.cpp. Not part of the public contract.
#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "reference/tokenizer/pretokenizer.h"
#include "reference/tokenizer/tokenizer.h"

namespace oracle {

enum TokenType { kTokNormal = 1, kTokUnknown = 2, kTokControl = 3, kTokUserDefined = 4,
                 kTokUnused = 5, kTokByte = 6 };

struct Tokenizer::Impl {
  Vocab vocab;
  std::unordered_map<std::string, int> token_to_id;  // piece -> id (last id wins, as llama.cpp)
  std::array<int, 256> byte_to_id{};                 // (256) byte-fallback / byte-level token, -1 if none
  std::vector<std::string> token_text;               // (n_vocab) bytes each token decodes to
  std::unordered_map<std::string, int> merge_rank;   // GPT-2: merge_key(left, right) -> rank
  std::array<std::string, 256> byte_char{};          // (256) GPT-2 bytes_to_unicode, as UTF-8
  const PreTokenizer* pre = nullptr;                 // GPT-2 family: split patterns (pretokenizer.h)
  std::vector<uint8_t> attr;                         // (n_vocab) kAttr* bits
  std::vector<int> special_ids;                      // control/user-defined/unknown, longest text first
  std::vector<int> eog_ids;                          // end-of-generation ids, sorted
  std::unordered_map<int, int> retyped;              // id -> the type its text prints as (llama.cpp's EOG exceptions)

  // The GGUF type `id`'s text follows: the file's, unless an EOG exception re-attributed it.
  int text_type(size_t id, int file_type) const {
    auto it = retyped.find((int)id);
    return it == retyped.end() ? file_type : it->second;
  }

  int find(const std::string& piece) const {
    auto it = token_to_id.find(piece);
    return it == token_to_id.end() ? -1 : it->second;
  }
};

// Token attributes (llama.cpp's llama_token_attr, the bits we use).
enum TokenAttr : uint8_t { kAttrControl = 1, kAttrUserDefined = 2, kAttrUnknown = 4, kAttrRstrip = 8,
                           kAttrLstrip = 16 };

// tokenizer_special.cpp: attributes, the special-token list, EOG ids (llama.cpp's load).
void build_special_tables(Tokenizer::Impl& t);
// A piece of the prompt: a token found by its text, or raw text [offset, offset + length).
struct Fragment {
  int token;  // -1: raw text
  size_t offset;
  size_t length;
};
// llama.cpp's tokenizer_st_partition: split out special tokens' texts (longest
// first); control/unknown tokens only when parse_special.
std::vector<Fragment> partition_special(const Tokenizer::Impl& t, const std::string& text, bool parse_special);

// SentencePiece: `text` already has the dummy prefix and U+2581 for spaces.
void encode_spm(const Tokenizer::Impl& t, const std::string& text, std::vector<int>& out);

// GPT-2 byte-level BPE.
void gpt2_build_tables(Tokenizer::Impl& t);  // byte_char, merge_rank, byte_to_id, token_text
void encode_gpt2(const Tokenizer::Impl& t, const std::string& text, std::vector<int>& out);
// The GPT-2 pre-tokenizer: splits valid UTF-8 into the regex's words (exposed for tests).
std::vector<std::string> gpt2_pretokenize(const std::string& text);

}  // namespace oracle
