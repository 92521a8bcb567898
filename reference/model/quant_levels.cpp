// The integer view of stored rows (quant_levels.h): the levels, scales and
// mins ggml's CPU vec_dot_*_q8_* functions (ggml-cpu/quants.c, generic
// versions) read, unpacked with the same bit layouts as dequantize_row.
#include "reference/model/quant_levels.h"

#include "numerics/numerics.h"
#include "base/errors.h"
#include "reference/model/quant.h"
#include "reference/model/quant_bits.h"

namespace oracle {

namespace {

using qbits::load_block;

// ---- 32-element blocks: lv (32 per block), d, m ---------------------------------------------
void levels_q4(DType t, const uint8_t* src, int64_t nb, LevelRow& r) {
  const bool q4_1 = t == DType::Q4_1;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t* qs;
    if (q4_1) {
      const BlockQ4_1 b = load_block<BlockQ4_1>(src, i);
      r.d[i] = num::fp16_to_f32(b.d), r.m[i] = num::fp16_to_f32(b.m);
      qs = src + i * sizeof(BlockQ4_1) + 4;
    } else {
      const BlockQ4_0 b = load_block<BlockQ4_0>(src, i);
      r.d[i] = num::fp16_to_f32(b.d);
      qs = src + i * sizeof(BlockQ4_0) + 2;
    }
    const int off = q4_1 ? 0 : 8;  // Q4_0: nibble - 8
    int8_t* lv = &r.lv[i * QK4_0];
    for (int j = 0; j < QK4_0 / 2; j++) {
      lv[j] = (int8_t)((qs[j] & 0x0F) - off);
      lv[j + QK4_0 / 2] = (int8_t)((qs[j] >> 4) - off);
    }
  }
}

void levels_q5(DType t, const uint8_t* src, int64_t nb, LevelRow& r) {
  const bool q5_1 = t == DType::Q5_1;
  for (int64_t i = 0; i < nb; i++) {
    int q[QK4_0];
    if (q5_1) {
      const BlockQ5_1 b = load_block<BlockQ5_1>(src, i);
      r.d[i] = num::fp16_to_f32(b.d), r.m[i] = num::fp16_to_f32(b.m);
      qbits::q5_values(b.qs, b.qh, q);
    } else {
      const BlockQ5_0 b = load_block<BlockQ5_0>(src, i);
      r.d[i] = num::fp16_to_f32(b.d);
      qbits::q5_values(b.qs, b.qh, q);
    }
    for (int j = 0; j < QK4_0; j++) r.lv[i * QK4_0 + j] = (int8_t)(q5_1 ? q[j] : q[j] - 16);
  }
}

void levels_q8_0(const uint8_t* src, int64_t nb, LevelRow& r) {
  for (int64_t i = 0; i < nb; i++) {
    const BlockQ8_0 b = load_block<BlockQ8_0>(src, i);
    r.d[i] = num::fp16_to_f32(b.d);
    for (int j = 0; j < QK4_0; j++) r.lv[i * QK4_0 + j] = b.qs[j];
  }
}

// ---- k-quants: lv (256 per block), sc/mn (16 per block), d, m = dmin --------------------------
void levels_q2_k(const uint8_t* src, int64_t nb, LevelRow& r) {
  for (int64_t i = 0; i < nb; i++) {
    const BlockQ2_K b = load_block<BlockQ2_K>(src, i);
    r.d[i] = num::fp16_to_f32(b.d), r.m[i] = num::fp16_to_f32(b.dmin);
    int8_t* lv = &r.lv[i * QK_K];
    for (int s = 0; s < 16; s++) r.sc[i * 16 + s] = b.scales[s] & 0xF, r.mn[i * 16 + s] = b.scales[s] >> 4;
    const uint8_t* q = b.qs;
    for (int n = 0; n < QK_K; n += 128, q += 32)   // element order as dequant_q2_k
      for (int shift = 0; shift < 8; shift += 2)
        for (int half = 0; half < 2; half++)
          for (int l = 0; l < 16; l++) *lv++ = (int8_t)((q[l + 16 * half] >> shift) & 3);
  }
}

void levels_q3_k(const uint8_t* src, int64_t nb, LevelRow& r) {
  for (int64_t i = 0; i < nb; i++) {
    const BlockQ3_K b = load_block<BlockQ3_K>(src, i);
    r.d[i] = num::fp16_to_f32(b.d);
    int scales[16];
    qbits::q3_k_scales(b.scales, scales);
    for (int s = 0; s < 16; s++) r.sc[i * 16 + s] = (int16_t)scales[s];
    int8_t* lv = &r.lv[i * QK_K];
    const uint8_t* q = b.qs;
    uint8_t m = 1;
    for (int n = 0; n < QK_K; n += 128, q += 32)
      for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1))
        for (int l = 0; l < 32; l++) *lv++ = (int8_t)(((q[l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4));
  }
}

// Q4_K and Q5_K: 8 sub-blocks of 32, each (sc, mn) given to both of its 16-halves.
void levels_q45_k(DType t, const uint8_t* src, int64_t nb, LevelRow& r) {
  const bool q5 = t == DType::Q5_K;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *scales, *ql, *qh = nullptr;
    BlockQ4_K b4;
    BlockQ5_K b5;
    if (q5) b5 = load_block<BlockQ5_K>(src, i), scales = b5.scales, ql = b5.qs, qh = b5.qh;
    else b4 = load_block<BlockQ4_K>(src, i), scales = b4.scales, ql = b4.qs;
    r.d[i] = num::fp16_to_f32(q5 ? b5.d : b4.d), r.m[i] = num::fp16_to_f32(q5 ? b5.dmin : b4.dmin);
    int8_t* lv = &r.lv[i * QK_K];
    for (int is = 0; is < 8; is++) {
      int sc, mn;
      qbits::scale_min_k4(is, scales, &sc, &mn);
      r.sc[i * 16 + 2 * is] = r.sc[i * 16 + 2 * is + 1] = (int16_t)sc;
      r.mn[i * 16 + 2 * is] = r.mn[i * 16 + 2 * is + 1] = (int16_t)mn;
      const uint8_t* q = ql + 32 * (is / 2);
      const int shift = (is % 2) * 4;
      for (int l = 0; l < 32; l++) {
        int v = (q[l] >> shift) & 0xF;
        if (q5 && (qh[l] & (1u << is))) v += 16;
        lv[32 * is + l] = (int8_t)v;
      }
    }
  }
}

void levels_q6_k(const uint8_t* src, int64_t nb, LevelRow& r) {
  for (int64_t i = 0; i < nb; i++) {
    const BlockQ6_K b = load_block<BlockQ6_K>(src, i);
    r.d[i] = num::fp16_to_f32(b.d);
    for (int s = 0; s < 16; s++) r.sc[i * 16 + s] = b.scales[s];
    int8_t* y = &r.lv[i * QK_K];
    const uint8_t *ql = b.ql, *qh = b.qh;
    for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32)  // as dequant_q6_k
      for (int l = 0; l < 32; l++) {
        y[l + 0] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        y[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        y[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        y[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
  }
}

}  // namespace

bool has_levels(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

void decode_levels(DType t, const uint8_t* row, int64_t K, LevelRow& r) {
  require_input(has_levels(t), dtype_name(t), "numerics", "no integer view of this type (ggml profile)");
  const int64_t block = dtype_block_elems(t), nb = K / block;
  r.lv.resize(K);
  r.d.assign(nb, 0.0f);
  r.m.assign(nb, 0.0f);
  r.sc.assign(block == QK_K ? K / 16 : 0, 0);
  r.mn.assign(block == QK_K ? K / 16 : 0, 0);
  r.has_min = t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q2_K || t == DType::Q4_K || t == DType::Q5_K;
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: levels_q4(t, row, nb, r); break;
    case DType::Q5_0: case DType::Q5_1: levels_q5(t, row, nb, r); break;
    case DType::Q8_0: levels_q8_0(row, nb, r); break;
    case DType::Q2_K: levels_q2_k(row, nb, r); break;
    case DType::Q3_K: levels_q3_k(row, nb, r); break;
    case DType::Q4_K: case DType::Q5_K: levels_q45_k(t, row, nb, r); break;
    default: levels_q6_k(row, nb, r); break;
  }
}

}  // namespace oracle
