#pragma once
// ============================================================================
// Weight storage types: block layouts of ggml's quantizations (exactly as
// ggml-common.h defines them) and exact dequantization to float32.
// Every block stores its scales as fp16 (or fp32 for Q8_K); a dequantized value
// is d * q, or with an offset one fused multiply-add (numerics v2: fma(q, d, m),
// fma(d, q, -m)), in the operation order of ggml's reference dequantize_row_*;
// without an offset the results match ggml bit for bit, with one they match an
// FMA build of ggml (docs/numerics.md §5.1).
// I8_ROW is project-specific: per row one float32 scale, then int8 values.
// ============================================================================
#include <cstdint>
#include <string>

#include "numerics/spec.h"
#include "reference/model/model.h"

namespace oracle {

constexpr int QK4_0 = spec::kQuantBlock;  // elements per Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q8_1 block
constexpr int QK_K = spec::kQuantSuperBlock;  // elements per k-quant super-block
constexpr int K_SCALE_SIZE = 12;

// ---- block structs (byte-exact with ggml-common.h) --------------------------------
struct BlockQ4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };                    // 18 bytes
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[QK4_0 / 2]; };        // 20 bytes
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK4_0 / 2]; };     // 22 bytes
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK4_0 / 2]; };  // 24
struct BlockQ8_0 { uint16_t d; int8_t qs[QK4_0]; };                         // 34 bytes
struct BlockQ8_1 { uint16_t d; uint16_t s; int8_t qs[QK4_0]; };             // 36 bytes
struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };  // 84
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };  // 110
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };  // 144
struct BlockQ5_K {
  uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2];
};  // 176
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };  // 210
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };  // 292

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
// numerics/dtype.h's geometry is these structs'.
static_assert(dtype_block_bytes(DType::Q4_0) == sizeof(BlockQ4_0) && dtype_block_bytes(DType::Q4_1) == sizeof(BlockQ4_1));
static_assert(dtype_block_bytes(DType::Q5_0) == sizeof(BlockQ5_0) && dtype_block_bytes(DType::Q5_1) == sizeof(BlockQ5_1));
static_assert(dtype_block_bytes(DType::Q8_0) == sizeof(BlockQ8_0) && dtype_block_bytes(DType::Q8_1) == sizeof(BlockQ8_1));
static_assert(dtype_block_bytes(DType::Q2_K) == sizeof(BlockQ2_K) && dtype_block_bytes(DType::Q3_K) == sizeof(BlockQ3_K));
static_assert(dtype_block_bytes(DType::Q4_K) == sizeof(BlockQ4_K) && dtype_block_bytes(DType::Q5_K) == sizeof(BlockQ5_K));
static_assert(dtype_block_bytes(DType::Q6_K) == sizeof(BlockQ6_K) && dtype_block_bytes(DType::Q8_K) == sizeof(BlockQ8_K));
static_assert(dtype_block_elems(DType::Q4_0) == QK4_0 && dtype_block_elems(DType::Q8_K) == QK_K);

// ---- type table ---------------------------------------------------------------------
// False for ggml types we do not implement (IQ*, TQ*, F64, I8..I64 ...).
bool dtype_supported(int ggml_type);
const char* dtype_name(DType t);
// dtype_block_elems / dtype_block_bytes (the block geometry): numerics/dtype.h.
// Bytes of a row of n elements; -1 when n is not a multiple of the block size
// (I8_ROW: 4 + n). Callers turn -1 into an InputError naming the tensor.
int64_t dtype_row_bytes(DType t, int64_t n);

// ---- dequantization -----------------------------------------------------------------
// n elements (a whole number of blocks) from src to dst; exact, as ggml defines it.
void dequantize_row(DType t, const uint8_t* src, int64_t n, float* dst);

}  // namespace oracle
