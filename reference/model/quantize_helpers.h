#pragma once
// Internal to the row quantizers (quantize_rows.cpp, quantize_kquants.cpp): the
// scalar helpers of ggml-quants.c with their exact C semantics.
#include <cstdint>
#include <cstring>
#include <string>

#include "base/errors.h"
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

// ggml's (int8_t)(f) and (uint8_t)(f) casts as gcc compiles them for x86-64
// (cvttss2si: truncation toward zero, INT32_MIN for NaN or outside the int32
// range; then the low byte), written without C++'s undefined behaviour for
// ±inf/NaN — which a subnormal block scale produces (1/d = inf). Same bytes
// llama-quantize writes; in range, plain truncation.
inline int32_t cvtt_i32(float f) {
  return f >= -2147483648.0f && f < 2147483648.0f ? (int32_t)f : INT32_MIN;
}
inline int trunc_i8(float f) { return (int8_t)(uint8_t)((uint32_t)cvtt_i32(f) & 0xffu); }
inline uint8_t trunc_u8(float f) { return (uint8_t)((uint32_t)cvtt_i32(f) & 0xffu); }

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
