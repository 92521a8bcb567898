#include "reference/tokenizer/unicode_class.h"

namespace oracle {

static const uint32_t kWhitespace[] = {
    0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x0020, 0x0085, 0x00A0, 0x1680,
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
    0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
};

bool unicode_is_whitespace(uint32_t cp) {
  for (uint32_t w : kWhitespace)
    if (cp == w) return true;
  return false;
}

UnicodeCategory unicode_category(uint32_t cp) {
  int lo = 0, hi = kNumUnicodeRuns;  // binary search for the last run with first <= cp
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (kUnicodeRuns[mid].first <= cp) lo = mid + 1; else hi = mid;
  }
  if (lo == 0 || cp > kUnicodeRuns[lo - 1].last) return UnicodeCategory::Undefined;
  return (UnicodeCategory)kUnicodeRuns[lo - 1].category;
}

UnicodeClass unicode_class(uint32_t cp) {
  if (unicode_is_whitespace(cp)) return UnicodeClass::Whitespace;
  switch (unicode_category(cp)) {
    case UnicodeCategory::Letter: return UnicodeClass::Letter;
    case UnicodeCategory::Number: return UnicodeClass::Number;
    default: return UnicodeClass::Other;
  }
}

}  // namespace oracle
