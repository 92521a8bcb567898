#pragma once
// ============================================================================
// The integer view of a stored weight row, for the ggml numerics profile
// (docs/numerics.md "Engine-numerics profile ggml"): ggml's CPU dot products
// never dequantize a weight; they multiply its integer levels by the int8
// activation levels and apply the block scales afterwards. Every value of
// the row is
//     32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0):  d[b] · lv[j]  (+ m[b])
//     k-quants  (Q2_K … Q6_K):                   d[b] · sc[s] · lv[j] − m[b] · mn[s]
// with b = j / block, s = j / 16 (a 32-wide k-quant sub-block gives its two
// halves the same sc, mn). The levels, scales and mins are exactly the
// integers ggml's vec_dot_*_q8_* read; d, m are the fp16 block
// scales as float32 (Q4_1/Q5_1: m is the block's min; k-quants: m is dmin).
// ============================================================================
#include <cstdint>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

struct LevelRow {
  std::vector<int8_t> lv;        // (K) integer levels
  std::vector<int16_t> sc, mn;   // (K / 16) k-quants: sub-block scale and min (mn 0 without mins)
  std::vector<float> d, m;       // (blocks) block scale; min term (0 where the type has none)
  bool has_min = false;          // Q4_1, Q5_1, Q2_K, Q4_K, Q5_K
};

// True for the types decode_levels handles (the quantized weight types with a
// ggml CPU vec_dot: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K).
bool has_levels(DType t);
// Decodes `row` (K elements, a whole number of blocks) into `out` (resized).
void decode_levels(DType t, const uint8_t* row, int64_t K, LevelRow& out);

}  // namespace oracle
