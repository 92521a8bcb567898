#pragma once
// Exact float-bit comparison for the invariance tests: reports the first
// mismatch with both bit patterns.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "numerics/numerics.h"

namespace oracle::test {

// "" when a and b hold the same bits; else a message naming the first mismatch.
inline std::string first_bit_mismatch(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size())
    return "sizes differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); i++) {
    uint32_t x = num::f32_bits(a[i]), y = num::f32_bits(b[i]);
    if (x == y) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "first mismatch at %zu: %.9g (0x%08x) vs %.9g (0x%08x)", i,
                  (double)a[i], x, (double)b[i], y);
    return buf;
  }
  return "";
}

}  // namespace oracle::test
