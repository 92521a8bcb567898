// float32 -> Q2_K / Q3_K / Q4_K / Q5_K / Q6_K super-blocks of 256: ggml's
// quantize_row_q{2,3,4,5,6}_K_ref (ggml-quants.c), the path llama-quantize
// takes without an importance matrix, reproduced operation for operation.
// C's usual conversions are spelled out: an int operand of a float product is
// converted first ((w * l) * l, never w * (l * l)), sums run in increasing i,
// and there is no fused multiply-add (-ffp-contract=off here; ggml-base is
// compiled for baseline x86-64, which has no FMA instruction to contract to).
#include <cstring>

#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "reference/model/quantize_rows.h"
#include "reference/model/quantize_helpers.h"

namespace oracle {
namespace {

using qh::abs_f32;
using qh::clamp_int;
using qh::nearest_int;
using qh::store_fp16;
using num::fp16_to_f32;

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS

// ---- make_qx_quants(n, nmax, x, L, rmse_type = 1, qw = NULL) (Q6_K) ------------------
// Symmetric grid l in [-nmax, nmax-1] with weights w = x^2; tries 18 scales
// around -nmax/max and keeps the best weighted least-squares fit. L = l + nmax.
struct QxSums {
  float sumlx = 0.0f, suml2 = 0.0f;
};

QxSums qx_sums(int n, int nmax, const float* x, float iscale, int8_t* L) {
  QxSums s;
  for (int i = 0; i < n; i++) {
    int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    if (L) L[i] = (int8_t)(l + nmax);
    float w = x[i] * x[i];
    s.sumlx += w * x[i] * (float)l;
    s.suml2 += w * (float)l * (float)l;
  }
  return s;
}

float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; i++) {
    float ax = abs_f32(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; i++) L[i] = 0;
    return 0.0f;
  }
  float iscale = (float)(-nmax) / max;
  QxSums s = qx_sums(n, nmax, x, iscale, L);
  float scale = s.suml2 != 0.0f ? s.sumlx / s.suml2 : 0.0f;
  float best = scale * s.sumlx;
  for (int is = -9; is <= 9; is++) {
    if (is == 0) continue;
    iscale = -((float)nmax + 0.1f * (float)is) / max;
    QxSums t = qx_sums(n, nmax, x, iscale, nullptr);
    if (t.suml2 > 0.0f && t.sumlx * t.sumlx > best * t.suml2) {
      qx_sums(n, nmax, x, iscale, L);
      scale = t.sumlx / t.suml2;
      best = scale * t.sumlx;
    }
  }
  return scale;
}

// ---- make_q3_quants(n, nmax, x, L, do_rmse = true) (Q3_K) ------------------------------
// Grid l in [-nmax, nmax-1] from -nmax/max, then up to 5 passes of coordinate
// descent on the weighted (w = x^2) least-squares fit. L = l + nmax, except
// an all-zero group, which stays L = 0.
bool q3_refine_pass(int n, int nmax, const float* x, int8_t* L, float* sumlx, float* suml2) {
  int n_changed = 0;
  for (int i = 0; i < n; i++) {
    float w = x[i] * x[i];
    float slx = *sumlx - w * x[i] * (float)L[i];
    if (!(slx > 0.0f)) continue;
    float sl2 = *suml2 - w * (float)L[i] * (float)L[i];
    int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
    if (new_l == L[i]) continue;
    slx += w * x[i] * (float)new_l;
    sl2 += w * (float)new_l * (float)new_l;
    if (sl2 > 0.0f && slx * slx * *suml2 > *sumlx * *sumlx * sl2) {
      L[i] = (int8_t)new_l;
      *sumlx = slx;
      *suml2 = sl2;
      n_changed++;
    }
  }
  return n_changed > 0;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; i++) {
    float ax = abs_f32(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; i++) L[i] = 0;
    return 0.0f;
  }
  float iscale = (float)(-nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; i++) {
    int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)l;
    float w = x[i] * x[i];
    sumlx += w * x[i] * (float)l;
    suml2 += w * (float)l * (float)l;
  }
  for (int itry = 0; itry < 5; itry++)
    if (!q3_refine_pass(n, nmax, x, L, &sumlx, &suml2)) break;
  for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ---- make_qkx2_quants(n, nmax, x, weights, L, &the_min, Laux, rmin, rdelta, nstep, use_mad)
// Affine grid x ~ scale * L - the_min (L in 0..nmax): nstep + 1 trial grids,
// each refitted by weighted least squares; keeps the lowest weighted error
// (squared, or absolute when use_mad).
struct Qkx2Params {
  int n, nmax;
  float rmin, rdelta;
  int nstep;
  bool use_mad;
};

float qkx2_error(const Qkx2Params& p, const float* x, const float* w, const uint8_t* L, float scale,
                 float min) {
  float err = 0.0f;
  for (int i = 0; i < p.n; i++) {
    float diff = scale * (float)L[i] + min - x[i];
    diff = p.use_mad ? abs_f32(diff) : diff * diff;
    err += w[i] * diff;
  }
  return err;
}

// One trial grid; false when the normal equations are singular (D <= 0).
bool qkx2_trial(const Qkx2Params& p, const float* x, const float* w, float iscale, float min,
                float sum_w, float sum_x, uint8_t* Laux, float* scale, float* the_min) {
  float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
  for (int i = 0; i < p.n; i++) {
    int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, p.nmax);
    Laux[i] = (uint8_t)l;
    sum_l += w[i] * (float)l;
    sum_l2 += w[i] * (float)l * (float)l;
    sum_xl += w[i] * (float)l * x[i];
  }
  float D = sum_w * sum_l2 - sum_l * sum_l;
  if (!(D > 0.0f)) return false;
  *scale = (sum_w * sum_xl - sum_x * sum_l) / D;
  *the_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
  if (*the_min > 0.0f) {
    *the_min = 0.0f;
    *scale = sum_xl / sum_l2;
  }
  return true;
}

float make_qkx2_quants(const Qkx2Params& p, const float* x, const float* w, uint8_t* L, float* the_min) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < p.n; i++) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    for (int i = 0; i < p.n; i++) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = (float)p.nmax / (max - min);
  float scale = 1.0f / iscale;
  for (int i = 0; i < p.n; i++) L[i] = (uint8_t)clamp_int(nearest_int(iscale * (x[i] - min)), 0, p.nmax);
  float best = qkx2_error(p, x, w, L, scale, min);
  uint8_t Laux[32];
  for (int is = 0; is <= p.nstep; is++) {
    float trial = (p.rmin + p.rdelta * (float)is + (float)p.nmax) / (max - min);
    float s = 0.0f, m = 0.0f;
    if (!qkx2_trial(p, x, w, trial, min, sum_w, sum_x, Laux, &s, &m)) continue;
    float err = qkx2_error(p, x, w, Laux, s, m);
    if (err < best) {
      std::memcpy(L, Laux, (size_t)p.n);
      best = err;
      scale = s;
      min = m;
    }
  }
  *the_min = -min;
  return scale;
}

// ---- Q2_K: 16 groups of 16, 2-bit levels, 4-bit scale and min per group ---------------
void quantize_block_q2_K(const float* x, BlockQ2_K* y) {
  const Qkx2Params p{16, 3, -0.5f, 0.1f, 15, true};
  uint8_t L[QK_K];  // (256) levels 0..3
  float scales[QK_K / 16], mins[QK_K / 16], w[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < QK_K / 16; j++) {
    for (int l = 0; l < 16; l++) w[l] = abs_f32(x[16 * j + l]);
    scales[j] = make_qkx2_quants(p, x + 16 * j, w, L + 16 * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  std::memset(y->scales, 0, sizeof y->scales);
  y->d = 0;
  y->dmin = 0;
  if (max_scale > 0.0f) {
    float iscale = 15.0f / max_scale;
    for (int j = 0; j < QK_K / 16; j++) y->scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
    y->d = num::f32_to_fp16(max_scale / 15.0f);
  }
  if (max_min > 0.0f) {
    float iscale = 15.0f / max_min;
    for (int j = 0; j < QK_K / 16; j++) y->scales[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
    y->dmin = num::f32_to_fp16(max_min / 15.0f);
  }
  for (int j = 0; j < QK_K / 16; j++) {
    const float d = fp16_to_f32(y->d) * (float)(y->scales[j] & 0xF);
    if (d == 0.0f) continue;
    const float dm = fp16_to_f32(y->dmin) * (float)(y->scales[j] >> 4);
    for (int i = 0; i < 16; i++) L[16 * j + i] = (uint8_t)clamp_int(nearest_int((x[16 * j + i] + dm) / d), 0, 3);
  }
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; l++)
      y->qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

// ---- Q3_K: 16 groups of 16, 3-bit levels (2 low bits + hmask), 6-bit signed scales ------
void pack_q3_scales(const float* scales, float max_scale, BlockQ3_K* y) {
  std::memset(y->scales, 0, sizeof y->scales);
  if (max_scale == 0.0f) {
    y->d = num::f32_to_fp16(0.0f);
    return;
  }
  float iscale = -32.0f / max_scale;
  for (int j = 0; j < QK_K / 16; j++) {
    int8_t l = (int8_t)nearest_int(iscale * scales[j]);  // C: int -> int8_t
    l = (int8_t)(clamp_int(l, -32, 31) + 32);
    if (j < 8) y->scales[j] = (uint8_t)(l & 0xF);
    else y->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
    l = (int8_t)(l >> 4);
    y->scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
  }
  y->d = num::f32_to_fp16(1.0f / iscale);
}

int q3_scale(const BlockQ3_K& y, int j) {
  int sc = j < 8 ? (y.scales[j] & 0xF) : (y.scales[j - 8] >> 4);
  return (sc | (((y.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

void quantize_block_q3_K(const float* x, BlockQ3_K* y) {
  int8_t L[QK_K];  // (256) levels 0..7
  float scales[QK_K / 16];
  float max_scale = 0.0f, amax = 0.0f;
  for (int j = 0; j < QK_K / 16; j++) {
    scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
    float scale = abs_f32(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }
  pack_q3_scales(scales, max_scale, y);
  for (int j = 0; j < QK_K / 16; j++) {
    float d = fp16_to_f32(y->d) * (float)q3_scale(*y, j);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; i++) L[16 * j + i] = (int8_t)(clamp_int(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
  }
  std::memset(y->hmask, 0, sizeof y->hmask);
  int m = 0;
  uint8_t hm = 1;
  for (int j = 0; j < QK_K; j++) {
    if (L[j] > 3) {
      y->hmask[m] |= hm;
      L[j] = (int8_t)(L[j] - 4);
    }
    if (++m == QK_K / 8) {
      m = 0;
      hm = (uint8_t)(hm << 1);
    }
  }
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; l++)
      y->qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

// ---- Q4_K / Q5_K: 8 groups of 32, 6-bit scale and min per group --------------------------
// Fits every group with make_qkx2_quants (weights sqrt(mean x^2) + |x|),
// quantizes the 8 scales and mins against d = max_scale/63, dmin = max_min/63
// (fp16), then re-quantizes the values against the stored scales.
struct ScaleMinFit {
  float scales[QK_K / 32], mins[QK_K / 32];
  float max_scale = 0.0f, max_min = 0.0f;
};

ScaleMinFit fit_groups_of_32(const float* x, const Qkx2Params& p, uint8_t* L) {
  ScaleMinFit f;
  float w[32];
  for (int j = 0; j < QK_K / 32; j++) {
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
    float av_x = num::sqrt_rn(sum_x2 / 32.0f);
    for (int l = 0; l < 32; l++) w[l] = av_x + abs_f32(x[32 * j + l]);
    f.scales[j] = make_qkx2_quants(p, x + 32 * j, w, L + 32 * j, &f.mins[j]);
    if (f.scales[j] > f.max_scale) f.max_scale = f.scales[j];
    if (f.mins[j] > f.max_min) f.max_min = f.mins[j];
  }
  return f;
}

// Packs the 6-bit scales and mins into ggml's 12-byte table; sets d and dmin.
void pack_scale_min(const ScaleMinFit& f, uint8_t* scales, uint16_t* d, uint16_t* dmin) {
  float inv_scale = f.max_scale > 0.0f ? 63.0f / f.max_scale : 0.0f;
  float inv_min = f.max_min > 0.0f ? 63.0f / f.max_min : 0.0f;
  std::memset(scales, 0, K_SCALE_SIZE);
  for (int j = 0; j < QK_K / 32; j++) {
    uint8_t ls = (uint8_t)nearest_int(inv_scale * f.scales[j]);
    uint8_t lm = (uint8_t)nearest_int(inv_min * f.mins[j]);
    ls = ls < 63 ? ls : 63;
    lm = lm < 63 ? lm : 63;
    if (j < 4) {
      scales[j] = ls;
      scales[j + 4] = lm;
    } else {
      scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
      scales[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  *d = num::f32_to_fp16(f.max_scale / 63.0f);
  *dmin = num::f32_to_fp16(f.max_min / 63.0f);
}

void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void requantize_groups_of_32(const float* x, const uint8_t* scales, uint16_t d16, uint16_t dmin16, int nmax,
                             uint8_t* L) {
  for (int j = 0; j < QK_K / 32; j++) {
    uint8_t sc, m;
    get_scale_min_k4(j, scales, &sc, &m);
    const float d = fp16_to_f32(d16) * (float)sc;
    if (d == 0.0f) continue;
    const float dm = fp16_to_f32(dmin16) * (float)m;
    for (int i = 0; i < 32; i++) L[32 * j + i] = (uint8_t)clamp_int(nearest_int((x[32 * j + i] + dm) / d), 0, nmax);
  }
}

void quantize_block_q4_K(const float* x, BlockQ4_K* y) {
  uint8_t L[QK_K];  // (256) levels 0..15
  ScaleMinFit f = fit_groups_of_32(x, Qkx2Params{32, 15, -1.0f, 0.1f, 20, false}, L);
  pack_scale_min(f, y->scales, &y->d, &y->dmin);
  requantize_groups_of_32(x, y->scales, y->d, y->dmin, 15, L);
  for (int j = 0; j < QK_K; j += 64)
    for (int l = 0; l < 32; l++) y->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

void quantize_block_q5_K(const float* x, BlockQ5_K* y) {
  uint8_t L[QK_K];  // (256) levels 0..31
  ScaleMinFit f = fit_groups_of_32(x, Qkx2Params{32, 31, -0.5f, 0.1f, 15, false}, L);
  pack_scale_min(f, y->scales, &y->d, &y->dmin);
  requantize_groups_of_32(x, y->scales, y->d, y->dmin, 31, L);
  std::memset(y->qh, 0, sizeof y->qh);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QK_K; n += 64) {
    uint8_t* ql = y->qs + n / 2;
    for (int j = 0; j < 32; j++) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        y->qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        y->qh[j] |= m2;
      }
      ql[j] = (uint8_t)(l1 | (l2 << 4));
    }
    m1 = (uint8_t)(m1 << 2);
    m2 = (uint8_t)(m2 << 2);
  }
}

// ---- Q6_K: 16 groups of 16, 6-bit levels, int8 scales ------------------------------------
void pack_q6(const int8_t* L, BlockQ6_K* y) {
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; l++) {
      const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l] = (uint8_t)(q1 | (q3 << 4));
      ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
      qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                        ((L[j + l + 96] >> 4) << 6));
    }
}

void quantize_block_q6_K(const float* x, BlockQ6_K* y) {
  int8_t L[QK_K];  // (256) levels 0..63
  float scales[QK_K / 16];
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int ib = 0; ib < QK_K / 16; ib++) {
    scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    float abs_scale = abs_f32(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, sizeof *y);
    return;
  }
  float iscale = -128.0f / max_scale;
  y->d = num::f32_to_fp16(1.0f / iscale);
  for (int ib = 0; ib < QK_K / 16; ib++) {
    int v = nearest_int(iscale * scales[ib]);
    y->scales[ib] = (int8_t)(v < 127 ? v : 127);
  }
  for (int j = 0; j < QK_K / 16; j++) {
    float d = fp16_to_f32(y->d) * (float)y->scales[j];
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; i++) L[16 * j + i] = (int8_t)(clamp_int(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
  }
  pack_q6(L, y);
}

template <class Block, void (*Quantize)(const float*, Block*)>
void quantize_super_blocks(const float* x, int64_t n, uint8_t* dst, const char* type) {
  qh::require_multiple(n, QK_K, type);
  for (int64_t b = 0; b < n / QK_K; b++) {
    Block blk;
    std::memset(&blk, 0, sizeof blk);
    Quantize(x + b * QK_K, &blk);
    std::memcpy(dst + b * sizeof(Block), &blk, sizeof blk);
  }
}

}  // namespace

void quantize_row_q2_K(const float* x, int64_t n, uint8_t* dst) {
  quantize_super_blocks<BlockQ2_K, quantize_block_q2_K>(x, n, dst, "Q2_K");
}
void quantize_row_q3_K(const float* x, int64_t n, uint8_t* dst) {
  quantize_super_blocks<BlockQ3_K, quantize_block_q3_K>(x, n, dst, "Q3_K");
}
void quantize_row_q4_K(const float* x, int64_t n, uint8_t* dst) {
  quantize_super_blocks<BlockQ4_K, quantize_block_q4_K>(x, n, dst, "Q4_K");
}
void quantize_row_q5_K(const float* x, int64_t n, uint8_t* dst) {
  quantize_super_blocks<BlockQ5_K, quantize_block_q5_K>(x, n, dst, "Q5_K");
}
void quantize_row_q6_K(const float* x, int64_t n, uint8_t* dst) {
  quantize_super_blocks<BlockQ6_K, quantize_block_q6_K>(x, n, dst, "Q6_K");
}

}  // namespace oracle
