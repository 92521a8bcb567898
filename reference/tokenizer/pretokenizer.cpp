#include "reference/tokenizer/pretokenizer.h"

#include <algorithm>
#include <map>

namespace oracle {

namespace {

// The patterns as llama.cpp writes them (its adaptations of each model's
// tokenizer.json: (?i:...) spelled out as [sS] pairs).
const char* const kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen35 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ"
    "-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐ"
    "ῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯ"
    "ꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

struct Spec {
  std::vector<std::string> patterns;
  bool ignore_merges;
  bool default_add_bos;
};

// canonical name -> spec
const std::map<std::string, Spec>& specs() {
  static const std::map<std::string, Spec> table = {
      {"gpt-2", {{kGpt2}, false, false}},
      {"llama-bpe", {{kLlama3}, true, true}},
      {"qwen2", {{kQwen2}, false, false}},
      {"qwen35", {{kQwen35}, false, false}},
      {"starcoder", {{"\\p{N}", kGpt2}, false, false}},
      {"deepseek-llm", {{"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$",
                         "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"}, false, false}},
      {"deepseek-coder", {{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"}, false, false}},
      {"falcon", {{"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}, false, false}},
  };
  return table;
}

// GGUF name -> canonical name (llama.cpp's llama_vocab::impl::load groups them).
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table = {
      {"gpt-2", "gpt-2"},         {"phi-2", "gpt-2"},          {"mpt", "gpt-2"},
      {"llama-bpe", "llama-bpe"}, {"llama3", "llama-bpe"},     {"llama-v3", "llama-bpe"},
      {"qwen2", "qwen2"},         {"deepseek-r1-qwen", "qwen2"}, {"qwen35", "qwen35"},
      {"starcoder", "starcoder"}, {"refact", "starcoder"},     {"command-r", "starcoder"},
      {"smollm", "starcoder"},    {"deepseek-llm", "deepseek-llm"},
      {"deepseek-coder", "deepseek-coder"},                    {"falcon", "falcon"},
  };
  return table;
}

std::map<std::string, PreTokenizer> build() {
  std::map<std::string, PreTokenizer> out;
  for (const auto& [name, spec] : specs()) {
    PreTokenizer p{name, {}, spec.ignore_merges, spec.default_add_bos};
    for (const std::string& pattern : spec.patterns) p.patterns.emplace_back(pattern);
    out.emplace(name, std::move(p));
  }
  return out;
}

}  // namespace

const PreTokenizer* find_pretokenizer(const std::string& pre) {
  static const std::map<std::string, PreTokenizer> compiled = build();  // immutable after first use
  auto alias = aliases().find(pre);
  if (alias == aliases().end()) return nullptr;
  return &compiled.at(alias->second);
}

std::vector<std::string> accepted_pretokenizer_names() {
  std::vector<std::string> names;
  for (const auto& [name, canonical] : aliases()) names.push_back(name);
  return names;
}

}  // namespace oracle
