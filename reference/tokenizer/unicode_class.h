#pragma once
// ============================================================================
// A small Unicode classifier for the GPT-2 pre-tokenizer regex: letter (\p{L}),
// number (\p{N}), whitespace (\s, the White_Space property) or other.
// Coverage: exact (Unicode 14, checked against Python's unicodedata by
// test_tokenizer) for the blocks listed in kCoveredBlocks; every code point
// outside them is classed "other" except U+20000..U+3134F (CJK ext., letters).
// ============================================================================
#include <cstdint>

namespace oracle {

enum class UnicodeClass { Letter, Number, Whitespace, Other };

UnicodeClass unicode_class(uint32_t cp);

// Inclusive code point ranges whose classification is exact.
struct CodepointRange {
  uint32_t first;
  uint32_t last;
};
extern const CodepointRange kCoveredBlocks[];
extern const int kNumCoveredBlocks;

}  // namespace oracle
