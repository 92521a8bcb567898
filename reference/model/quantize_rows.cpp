// float32 -> Q8_0 / Q4_0 / Q4_K / I8_ROW blocks. See quantize.h for the
// contract: ggml's *_ref quantizers reproduced operation for operation (the
// build uses -ffp-contract=off, so every a*b+c below is two roundings, as in
// an IEEE-strict build of ggml-quants.c).
#include "reference/model/quantize_rows.h"

#include <cstring>
#include <string>

#include "reference/base/errors.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"

namespace oracle {
namespace {

using num::f32_bits;
using num::f32_from_bits;
using num::f32_to_fp16;
using num::fp16_to_f32;

// ---- scalar helpers (ggml semantics) ----------------------------------------------
float abs_f32(float v) { return f32_from_bits(f32_bits(v) & 0x7fffffffu); }

// ggml's nearest_int: round half to even through the 1.5*2^23 trick (|v| < 2^22).
int nearest_int(float v) {
  float shifted = v + 12582912.0f;
  int32_t bits = (int32_t)f32_bits(shifted);
  return (bits & 0x007fffff) - 0x00400000;
}

void store_fp16(uint8_t* dst, float v) {
  uint16_t h = f32_to_fp16(v);
  std::memcpy(dst, &h, sizeof h);
}

void require_multiple(int64_t n, int64_t block, const char* type) {
  require_input(n % block == 0, "<row>", "n",
                std::to_string(n) + " elements is not a multiple of the " + type + " block (" +
                    std::to_string(block) + ")");
}

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
    for (int j = 0; j < QK4_0; j++) qs[j] = (int8_t)round_half_away(x[j] * id);
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
      int lo = (int8_t)(x[j] * id + 8.5f);
      int hi = (int8_t)(x[j + QK4_0 / 2] * id + 8.5f);
      lo = lo < 15 ? lo : 15;
      hi = hi < 15 ? hi : 15;
      qs[j] = (uint8_t)(lo | (hi << 4));
    }
  }
}

// ---- Q4_K ---------------------------------------------------------------------------
// Super-block of 256 = 8 sub-blocks of 32. Each sub-block gets an affine fit
// x ~ scale * L - min (L in 0..15) by ggml's make_qkx2_quants search; the 8
// scales and mins are then quantized to 6 bits against d = max_scale / 63 and
// dmin = max_min / 63 (fp16), and the values are re-quantized with those.
namespace {

constexpr int kSub = 32;  // elements per Q4_K sub-block

struct AffineFit {
  float scale = 0.0f;
  float min = 0.0f;  // stored positive: x ~ scale * L - min
};

float weighted_error(const float* x, const float* w, const uint8_t* L, float scale, float min) {
  float err = 0.0f;
  for (int i = 0; i < kSub; i++) {
    float diff = scale * (float)L[i] + min - x[i];
    err += w[i] * (diff * diff);
  }
  return err;
}

// One trial of make_qkx2_quants: grid with iscale, least-squares scale/min.
// Returns false when the normal equations are singular (D <= 0).
bool fit_trial(const float* x, const float* w, float iscale, float lo, float sum_w, float sum_x,
               uint8_t* Laux, float* scale, float* min) {
  float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
  for (int i = 0; i < kSub; i++) {
    int l = nearest_int(iscale * (x[i] - lo));
    l = l < 0 ? 0 : (l > 15 ? 15 : l);
    Laux[i] = (uint8_t)l;
    sum_l += w[i] * (float)l;
    sum_l2 += w[i] * (float)l * (float)l;
    sum_xl += w[i] * (float)l * x[i];
  }
  float D = sum_w * sum_l2 - sum_l * sum_l;
  if (!(D > 0.0f)) return false;
  *scale = (sum_w * sum_xl - sum_x * sum_l) / D;
  *min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
  if (*min > 0.0f) {
    *min = 0.0f;
    *scale = sum_xl / sum_l2;
  }
  return true;
}

// make_qkx2_quants(32, 15, x, w, L, &min, Laux, rmin=-1, rdelta=0.1, nstep=20, mad=false)
AffineFit fit_sub_block(const float* x, const float* w, uint8_t* L) {
  float lo = x[0], hi = x[0], sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < kSub; i++) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (lo > 0.0f) lo = 0.0f;
  if (hi == lo) {
    for (int i = 0; i < kSub; i++) L[i] = 0;
    return {0.0f, -lo};
  }
  float iscale = 15.0f / (hi - lo);
  float scale = 1.0f / iscale;
  for (int i = 0; i < kSub; i++) {
    int l = nearest_int(iscale * (x[i] - lo));
    L[i] = (uint8_t)(l < 0 ? 0 : (l > 15 ? 15 : l));
  }
  float best = weighted_error(x, w, L, scale, lo);
  uint8_t Laux[kSub];
  for (int is = 0; is <= 20; is++) {
    float trial_iscale = (-1.0f + 0.1f * (float)is + 15.0f) / (hi - lo);
    float s = 0.0f, m = 0.0f;
    if (!fit_trial(x, w, trial_iscale, lo, sum_w, sum_x, Laux, &s, &m)) continue;
    float err = weighted_error(x, w, Laux, s, m);
    if (err < best) {
      std::memcpy(L, Laux, kSub);
      best = err;
      scale = s;
      lo = m;
    }
  }
  return {scale, -lo};
}

// Packs the 6-bit scale ls and min lm of sub-block j into the 12-byte table.
void pack_scale_min(uint8_t* scales, int j, uint8_t ls, uint8_t lm) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
    scales[j] |= (uint8_t)((lm >> 4) << 6);
  }
}

void unpack_scale_min(const uint8_t* q, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

uint8_t six_bits(float inv, float v) {
  uint8_t l = (uint8_t)nearest_int(inv * v);
  return l < 63 ? l : 63;
}

// Re-quantizes the values against the stored (6-bit, fp16) scales and mins.
void requantize_q4_K(const float* x, const BlockQ4_K& blk, uint8_t* L) {
  for (int j = 0; j < QK_K / kSub; j++) {
    uint8_t sc, m;
    unpack_scale_min(blk.scales, j, &sc, &m);
    float d = fp16_to_f32(blk.d) * (float)sc;
    if (d == 0.0f) continue;
    float dm = fp16_to_f32(blk.dmin) * (float)m;
    for (int i = 0; i < kSub; i++) {
      int l = nearest_int((x[kSub * j + i] + dm) / d);
      L[kSub * j + i] = (uint8_t)(l < 0 ? 0 : (l > 15 ? 15 : l));
    }
  }
}

void quantize_block_q4_K(const float* x, BlockQ4_K* blk) {
  uint8_t L[QK_K];  // (256) 4-bit levels
  float scales[QK_K / kSub], mins[QK_K / kSub];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < QK_K / kSub; j++) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0.0f, w[kSub];
    for (int l = 0; l < kSub; l++) sum_x2 += xs[l] * xs[l];
    float av_x = num::sqrt_rn(sum_x2 / 32.0f);
    for (int l = 0; l < kSub; l++) w[l] = av_x + abs_f32(xs[l]);
    AffineFit fit = fit_sub_block(xs, w, L + kSub * j);
    scales[j] = fit.scale;
    mins[j] = fit.min;
    if (fit.scale > max_scale) max_scale = fit.scale;
    if (fit.min > max_min) max_min = fit.min;
  }
  float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(blk->scales, 0, sizeof blk->scales);
  for (int j = 0; j < QK_K / kSub; j++)
    pack_scale_min(blk->scales, j, six_bits(inv_scale, scales[j]), six_bits(inv_min, mins[j]));
  blk->d = f32_to_fp16(max_scale / 63.0f);
  blk->dmin = f32_to_fp16(max_min / 63.0f);
  requantize_q4_K(x, *blk, L);
  for (int j = 0; j < QK_K; j += 64)
    for (int l = 0; l < 32; l++) blk->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

}  // namespace

void quantize_row_q4_K(const float* x, int64_t n, uint8_t* dst) {
  require_multiple(n, QK_K, "Q4_K");
  for (int64_t b = 0; b < n / QK_K; b++) {
    BlockQ4_K blk;
    quantize_block_q4_K(x + b * QK_K, &blk);
    std::memcpy(dst + b * sizeof(BlockQ4_K), &blk, sizeof blk);
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
    q[k] = (int8_t)v;
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
  return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_K || t == DType::I8_ROW;
}

void quantize_row(DType t, const float* src, int64_t n, uint8_t* dst) {
  switch (t) {
    case DType::Q8_0: return quantize_row_q8_0(src, n, dst);
    case DType::Q4_0: return quantize_row_q4_0(src, n, dst);
    case DType::Q4_K: return quantize_row_q4_K(src, n, dst);
    case DType::I8_ROW: return quantize_row_i8_row(src, n, dst);
    default:
      throw InputError("<row>", "type",
                       std::string("cannot quantize to ") + dtype_name(t) +
                           " (supported: Q8_0, Q4_0, Q4_K, I8_ROW)");
  }
}

}  // namespace oracle
