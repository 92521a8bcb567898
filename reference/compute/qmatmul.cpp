// Matmul over stored-type weights: see qmatmul.h and docs/numerics.md
// ("Stored-type weights: dequantization order").
//
// A decoder D turns one storage block (D::kElems elements, D::kBytes bytes)
// into float32 chunks of 16 consecutive elements, calling emit(c, lo, hi) for
// chunk c = 0, 1, ... in increasing element order; lo holds elements
// 16c..16c+7 (canonical lanes 0..7), hi 16c+8..16c+15 (lanes 8..15). Each
// element is computed with the operations of quant.cpp's dequant_* in their
// order (cvt is exact for these small integers; one rounding per mul/add/sub).
#include "reference/compute/qmatmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "faults/fault.h"
#include "base/errors.h"
#include "numerics/numerics.h"
#include "reference/compute/ops.h"
#include "reference/model/quant.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace oracle::ops {

using num::add_rn;
using num::mul_rn;
constexpr int L = num::kLanes;  // 16 canonical lanes

namespace {

// ============================================================================
// Scalar family: dequantize_row one block into a buffer, then plain lanes.
// ============================================================================
struct ScalarRow {
  DType type;
  const uint8_t* data;
  int64_t row_bytes;
  int64_t block_elems;  // 16 for the plain types (chunked), else the block size
};

int64_t block_elems_for(DType t) {
  int64_t be = dtype_block_elems(t);
  return be == 1 ? L : be;  // plain types: decode 16 at a time
}

// acc[t][lane] += w * x over one output row, all tokens; the lane order is
// the canonical one because elements arrive in increasing k.
void row_scalar(float* out, int ldo, const ScalarRow& w, int row, const float* x, int n_tok, int k,
                float* buf, float (*acc)[L]) {
  const uint8_t* src = w.data + row * w.row_bytes;
  for (int t = 0; t < n_tok; t++)
    for (int l = 0; l < L; l++) acc[t][l] = 0.0f;
  if (w.type == DType::I8_ROW) {  // one per-row scale: the whole row at once
    dequantize_row(w.type, src, k, buf);
  }
  int64_t be = block_elems_for(w.type);
  for (int64_t k0 = 0; k0 < k; k0 += be) {
    int64_t n = std::min<int64_t>(be, k - k0);
    const float* wv = buf + (w.type == DType::I8_ROW ? k0 : 0);
    if (w.type != DType::I8_ROW) {
      int64_t off = dtype_block_elems(w.type) == 1 ? k0 * dtype_block_bytes(w.type)
                                                   : k0 / be * dtype_block_bytes(w.type);
      dequantize_row(w.type, src + off, n, buf);
    }
    for (int t = 0; t < n_tok; t++)
      for (int64_t j = 0; j < n; j++) {
        int l = (int)((k0 + j) % L);
        acc[t][l] = add_rn(acc[t][l], mul_rn(wv[j], x[(int64_t)t * k + k0 + j]));
      }
  }
  for (int t = 0; t < n_tok; t++) out[(int64_t)t * ldo + row] = num::lane_tree_reduce(acc[t]);
}

void rows_scalar(float* out, const float* x, const WeightMatrix& w, int n_tok, int k, int n_out,
                 int r0, int r1) {
  ScalarRow sr{w.type, w.data, dtype_row_bytes(w.type, k), block_elems_for(w.type)};
  std::vector<float> buf(std::max<int64_t>(k, QK_K));  // (k) one row or one block
  std::vector<float> acc((size_t)n_tok * L);           // (n_tok, lanes)
  for (int i = r0; i < r1; i++)
    row_scalar(out, n_out, sr, i, x, n_tok, k, buf.data(), reinterpret_cast<float(*)[L]>(acc.data()));
}

#ifdef __AVX2__
// ============================================================================
// AVX2 decoders
// ============================================================================
inline __m256 f32_of_i8(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
inline __m256 f32_of_u8(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }
inline __m128i high8(__m128i v) { return _mm_unpackhi_epi64(v, v); }
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128((const __m128i*)p); }
inline __m128i low_nibbles(__m128i v) { return _mm_and_si128(v, _mm_set1_epi8(0x0F)); }
inline __m128i high_nibbles(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F)); }
// A block scale: fp16 -> f32 is exact for every non-NaN value, so vcvtph2ps
// (F16C) and num::fp16_to_f32 agree bit for bit there; NaN scales never get
// here (the loaders refuse them, naming tensor and block).
inline float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#ifdef __F16C__
  return _cvtsh_ss(h);
#else
  return num::fp16_to_f32(h);
#endif
}

// Signed small integers q (16 bytes) times d: (float)q * d.
template <class F>
inline void emit_scaled_i8(F& emit, int c, __m128i q, __m256 d) {
  emit(c, _mm256_mul_ps(f32_of_i8(q), d), _mm256_mul_ps(f32_of_i8(high8(q)), d));
}
// Unsigned q: (float)q * d + m.
template <class F>
inline void emit_affine_u8(F& emit, int c, __m128i q, __m256 d, __m256 m) {
  emit(c, _mm256_add_ps(_mm256_mul_ps(f32_of_u8(q), d), m),
       _mm256_add_ps(_mm256_mul_ps(f32_of_u8(high8(q)), d), m));
}
// Unsigned q: d * (float)q - m  (k-quants: dl * q - ml).
template <class F>
inline void emit_kquant_u8(F& emit, int c, __m128i q, __m256 d, __m256 m) {
  emit(c, _mm256_sub_ps(_mm256_mul_ps(d, f32_of_u8(q)), m),
       _mm256_sub_ps(_mm256_mul_ps(d, f32_of_u8(high8(q))), m));
}

struct DecF32 {
  static constexpr int kElems = 16, kBytes = 64;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    emit(0, _mm256_loadu_ps((const float*)b), _mm256_loadu_ps((const float*)b + 8));
  }
};

#ifdef __F16C__
struct DecF16 {  // vcvtph2ps is exact (NaN payloads: see docs/numerics.md)
  static constexpr int kElems = 16, kBytes = 32;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    emit(0, _mm256_cvtph_ps(load16(b)), _mm256_cvtph_ps(load16(b + 16)));
  }
};
#endif

struct DecBF16 {  // bf16 bits << 16
  static constexpr int kElems = 16, kBytes = 32;
  static __m256 widen(__m128i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)); }
  template <class F> static void block(const uint8_t* b, F&& emit) {
    emit(0, widen(load16(b)), widen(load16(b + 16)));
  }
};

struct DecQ8_0 {  // (float)q * d
  static constexpr int kElems = 32, kBytes = 34;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    __m256 d = _mm256_set1_ps(half(b));
    emit_scaled_i8(emit, 0, load16(b + 2), d);
    emit_scaled_i8(emit, 1, load16(b + 18), d);
  }
};

struct DecQ4_0 {  // (float)(q - 8) * d; chunk 0 = low nibbles, chunk 1 = high nibbles
  static constexpr int kElems = 32, kBytes = 18;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    __m256 d = _mm256_set1_ps(half(b));
    __m128i qs = load16(b + 2), eight = _mm_set1_epi8(8);
    emit_scaled_i8(emit, 0, _mm_sub_epi8(low_nibbles(qs), eight), d);
    emit_scaled_i8(emit, 1, _mm_sub_epi8(high_nibbles(qs), eight), d);
  }
};

struct DecQ4_1 {  // (float)q * d + m
  static constexpr int kElems = 32, kBytes = 20;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    __m256 d = _mm256_set1_ps(half(b)), m = _mm256_set1_ps(half(b + 2));
    __m128i qs = load16(b + 4);
    emit_affine_u8(emit, 0, low_nibbles(qs), d, m);
    emit_affine_u8(emit, 1, high_nibbles(qs), d, m);
  }
};

// Bit e of the little-endian u32 qh, as 0x10 in byte e (e = 16*half .. +15).
inline __m128i q5_high_bits(uint32_t qh, int half) {
  __m128i v = _mm_cvtsi32_si128((int)qh);
  __m128i sel = half == 0 ? _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
                          : _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  __m128i set = _mm_cmpeq_epi8(_mm_and_si128(_mm_shuffle_epi8(v, sel), bit), bit);
  return _mm_and_si128(set, _mm_set1_epi8(0x10));
}

struct DecQ5_0 {  // (float)((nibble | bit << 4) - 16) * d
  static constexpr int kElems = 32, kBytes = 22;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    __m256 d = _mm256_set1_ps(half(b));
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    __m128i qs = load16(b + 6), sixteen = _mm_set1_epi8(16);
    emit_scaled_i8(emit, 0, _mm_sub_epi8(_mm_or_si128(low_nibbles(qs), q5_high_bits(qh, 0)), sixteen), d);
    emit_scaled_i8(emit, 1, _mm_sub_epi8(_mm_or_si128(high_nibbles(qs), q5_high_bits(qh, 1)), sixteen), d);
  }
};

struct DecQ5_1 {  // (float)(nibble | bit << 4) * d + m
  static constexpr int kElems = 32, kBytes = 24;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    __m256 d = _mm256_set1_ps(half(b)), m = _mm256_set1_ps(half(b + 2));
    uint32_t qh;
    std::memcpy(&qh, b + 4, 4);
    __m128i qs = load16(b + 8);
    emit_affine_u8(emit, 0, _mm_or_si128(low_nibbles(qs), q5_high_bits(qh, 0)), d, m);
    emit_affine_u8(emit, 1, _mm_or_si128(high_nibbles(qs), q5_high_bits(qh, 1)), d, m);
  }
};

// Q4_K / Q5_K (sub-block pair g): d1 = d * sc, m1 = dmin * m, as quant.cpp scale_min_k4.
inline void kquant_pair(const uint8_t* scales, int g, float d, float dmin, float* dl, float* ml) {
  for (int h = 0; h < 2; h++) {
    int j = 2 * g + h, sc, m;
    if (j < 4) {
      sc = scales[j] & 63;
      m = scales[j + 4] & 63;
    } else {
      sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
      m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
    dl[h] = d * (float)sc;
    ml[h] = dmin * (float)m;
  }
}

struct DecQ4_K {  // per 32: d1 * (float)nibble - m1
  static constexpr int kElems = 256, kBytes = 144;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const float d = half(b), dmin = half(b + 2);
    const uint8_t* q = b + 16;
    for (int g = 0; g < 4; g++, q += 32) {
      float dl[2], ml[2];
      kquant_pair(b + 4, g, d, dmin, dl, ml);
      __m256 d1 = _mm256_set1_ps(dl[0]), m1 = _mm256_set1_ps(ml[0]);
      __m256 d2 = _mm256_set1_ps(dl[1]), m2 = _mm256_set1_ps(ml[1]);
      __m128i a = load16(q), c = load16(q + 16);
      emit_kquant_u8(emit, 4 * g + 0, low_nibbles(a), d1, m1);
      emit_kquant_u8(emit, 4 * g + 1, low_nibbles(c), d1, m1);
      emit_kquant_u8(emit, 4 * g + 2, high_nibbles(a), d2, m2);
      emit_kquant_u8(emit, 4 * g + 3, high_nibbles(c), d2, m2);
    }
  }
};

struct DecQ5_K {  // per 32: d1 * (float)(nibble + (qh bit ? 16 : 0)) - m1
  static constexpr int kElems = 256, kBytes = 176;
  static __m128i bit16(__m128i qh, int bit) {  // (qh & (1 << bit)) ? 16 : 0
    __m128i m = _mm_set1_epi8((char)(1 << bit));
    return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(qh, m), m), _mm_set1_epi8(16));
  }
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const float d = half(b), dmin = half(b + 2);
    const uint8_t* ql = b + 48;
    __m128i qh_a = load16(b + 16), qh_c = load16(b + 32);
    for (int g = 0; g < 4; g++, ql += 32) {
      float dl[2], ml[2];
      kquant_pair(b + 4, g, d, dmin, dl, ml);
      __m256 d1 = _mm256_set1_ps(dl[0]), m1 = _mm256_set1_ps(ml[0]);
      __m256 d2 = _mm256_set1_ps(dl[1]), m2 = _mm256_set1_ps(ml[1]);
      __m128i a = load16(ql), c = load16(ql + 16);
      emit_kquant_u8(emit, 4 * g + 0, _mm_or_si128(low_nibbles(a), bit16(qh_a, 2 * g)), d1, m1);
      emit_kquant_u8(emit, 4 * g + 1, _mm_or_si128(low_nibbles(c), bit16(qh_c, 2 * g)), d1, m1);
      emit_kquant_u8(emit, 4 * g + 2, _mm_or_si128(high_nibbles(a), bit16(qh_a, 2 * g + 1)), d2, m2);
      emit_kquant_u8(emit, 4 * g + 3, _mm_or_si128(high_nibbles(c), bit16(qh_c, 2 * g + 1)), d2, m2);
    }
  }
};

struct DecQ6_K {  // (d * (float)scale) * (float)(q6 - 32)
  static constexpr int kElems = 256, kBytes = 210;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const float d = half(b + 208);
    const int8_t* sc = (const int8_t*)(b + 192);
    const __m128i three = _mm_set1_epi8(3), bias = _mm_set1_epi8(32);
    for (int h = 0; h < 2; h++) {
      const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
      for (int which = 0; which < 4; which++)
        for (int lh = 0; lh < 2; lh++) {
          __m128i lo = load16(ql + 16 * lh + (which & 1) * 32);
          lo = (which < 2) ? low_nibbles(lo) : high_nibbles(lo);
          __m128i hb = _mm_and_si128(_mm_srli_epi16(load16(qh + 16 * lh), 2 * which), three);
          __m128i q = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hb, 4)), bias);
          __m256 ds = _mm256_set1_ps(d * (float)sc[8 * h + lh + 2 * which]);
          emit_scaled_i8(emit, 8 * h + 2 * which + lh, q, ds);
        }
    }
  }
};

// Any other block type: dequantize_row into a buffer, then emit from it.
template <DType T>
struct DecBuffered {
  static constexpr int kElems = (int)(T == DType::Q8_1 ? QK4_0 : QK_K);
  static constexpr int kBytes = T == DType::Q8_1 ? 36 : T == DType::Q2_K ? 84 : T == DType::Q3_K ? 110 : 292;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    alignas(32) float buf[kElems];
    dequantize_row(T, b, kElems, buf);
    for (int c = 0; c < kElems / 16; c++) emit(c, _mm256_load_ps(buf + 16 * c), _mm256_load_ps(buf + 16 * c + 8));
  }
};

// ============================================================================
// AVX2 tiles: R rows x T tokens, 2 registers (16 lanes) per output
// ============================================================================
// num::lane_tree_reduce with lanes 0..7 in lo and 8..15 in hi (same adds).
inline float tree_avx2(__m256 lo, __m256 hi) {
  __m256 s8 = _mm256_add_ps(lo, hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// The k % 16 tail of a plain-type row (elements k16..k-1 go to lanes 0..).
float finish_tail(__m256 lo, __m256 hi, DType type, const uint8_t* row, const float* x, int k16, int k) {
  alignas(32) float acc[L], w[L];
  _mm256_store_ps(acc, lo);
  _mm256_store_ps(acc + 8, hi);
  dequantize_row(type, row + (int64_t)k16 * dtype_block_bytes(type), k - k16, w);
  for (int l = 0; k16 + l < k; l++) acc[l] = add_rn(acc[l], mul_rn(w[l], x[k16 + l]));
  return num::lane_tree_reduce(acc);
}

template <class D, int R, int T>
void tile(float* out, int ldo, DType type, const uint8_t* w, int64_t row_bytes, const float* x, int k) {
  __m256 lo[R][T], hi[R][T];  // (rows, tokens) x 8 lanes
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) lo[r][t] = hi[r][t] = _mm256_setzero_ps();
  const int nb = k / D::kElems;
  // Fully unrolled over rows and tokens so the 2·R·T accumulators stay in
  // registers (a rolled loop keeps them on the stack: a load-add-store chain
  // per update, about 3× slower). The order of each output's adds is unchanged.
  for (int blk = 0; blk < nb; blk++) {
    const float* xb = x + (int64_t)blk * D::kElems;
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
      D::block(w + r * row_bytes + (int64_t)blk * D::kBytes, [&](int c, __m256 wl, __m256 wh) {
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
          const float* xc = xb + (int64_t)t * k + 16 * c;
          lo[r][t] = _mm256_add_ps(lo[r][t], _mm256_mul_ps(wl, _mm256_loadu_ps(xc)));
          hi[r][t] = _mm256_add_ps(hi[r][t], _mm256_mul_ps(wh, _mm256_loadu_ps(xc + 8)));
        }
      });
  }
  const int k16 = nb * D::kElems;
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++)
      out[t * ldo + r] = k16 == k ? tree_avx2(lo[r][t], hi[r][t])
                                  : finish_tail(lo[r][t], hi[r][t], type, w + r * row_bytes,
                                                x + (int64_t)t * k, k16, k);
}

// One token (decode): 4 rows at a time, 8 independent accumulator chains over
// one shared x. Several tokens (prefill): 32-row blocks (stay in L2) x 4
// tokens, each decoded block applied to 4 tokens.
template <class D>
void rows_avx2(float* out, const float* x, const WeightMatrix& w, int n_tok, int k, int n_out, int r0, int r1) {
  const int64_t rb = dtype_row_bytes(w.type, k);
  auto at = [&](int i) { return w.data + (int64_t)i * rb; };
  if (n_tok == 1) {
    int i = r0;
    for (; i + 4 <= r1; i += 4) tile<D, 4, 1>(out + i, n_out, w.type, at(i), rb, x, k);
    for (; i < r1; i++) tile<D, 1, 1>(out + i, n_out, w.type, at(i), rb, x, k);
    return;
  }
  for (int b0 = r0; b0 < r1; b0 += 32) {
    int b1 = std::min(r1, b0 + 32), t = 0;
    for (; t + 4 <= n_tok; t += 4)
      for (int i = b0; i < b1; i++)
        tile<D, 1, 4>(out + (int64_t)t * n_out + i, n_out, w.type, at(i), rb, x + (int64_t)t * k, k);
    for (; t < n_tok; t++)
      for (int i = b0; i < b1; i++)
        tile<D, 1, 1>(out + (int64_t)t * n_out + i, n_out, w.type, at(i), rb, x + (int64_t)t * k, k);
  }
}

// I8_ROW (one float32 scale per row): dequantize the row, then the F32 kernel.
void rows_i8_row(float* out, const float* x, const WeightMatrix& w, int n_tok, int k, int n_out, int r0, int r1) {
  const int64_t rb = dtype_row_bytes(w.type, k);
  std::vector<float> row(k);  // (k)
  for (int i = r0; i < r1; i++) {
    dequantize_row(w.type, w.data + i * rb, k, row.data());
    for (int t = 0; t < n_tok; t++)
      tile<DecF32, 1, 1>(out + (int64_t)t * n_out + i, n_out, DType::F32,
                         reinterpret_cast<const uint8_t*>(row.data()), 0, x + (int64_t)t * k, k);
  }
}

bool rows_simd(float* out, const float* x, const WeightMatrix& w, int n_tok, int k, int n_out, int r0, int r1) {
  switch (w.type) {
    case DType::F32: rows_avx2<DecF32>(out, x, w, n_tok, k, n_out, r0, r1); return true;
#ifdef __F16C__
    case DType::F16: rows_avx2<DecF16>(out, x, w, n_tok, k, n_out, r0, r1); return true;
#endif
    case DType::BF16: rows_avx2<DecBF16>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q8_0: rows_avx2<DecQ8_0>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q4_0: rows_avx2<DecQ4_0>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q4_1: rows_avx2<DecQ4_1>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q5_0: rows_avx2<DecQ5_0>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q5_1: rows_avx2<DecQ5_1>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q4_K: rows_avx2<DecQ4_K>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q5_K: rows_avx2<DecQ5_K>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q6_K: rows_avx2<DecQ6_K>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q8_1: rows_avx2<DecBuffered<DType::Q8_1>>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q2_K: rows_avx2<DecBuffered<DType::Q2_K>>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q3_K: rows_avx2<DecBuffered<DType::Q3_K>>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::Q8_K: rows_avx2<DecBuffered<DType::Q8_K>>(out, x, w, n_tok, k, n_out, r0, r1); return true;
    case DType::I8_ROW: rows_i8_row(out, x, w, n_tok, k, n_out, r0, r1); return true;
    default: return false;
  }
}
#endif  // __AVX2__

void check_shape(const WeightMatrix& w, int k) {
  require_input(w.data != nullptr, "matmul", "weights", "null weight matrix");
  require_input(dtype_row_bytes(w.type, k) > 0, "matmul", "weights",
                std::string(dtype_name(w.type)) + " rows of " + std::to_string(k) +
                    " elements are not a whole number of blocks");
}

}  // namespace

bool has_register_decoder(DType t) {
#ifdef __AVX2__
  switch (t) {
    case DType::F32: case DType::BF16: case DType::Q8_0: case DType::Q4_0: case DType::Q4_1:
    case DType::Q5_0: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
      return true;
#ifdef __F16C__
    case DType::F16: return true;
#endif
    default: return false;
  }
#else
  (void)t;
  return false;
#endif
}

void matmul_rows(KernelFamily family, float* out, const float* x, const WeightMatrix& w, int T,
                 int K, int N, int row_begin, int row_end) {
  check_shape(w, K);
#ifdef __AVX2__
  if (family == KernelFamily::Simd && rows_simd(out, x, w, T, K, N, row_begin, row_end)) return;
#endif
  rows_scalar(out, x, w, T, K, N, row_begin, row_end);
}

// FAULT (BATCH_DEPENDENT_REDUCTION): multi-token calls sum each output
// sequentially instead of in lanes.
void faulty_sequential(const MatmulJob& j, const float* x, int T, int K) {
  std::vector<float> row(K);  // (K)
  const int64_t rb = dtype_row_bytes(j.w.type, K);
  for (int i = 0; i < j.n_out; i++) {
    dequantize_row(j.w.type, j.w.data + i * rb, K, row.data());
    for (int t = 0; t < T; t++) {
      float acc = 0.0f;
      for (int e = 0; e < K; e++) acc = add_rn(acc, mul_rn(row[e], x[(int64_t)t * K + e]));
      j.out[(int64_t)t * j.n_out + i] = acc;
    }
  }
}

void matmul_jobs(std::span<const MatmulJob> jobs, const float* x, int T, int K, ThreadPool* pool) {
  if (fault::active(fault::Fault::BATCH_DEPENDENT_REDUCTION) && T > 1) {
    for (const MatmulJob& j : jobs) faulty_sequential(j, x, T, K);
    return;
  }
  std::vector<int> first_group{0};  // (jobs + 1) prefix sums of 4-row groups
  for (const MatmulJob& j : jobs) {
    check_shape(j.w, K);
    first_group.push_back(first_group.back() + (j.n_out + 3) / 4);
  }
  auto run = [&](int g0, int g1) {
    for (size_t j = 0; j < jobs.size(); j++) {
      int a = std::max(g0, first_group[j]), b = std::min(g1, first_group[j + 1]);
      if (a >= b) continue;
      const MatmulJob& job = jobs[j];
      int r0 = (a - first_group[j]) * 4, r1 = std::min(job.n_out, (b - first_group[j]) * 4);
      matmul_rows(KernelFamily::Simd, job.out, x, job.w, T, K, job.n_out, r0, r1);
    }
  };
  if (pool) pool->parallel_for(first_group.back(), run);
  else run(0, first_group.back());
}

void matmul(float* out, const float* x, const WeightMatrix& w, int T, int K, int N,
            ThreadPool* pool) {
  const MatmulJob job{out, w, N};
  matmul_jobs(std::span<const MatmulJob>(&job, 1), x, T, K, pool);
}

}  // namespace oracle::ops
