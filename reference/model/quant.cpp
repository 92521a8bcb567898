// Exact dequantization of ggml's block formats (ggml-quants.c, dequantize_row_*).
// Each value is computed with the float32 operations of ggml's reference C code
// in its order; numerics v2 (docs/numerics.md §5.1): a quant times a scale plus
// an offset is one fused multiply-add, written explicitly (num::fma_rn:
// fma(q, d, m) for Q4_1/Q5_1, fma(dl, q, -ml) for Q2_K/Q4_K/Q5_K); every
// other step is one rounded mul (-ffp-contract=off: no compiler fuses).
#include "reference/model/quant.h"
#include "reference/model/quant_bits.h"

#include <cstring>

#include "numerics/numerics.h"

namespace oracle {

// ---- type table ---------------------------------------------------------------------
// The names of the types we implement; their block geometry is numerics/dtype.h's.
namespace {
struct TypeName {
  DType type;
  const char* name;
};

constexpr TypeName kTypes[] = {
    {DType::F32, "F32"},   {DType::F16, "F16"},   {DType::BF16, "BF16"}, {DType::Q4_0, "Q4_0"},
    {DType::Q4_1, "Q4_1"}, {DType::Q5_0, "Q5_0"}, {DType::Q5_1, "Q5_1"}, {DType::Q8_0, "Q8_0"},
    {DType::Q8_1, "Q8_1"}, {DType::Q2_K, "Q2_K"}, {DType::Q3_K, "Q3_K"}, {DType::Q4_K, "Q4_K"},
    {DType::Q5_K, "Q5_K"}, {DType::Q6_K, "Q6_K"}, {DType::Q8_K, "Q8_K"}, {DType::I8_ROW, "I8_ROW"},
};

const TypeName* type_name(int t) {
  for (const TypeName& info : kTypes)
    if (static_cast<int>(info.type) == t) return &info;
  return nullptr;
}
}  // namespace

bool dtype_supported(int ggml_type) { return type_name(ggml_type) != nullptr; }

const char* dtype_name(DType t) {
  const TypeName* info = type_name(static_cast<int>(t));
  return info ? info->name : "unknown";
}

int64_t dtype_row_bytes(DType t, int64_t n) {
  const int64_t elems = dtype_block_elems(t);
  if (!type_name(static_cast<int>(t)) || elems == 0 || n < 0 || n % elems != 0) return -1;
  if (t == DType::I8_ROW) return 4 + n;  // float32 scale, then n int8
  return n / elems * dtype_block_bytes(t);
}

// ---- 32-element blocks -----------------------------------------------------------------
namespace {

using qbits::q5_values;
using qbits::q3_k_scales;
using qbits::scale_min_k4;

using qbits::load_block;

void dequant_q4_0(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    BlockQ4_0 b = load_block<BlockQ4_0>(src, i);
    const float d = num::fp16_to_f32(b.d);
    for (int j = 0; j < QK4_0 / 2; j++) {
      y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
      y[j + QK4_0 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    BlockQ4_1 b = load_block<BlockQ4_1>(src, i);
    const float d = num::fp16_to_f32(b.d), m = num::fp16_to_f32(b.m);
    for (int j = 0; j < QK4_0 / 2; j++) {
      y[j] = num::fma_rn(static_cast<float>(b.qs[j] & 0x0F), d, m);
      y[j + QK4_0 / 2] = num::fma_rn(static_cast<float>(b.qs[j] >> 4), d, m);
    }
  }
}

void dequant_q5_0(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    BlockQ5_0 b = load_block<BlockQ5_0>(src, i);
    const float d = num::fp16_to_f32(b.d);
    int q[QK4_0];
    q5_values(b.qs, b.qh, q);
    for (int j = 0; j < QK4_0; j++) y[j] = static_cast<float>(q[j] - 16) * d;
  }
}

void dequant_q5_1(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    BlockQ5_1 b = load_block<BlockQ5_1>(src, i);
    const float d = num::fp16_to_f32(b.d), m = num::fp16_to_f32(b.m);
    int q[QK4_0];
    q5_values(b.qs, b.qh, q);
    for (int j = 0; j < QK4_0; j++) y[j] = num::fma_rn(static_cast<float>(q[j]), d, m);
  }
}

void dequant_q8_0(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    BlockQ8_0 b = load_block<BlockQ8_0>(src, i);
    const float d = num::fp16_to_f32(b.d);
    for (int j = 0; j < QK4_0; j++) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// ggml has no dequantize_row_q8_1 (Q8_1 is an activation format); d * q, s ignored.
void dequant_q8_1(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    BlockQ8_1 b = load_block<BlockQ8_1>(src, i);
    const float d = num::fp16_to_f32(b.d);
    for (int j = 0; j < QK4_0; j++) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// ---- k-quants (256-element super-blocks) -------------------------------------------------
void dequant_q2_k(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++) {
    BlockQ2_K b = load_block<BlockQ2_K>(src, i);
    const float d = num::fp16_to_f32(b.d), dmin = num::fp16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; half++) {
          uint8_t sc = b.scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; l++)
            *y++ = num::fma_rn(dl, static_cast<float>((q[l + 16 * half] >> shift) & 3), -ml);
        }
      }
    }
  }
}

void dequant_q3_k(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++) {
    BlockQ3_K b = load_block<BlockQ3_K>(src, i);
    const float d_all = num::fp16_to_f32(b.d);
    int scales[16];
    q3_k_scales(b.scales, scales);
    const uint8_t* q = b.qs;
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < QK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int half = 0; half < 2; half++) {
          const float dl = d_all * static_cast<float>(scales[is++]);
          for (int l = 16 * half; l < 16 * half + 16; l++) {
            int v = ((q[l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequant_q4_k(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++) {
    BlockQ4_K b = load_block<BlockQ4_K>(src, i);
    const float d = num::fp16_to_f32(b.d), dmin = num::fp16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      int sc, m;
      scale_min_k4(is, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; l++) *y++ = num::fma_rn(d1, static_cast<float>(q[l] & 0xF), -m1);
      for (int l = 0; l < 32; l++) *y++ = num::fma_rn(d2, static_cast<float>(q[l] >> 4), -m2);
    }
  }
}

void dequant_q5_k(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++) {
    BlockQ5_K b = load_block<BlockQ5_K>(src, i);
    const float d = num::fp16_to_f32(b.d), dmin = num::fp16_to_f32(b.dmin);
    const uint8_t* ql = b.qs;
    uint8_t u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2, ql += 32) {
      int sc, m;
      scale_min_k4(is, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; l++)
        *y++ = num::fma_rn(d1, static_cast<float>((ql[l] & 0xF) + ((b.qh[l] & u1) ? 16 : 0)), -m1);
      for (int l = 0; l < 32; l++)
        *y++ = num::fma_rn(d2, static_cast<float>((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)), -m2);
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequant_q6_k(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++) {
    BlockQ6_K b = load_block<BlockQ6_K>(src, i);
    const float d = num::fp16_to_f32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l++) {
        int is = l / 16;
        int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequant_q8_k(const uint8_t* src, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, y += QK_K) {
    BlockQ8_K b = load_block<BlockQ8_K>(src, i);
    for (int j = 0; j < QK_K; j++) y[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

// ---- plain and project-specific rows -------------------------------------------------------
void dequant_plain(DType t, const uint8_t* src, int64_t n, float* y) {
  for (int64_t j = 0; j < n; j++) {
    if (t == DType::F32) {
      std::memcpy(&y[j], src + 4 * j, 4);
      continue;
    }
    uint16_t h;
    std::memcpy(&h, src + 2 * j, 2);
    y[j] = (t == DType::F16) ? num::fp16_to_f32(h) : num::bf16_to_f32(h);
  }
}

// I8_ROW: float32 scale s, then n int8 q; value = s * q.
void dequant_i8_row(const uint8_t* src, int64_t n, float* y) {
  float s;
  std::memcpy(&s, src, 4);
  const int8_t* q = reinterpret_cast<const int8_t*>(src + 4);
  for (int64_t j = 0; j < n; j++) y[j] = s * static_cast<float>(q[j]);
}

}  // namespace

void dequantize_row(DType t, const uint8_t* src, int64_t n, float* dst) {
  int64_t nb = n / dtype_block_elems(t);
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: dequant_plain(t, src, n, dst); break;
    case DType::Q4_0: dequant_q4_0(src, nb, dst); break;
    case DType::Q4_1: dequant_q4_1(src, nb, dst); break;
    case DType::Q5_0: dequant_q5_0(src, nb, dst); break;
    case DType::Q5_1: dequant_q5_1(src, nb, dst); break;
    case DType::Q8_0: dequant_q8_0(src, nb, dst); break;
    case DType::Q8_1: dequant_q8_1(src, nb, dst); break;
    case DType::Q2_K: dequant_q2_k(src, nb, dst); break;
    case DType::Q3_K: dequant_q3_k(src, nb, dst); break;
    case DType::Q4_K: dequant_q4_k(src, nb, dst); break;
    case DType::Q5_K: dequant_q5_k(src, nb, dst); break;
    case DType::Q6_K: dequant_q6_k(src, nb, dst); break;
    case DType::Q8_K: dequant_q8_k(src, nb, dst); break;
    case DType::I8_ROW: dequant_i8_row(src, n, dst); break;
  }
}

}  // namespace oracle
