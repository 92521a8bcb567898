#pragma once
// ============================================================================
// float32 -> stored weight types (the inverse of reference/model/quant.h).
// F32/F16/BF16 and every ggml block type llama-quantize writes without an
// importance matrix — Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K — reproduce ggml's quantize_row_*_ref (ggml-quants.c) operation by
// operation: same float32 sequence, roundf = round half away from zero,
// nearest_int = round half to even via the 1.5*2^23 trick, C's float->int8
// truncation, fp16 scales rounded to nearest even. So a row we write holds
// the same bytes as llama-quantize's (docs/quantize.md).
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
void quantize_row_q4_1(const float* x, int64_t n, uint8_t* dst);  // 20-byte blocks of 32
void quantize_row_q5_0(const float* x, int64_t n, uint8_t* dst);  // 22-byte blocks of 32
void quantize_row_q5_1(const float* x, int64_t n, uint8_t* dst);  // 24-byte blocks of 32
void quantize_row_q2_K(const float* x, int64_t n, uint8_t* dst);  // 84-byte blocks of 256
void quantize_row_q3_K(const float* x, int64_t n, uint8_t* dst);  // 110-byte blocks of 256
void quantize_row_q4_K(const float* x, int64_t n, uint8_t* dst);  // 144-byte blocks of 256
void quantize_row_q5_K(const float* x, int64_t n, uint8_t* dst);  // 176-byte blocks of 256
void quantize_row_q6_K(const float* x, int64_t n, uint8_t* dst);  // 210-byte blocks of 256
void quantize_row_plain(DType t, const float* x, int64_t n, uint8_t* dst);  // F32, F16, BF16
void quantize_row_i8_row(const float* x, int64_t n, uint8_t* dst);  // 4 + n bytes

// I8_ROW quantize-then-dequantize in place: x[k] = s * q[k] (int8 KV cache).
// Same values as dequantize_row(I8_ROW, quantize_row_i8_row(x)).
void int8_row_roundtrip(float* x, int n);

// C's roundf: nearest integer, halves away from zero (|v| < 2^23 is exact).
float round_half_away(float v);

}  // namespace oracle
