#pragma once
// ============================================================================
// float32 -> quantized blocks (the inverse of reference/model/quant.h).
// Q8_0, Q4_0 and Q4_K reproduce ggml's reference quantizers
// (quantize_row_q8_0_ref, quantize_row_q4_0_ref, quantize_row_q4_K_ref)
// operation by operation: same float32 sequence, roundf = round half away
// from zero, nearest_int = round half to even via the 1.5*2^23 trick, and the
// block scale rounded to fp16 to nearest even. So a file we write holds the
// same block bytes as llama-quantize's (without an importance matrix).
// I8_ROW is project-specific (docs/formats.md): per row one float32 scale
// s = max|x| / 127, then q = round_half_away(x / s) as int8 (all 0 if s == 0).
// ============================================================================
#include <cstdint>
#include <string>

#include "reference/model/model.h"

namespace oracle {

// True for the types quantize_row can write.
bool quantize_supported(DType t);

// Quantizes one row of n floats into dtype_row_bytes(t, n) bytes at dst.
// n must be a multiple of dtype_block_elems(t) (any n >= 1 for I8_ROW);
// throws InputError("<row>", "n", ...) otherwise.
void quantize_row(DType t, const float* src, int64_t n, uint8_t* dst);

// Per-type block quantizers (n a multiple of the block size).
void quantize_row_q8_0(const float* x, int64_t n, uint8_t* dst);  // 34-byte blocks of 32
void quantize_row_q4_0(const float* x, int64_t n, uint8_t* dst);  // 18-byte blocks of 32
void quantize_row_q4_K(const float* x, int64_t n, uint8_t* dst);  // 144-byte blocks of 256
void quantize_row_i8_row(const float* x, int64_t n, uint8_t* dst);  // 4 + n bytes

// I8_ROW quantize-then-dequantize in place: x[k] = s * q[k] (int8 KV cache).
// Same values as dequantize_row(I8_ROW, quantize_row_i8_row(x)).
void int8_row_roundtrip(float* x, int n);

// C's roundf: nearest integer, halves away from zero (|v| < 2^23 is exact).
float round_half_away(float v);

}  // namespace oracle
