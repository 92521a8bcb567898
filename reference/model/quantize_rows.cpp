// float32 -> F32 / F16 / BF16 rows, Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 blocks
// of 32, I8_ROW rows, and the dispatch over every type (the k-quants are in
// quantize_kquants.cpp). See quantize_rows.h for the contract: ggml's *_ref
// quantizers reproduced operation for operation (the build uses
// -ffp-contract=off, so every a*b+c below is two roundings, as in ggml-base,
// which is compiled for baseline x86-64 without FMA).
#include "reference/model/quantize_rows.h"

#include <cstring>
#include <string>

#include "base/errors.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "reference/model/quantize_helpers.h"

namespace oracle {
namespace {

using num::f32_to_fp16;
using qh::abs_f32;
using qh::require_multiple;
using qh::store_fp16;

}  // namespace

float round_half_away(float v) {
  float a = abs_f32(v);
  if (!(a < 8388608.0f)) return v;  // already an integer (or NaN / inf)
  float t = (float)(int32_t)a;      // truncation
  if (a - t >= 0.5f) t = t + 1.0f;  // a - t is exact
  return v < 0.0f ? -t : t;
}

// ---- Q8_0: d = amax / 127, q = roundf(x / d) ----------------------------------------
void quantize_row_q8_0(const float* x, int64_t n, uint8_t* dst) {
  require_multiple(n, QK4_0, "Q8_0");
  for (int64_t b = 0; b < n / QK4_0; b++, x += QK4_0, dst += sizeof(BlockQ8_0)) {
    float amax = 0.0f;
    for (int j = 0; j < QK4_0; j++) {
      float a = abs_f32(x[j]);
      amax = amax > a ? amax : a;
    }
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(dst, d);
    int8_t* qs = reinterpret_cast<int8_t*>(dst + 2);
    for (int j = 0; j < QK4_0; j++) qs[j] = (int8_t)qh::trunc_i8(round_half_away(x[j] * id));
  }
}

// ---- Q4_0: d = (signed value of largest magnitude) / -8, q = min(15, trunc(x/d + 8.5))
void quantize_row_q4_0(const float* x, int64_t n, uint8_t* dst) {
  require_multiple(n, QK4_0, "Q4_0");
  for (int64_t b = 0; b < n / QK4_0; b++, x += QK4_0, dst += sizeof(BlockQ4_0)) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK4_0; j++)
      if (amax < abs_f32(x[j])) {
        amax = abs_f32(x[j]);
        max = x[j];
      }
    float d = max / -8.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(dst, d);
    uint8_t* qs = dst + 2;
    for (int j = 0; j < QK4_0 / 2; j++) {
      int lo = qh::trunc_i8(x[j] * id + 8.5f);
      int hi = qh::trunc_i8(x[j + QK4_0 / 2] * id + 8.5f);
      lo = lo < 15 ? lo : 15;
      hi = hi < 15 ? hi : 15;
      qs[j] = (uint8_t)(lo | (hi << 4));
    }
  }
}

// ---- Q4_1: d = (max - min) / 15, m = min, q = min(15, trunc((x - min)/d + 0.5)) ----
namespace {
struct MinMax {
  float min, max;
};
MinMax block_min_max(const float* x) {
  MinMax r{3.40282347e38f, -3.40282347e38f};  // FLT_MAX, -FLT_MAX
  for (int j = 0; j < QK4_0; j++) {
    if (x[j] < r.min) r.min = x[j];
    if (x[j] > r.max) r.max = x[j];
  }
  return r;
}

// The value of largest magnitude (the first one on ties), as Q4_0/Q5_0 pick it.
float signed_abs_max(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK4_0; j++)
    if (amax < abs_f32(x[j])) {
      amax = abs_f32(x[j]);
      max = x[j];
    }
  return max;
}

// The 5th bits of 32 levels, bit j for element j (little-endian u32 in qh).
void store_qh(uint8_t* qh4, const uint8_t* lo, const uint8_t* hi) {
  uint32_t qh = 0;
  for (int j = 0; j < QK4_0 / 2; j++) {
    qh |= ((lo[j] & 0x10u) >> 4) << j;
    qh |= ((hi[j] & 0x10u) >> 4) << (j + QK4_0 / 2);
  }
  std::memcpy(qh4, &qh, 4);
}
}  // namespace

void quantize_row_q4_1(const float* x, int64_t n, uint8_t* dst) {
  require_multiple(n, QK4_0, "Q4_1");
  for (int64_t b = 0; b < n / QK4_0; b++, x += QK4_0, dst += sizeof(BlockQ4_1)) {
    MinMax mm = block_min_max(x);
    float d = (mm.max - mm.min) / 15.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(dst, d);
    store_fp16(dst + 2, mm.min);
    uint8_t* qs = dst + 4;
    for (int j = 0; j < QK4_0 / 2; j++) {
      int lo = qh::trunc_i8((x[j] - mm.min) * id + 0.5f);
      int hi = qh::trunc_i8((x[j + QK4_0 / 2] - mm.min) * id + 0.5f);
      lo = lo < 15 ? lo : 15;
      hi = hi < 15 ? hi : 15;
      qs[j] = (uint8_t)(lo | (hi << 4));
    }
  }
}

// ---- Q5_0: d = (signed value of largest magnitude) / -16, q = min(31, trunc(x/d + 16.5))
void quantize_row_q5_0(const float* x, int64_t n, uint8_t* dst) {
  require_multiple(n, QK4_0, "Q5_0");
  for (int64_t b = 0; b < n / QK4_0; b++, x += QK4_0, dst += sizeof(BlockQ5_0)) {
    float d = signed_abs_max(x) / -16.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(dst, d);
    uint8_t lo[QK4_0 / 2], hi[QK4_0 / 2];
    for (int j = 0; j < QK4_0 / 2; j++) {
      int a = qh::trunc_i8(x[j] * id + 16.5f);
      int c = qh::trunc_i8(x[j + QK4_0 / 2] * id + 16.5f);
      lo[j] = (uint8_t)(a < 31 ? a : 31);
      hi[j] = (uint8_t)(c < 31 ? c : 31);
      dst[6 + j] = (uint8_t)((lo[j] & 0x0F) | ((hi[j] & 0x0F) << 4));
    }
    store_qh(dst + 2, lo, hi);
  }
}

// ---- Q5_1: d = (max - min) / 31, m = min, q = trunc((x - min)/d + 0.5) -----------------
void quantize_row_q5_1(const float* x, int64_t n, uint8_t* dst) {
  require_multiple(n, QK4_0, "Q5_1");
  for (int64_t b = 0; b < n / QK4_0; b++, x += QK4_0, dst += sizeof(BlockQ5_1)) {
    MinMax mm = block_min_max(x);
    float d = (mm.max - mm.min) / 31.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(dst, d);
    store_fp16(dst + 2, mm.min);
    uint8_t lo[QK4_0 / 2], hi[QK4_0 / 2];
    for (int j = 0; j < QK4_0 / 2; j++) {
      lo[j] = qh::trunc_u8((x[j] - mm.min) * id + 0.5f);
      hi[j] = qh::trunc_u8((x[j + QK4_0 / 2] - mm.min) * id + 0.5f);
      dst[8 + j] = (uint8_t)((lo[j] & 0x0F) | ((hi[j] & 0x0F) << 4));
    }
    store_qh(dst + 4, lo, hi);
  }
}

// ---- F32 / F16 / BF16 rows: copy, or round to nearest even (ggml_fp32_to_fp16_row,
// ggml_fp32_to_bf16_row_ref; NaN -> quiet NaN) ------------------------------------------
void quantize_row_plain(DType t, const float* x, int64_t n, uint8_t* dst) {
  if (t == DType::F32) {
    std::memcpy(dst, x, (size_t)n * 4);
    return;
  }
  for (int64_t j = 0; j < n; j++) {
    uint16_t h = t == DType::F16 ? f32_to_fp16(x[j]) : num::f32_to_bf16(x[j]);
    std::memcpy(dst + 2 * j, &h, 2);
  }
}

// ---- I8_ROW: [float32 s][int8 q[n]], s = max|x| / 127, q = round_half_away(x / s) ----
void quantize_row_i8_row(const float* x, int64_t n, uint8_t* dst) {
  float amax = 0.0f;
  for (int64_t k = 0; k < n; k++) {
    float a = abs_f32(x[k]);
    amax = amax > a ? amax : a;
  }
  float s = amax / 127.0f;
  std::memcpy(dst, &s, sizeof s);
  int8_t* q = reinterpret_cast<int8_t*>(dst + sizeof s);
  for (int64_t k = 0; k < n; k++) {
    float v = s != 0.0f ? round_half_away(x[k] / s) : 0.0f;
    v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
    q[k] = (int8_t)qh::trunc_i8(v);  // NaN: 0, never UB
  }
}

void int8_row_roundtrip(float* x, int n) {
  float amax = 0.0f;
  for (int k = 0; k < n; k++) {
    float a = abs_f32(x[k]);
    amax = amax > a ? amax : a;
  }
  float s = amax / 127.0f;
  for (int k = 0; k < n; k++) {
    float v = s != 0.0f ? round_half_away(x[k] / s) : 0.0f;
    v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
    x[k] = s * v;  // (float)(int8) q is exact: the same value the reader computes
  }
}

// ---- dispatch -------------------------------------------------------------------------
bool quantize_supported(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16:
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
    case DType::I8_ROW:
      return true;
    default:
      return false;
  }
}

void quantize_row(DType t, const float* src, int64_t n, uint8_t* dst) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: return quantize_row_plain(t, src, n, dst);
    case DType::Q4_0: return quantize_row_q4_0(src, n, dst);
    case DType::Q4_1: return quantize_row_q4_1(src, n, dst);
    case DType::Q5_0: return quantize_row_q5_0(src, n, dst);
    case DType::Q5_1: return quantize_row_q5_1(src, n, dst);
    case DType::Q8_0: return quantize_row_q8_0(src, n, dst);
    case DType::Q2_K: return quantize_row_q2_K(src, n, dst);
    case DType::Q3_K: return quantize_row_q3_K(src, n, dst);
    case DType::Q4_K: return quantize_row_q4_K(src, n, dst);
    case DType::Q5_K: return quantize_row_q5_K(src, n, dst);
    case DType::Q6_K: return quantize_row_q6_K(src, n, dst);
    case DType::I8_ROW: return quantize_row_i8_row(src, n, dst);
    default:
      throw InputError("<row>", "type",
                       std::string("cannot quantize to ") + dtype_name(t) +
                           " (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, I8_ROW)");
  }
}

}  // namespace oracle
