#pragma once
// Bit unpacking shared by dequantize_row (quant.cpp) and the integer view of
// the ggml profile (quant_levels.cpp): ggml-quants.c's layouts, one place.
#include <cstdint>
#include <cstring>

#include "reference/model/quant.h"

namespace oracle::qbits {

// Block i of a row (unaligned bytes -> struct).
template <class Block>
Block load_block(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

// The 5th bit of element j lives in bit j of qh (little-endian u32).
inline void q5_values(const uint8_t* qs, const uint8_t* qh4, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  for (int j = 0; j < QK4_0 / 2; j++) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
    q[j + QK4_0 / 2] = (qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
  }
}

// Unpacks Q3_K's 16 six-bit scales (low 4 bits in bytes 0..7, high 2 bits in 8..11).
inline void q3_k_scales(const uint8_t* packed, int* scales) {
  for (int j = 0; j < 16; j++) {
    int low = (j < 8) ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    int high = (packed[8 + (j % 4)] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
}

// Q4_K/Q5_K: 8 six-bit (scale, min) pairs packed in 12 bytes (ggml get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace oracle::qbits
