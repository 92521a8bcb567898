#pragma once
// Internal to the row quantizers (quantize_rows.cpp, quantize_kquants.cpp): the
// scalar helpers of ggml-quants.c with their exact C semantics.
#include <cstdint>
#include <cstring>
#include <string>

#include "reference/base/errors.h"
#include "numerics/numerics.h"

namespace oracle::qh {

inline float abs_f32(float v) { return num::f32_from_bits(num::f32_bits(v) & 0x7fffffffu); }

// ggml's nearest_int: round half to even through the 1.5*2^23 trick (exact
// for |v| < 2^22; outside that range the same bits as ggml's, as in C).
inline int nearest_int(float v) {
  float shifted = v + 12582912.0f;
  int32_t bits = (int32_t)num::f32_bits(shifted);
  return (bits & 0x007fffff) - 0x00400000;
}

// ggml's MAX(lo, MIN(hi, v)).
inline int clamp_int(int v, int lo, int hi) {
  int t = hi < v ? hi : v;
  return lo > t ? lo : t;
}

inline void store_fp16(uint8_t* dst, float v) {
  uint16_t h = num::f32_to_fp16(v);
  std::memcpy(dst, &h, sizeof h);
}

inline void require_multiple(int64_t n, int64_t block, const char* type) {
  require_input(n % block == 0, "<row>", "n",
                std::to_string(n) + " elements is not a multiple of the " + type + " block (" +
                    std::to_string(block) + ")");
}

}  // namespace oracle::qh
