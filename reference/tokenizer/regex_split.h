#pragma once
// ============================================================================
// A small backtracking regex engine over Unicode code points, for the
// pre-tokenizers' split patterns (reference/tokenizer/pretokenizer.cpp), and llama.cpp's
// unicode_regex_split semantics on top of it.
//
// Syntax (everything else is refused with std::invalid_argument):
//   literals (UTF-8), escapes \r \n \t \f \v \\ \. \$ and any escaped
//   punctuation; \s \S (White_Space), \d ([0-9]); \p{L} \p{M} \p{N} \p{P} \p{S}
//   (general-category classes, reference/tokenizer/unicode_class.h); classes [...] with
//   ranges, negation and the escapes above; groups (?:...); lookahead (?!...)
//   and (?=...); alternation |; greedy ? * + {n} {n,} {n,m}; $ (end of the
//   fragment being split).
// Semantics: ECMAScript / PCRE leftmost-first (alternatives tried in order,
// greedy quantifiers backtrack), as std::regex, which llama.cpp uses for the
// patterns it has no hand-written matcher for. As llama.cpp's std::wregex
// path, a non-ASCII White_Space code point compares as U+000B against
// literals and ranges (it still matches \s).
// ============================================================================
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oracle {

struct RegexNode;

class SplitRegex {
 public:
  explicit SplitRegex(const std::string& pattern);  // throws std::invalid_argument
  // Length (in code points) of the leftmost-first match starting at `pos` of
  // cps[begin, end), or -1 if none starts there.
  long match_at(const std::vector<uint32_t>& cps, size_t begin, size_t end, size_t pos) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::shared_ptr<const RegexNode> root_;
};

// llama.cpp's unicode_regex_split_stl over code points: each fragment
// (`lengths`, in code points, summing to cps.size()) is searched for
// successive non-empty matches; matches and the text between them become the
// new fragments, in order.
std::vector<size_t> regex_split(const std::vector<uint32_t>& cps, const SplitRegex& re,
                                const std::vector<size_t>& lengths);

// Applies the patterns one after the other (each splits the previous
// fragments) and returns the words as UTF-8. `text` must be valid UTF-8.
std::vector<std::string> regex_split_words(const std::string& text, const std::vector<SplitRegex>& patterns);

}  // namespace oracle
