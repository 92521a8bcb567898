#pragma once
// ============================================================================
// The weight type (docs/formats.md): ggml's type ids, one enum for every layer
// — the loader and the CPU matmul (reference/model, reference/compute), the
// kernels' typed weight view (kernels/matmul.cuh WeightView), the device model
// (optimized/) and the tests. With it, the block geometry: elements and bytes
// per block, as ggml-common.h lays the blocks out.
// Header-only, standard library only, compiles as C++ and CUDA.
// (The public API's llm_oracle::DType, include/llm_oracle/types.h, is a
// deliberate copy at the library boundary; api/types.cpp asserts every id.)
// ============================================================================
#include <cstdint>

#include "numerics/spec.h"

#if defined(__CUDACC__) && !defined(ORACLE_CUDA_EMULATION)
#define ORACLE_DTYPE_HD __host__ __device__
#else
#define ORACLE_DTYPE_HD
#endif

namespace oracle {

// ---- Storage types (ggml's type ids) -------------------------------------------------
enum class DType : int {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, BF16 = 30,
  // Project-specific per-row int8 (see docs/formats.md); outside ggml's range.
  I8_ROW = 1000,
};

// Elements per block: 1 for F32 / F16 / BF16 (and I8_ROW, whose row is one float32
// scale then int8 values), 32 or 256 for ggml's quantized blocks; 0 for no type.
ORACLE_DTYPE_HD constexpr int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::I8_ROW: return 1;
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q8_1: return spec::kQuantBlock;
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
    case DType::Q8_K: return spec::kQuantSuperBlock;
  }
  return 0;
}

// Bytes per block (ggml-common.h's block structs; I8_ROW: 1 per element, plus the
// row's 4-byte scale, which reference/model/quant.h dtype_row_bytes adds); 0 for no type.
ORACLE_DTYPE_HD constexpr int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I8_ROW: return 1;
    case DType::Q4_0: return spec::kQ4_0BlockBytes;  // fp16 d, 16 bytes of nibbles
    case DType::Q4_1: return 20;                     // fp16 d, fp16 m, 16 bytes of nibbles
    case DType::Q5_0: return 22;                     // fp16 d, qh[4], qs[16]
    case DType::Q5_1: return 24;                     // fp16 d, fp16 m, qh[4], qs[16]
    case DType::Q8_0: return spec::kQ8_0BlockBytes;  // fp16 d, 32 int8
    case DType::Q8_1: return 36;                     // fp16 d, fp16 s, 32 int8
    case DType::Q2_K: return 84;                     // scales[16] qs[64] d dmin
    case DType::Q3_K: return 110;                    // hmask[32] qs[64] scales[12] d
    case DType::Q4_K: return 144;                    // d dmin scales[12] qs[128]
    case DType::Q5_K: return 176;                    // d dmin scales[12] qh[32] qs[128]
    case DType::Q6_K: return 210;                    // ql[128] qh[64] scales[16] d
    case DType::Q8_K: return 292;                    // float d, qs[256], bsums[16]
  }
  return 0;
}

}  // namespace oracle
