#pragma once
// ============================================================================
// Unicode classification for the pre-tokenizers (reference/tokenizer/pretokenizer.h):
// the general-category class of every code point (\p{L}, \p{M}, \p{N},
// \p{P}, \p{S}, \p{Z}, \p{C}; unassigned code points are Undefined) and the
// White_Space property (\s). Tables: unicode_data.cpp, generated from Python's
// unicodedata (version in kUnicodeDataVersion) by
// reference/tests/data/gen_unicode_data.py; exact over U+0000..U+10FFFF.
// ============================================================================
#include <cstdint>

namespace oracle {

enum class UnicodeCategory : uint8_t { Undefined = 0, Letter, Mark, Number, Punctuation, Symbol,
                                       Separator, Other };

UnicodeCategory unicode_category(uint32_t cp);
// White_Space (U+0009..000D, 0020, 0085, 00A0, 1680, 2000..200A, 2028, 2029,
// 202F, 205F, 3000): the set llama.cpp's \s uses.
bool unicode_is_whitespace(uint32_t cp);

// The classes of the GPT-2 regex: letter, number, whitespace or other.
enum class UnicodeClass { Letter, Number, Whitespace, Other };
UnicodeClass unicode_class(uint32_t cp);

// One run of equal class in the generated table (sorted, disjoint, inclusive).
struct UnicodeRun {
  uint32_t first;
  uint32_t last;
  uint8_t category;  // UnicodeCategory
};
extern const UnicodeRun kUnicodeRuns[];
extern const int kNumUnicodeRuns;
extern const char kUnicodeDataVersion[];

}  // namespace oracle
