#pragma once
// The block decoders of the SIMD kernels (isa_simd.h), written once over its
// lane layer V (the V::i8 / u8 / f16 / bf16 / five_bit conversions, V::mul,
// V::fma, V::fms, V::set1, V::load). Like isa_simd.h, everything here has
// internal linkage (the anonymous namespace): each ISA TU that includes it
// gets its own copy.
//
// Decoders: a decoder D turns one storage block (D::kElems elements,
// D::kBytes bytes) into float32 chunks of 16 consecutive elements, calling
// emit(c, lanes) for chunk c = 0, 1, ... in increasing element order. Each
// element is computed with the operations of quant.cpp's dequant_* in their
// order (cvt is exact for these small integers; one rounding per mul, and per
// fma where an offset is added: fma(q, d, m), fma(d, q, -m)).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "reference/model/quant.h"

namespace oracle::isa {
namespace {  // NOLINT(google-build-namespaces): internal linkage per ISA TU, on purpose

inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128((const __m128i*)p); }
inline __m128i low_nibbles(__m128i v) { return _mm_and_si128(v, _mm_set1_epi8(0x0F)); }
inline __m128i high_nibbles(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F)); }
// A block scale: fp16 -> f32 is exact for every non-NaN value, so vcvtph2ps
// (F16C) and num::fp16_to_f32 agree bit for bit there; NaN scales never get
// here (the loaders refuse them, naming tensor and block).
inline float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Signed small integers q (16 bytes) times d: (float)q * d.
template <class V, class F>
inline void emit_scaled_i8(F& emit, int c, __m128i q, typename V::reg d) {
  emit(c, V::mul(V::i8(q), d));
}
// Unsigned q: fma((float)q, d, m).
template <class V, class F>
inline void emit_affine_u8(F& emit, int c, __m128i q, typename V::reg d, typename V::reg m) {
  emit(c, V::fma(V::u8(q), d, m));
}
// Unsigned q: fma(d, (float)q, -m)  (k-quants: dl * q - ml, one rounding).
template <class V, class F>
inline void emit_kquant_u8(F& emit, int c, __m128i q, typename V::reg d, typename V::reg m) {
  emit(c, V::fms(d, V::u8(q), m));
}

template <class V>
struct DecF32 {
  static constexpr int kElems = 16, kBytes = 64;
  template <class F> static void block(const uint8_t* b, F&& emit) { emit(0, V::load((const float*)b)); }
};

template <class V>
struct DecF16 {  // vcvtph2ps is exact (NaN payloads: see docs/numerics.md)
  static constexpr int kElems = 16, kBytes = 32;
  template <class F> static void block(const uint8_t* b, F&& emit) { emit(0, V::f16(b)); }
};

template <class V>
struct DecBF16 {  // bf16 bits << 16
  static constexpr int kElems = 16, kBytes = 32;
  template <class F> static void block(const uint8_t* b, F&& emit) { emit(0, V::bf16(b)); }
};

template <class V>
struct DecQ8_0 {  // (float)q * d
  static constexpr int kElems = 32, kBytes = 34;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const auto d = V::set1(half(b));
    emit_scaled_i8<V>(emit, 0, load16(b + 2), d);
    emit_scaled_i8<V>(emit, 1, load16(b + 18), d);
  }
};

template <class V>
struct DecQ4_0 {  // (float)(q - 8) * d; chunk 0 = low nibbles, chunk 1 = high nibbles
  static constexpr int kElems = 32, kBytes = 18;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const auto d = V::set1(half(b));
    __m128i qs = load16(b + 2), eight = _mm_set1_epi8(8);
    emit_scaled_i8<V>(emit, 0, _mm_sub_epi8(low_nibbles(qs), eight), d);
    emit_scaled_i8<V>(emit, 1, _mm_sub_epi8(high_nibbles(qs), eight), d);
  }
};

template <class V>
struct DecQ4_1 {  // fma((float)q, d, m)
  static constexpr int kElems = 32, kBytes = 20;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const auto d = V::set1(half(b)), m = V::set1(half(b + 2));
    __m128i qs = load16(b + 4);
    emit_affine_u8<V>(emit, 0, low_nibbles(qs), d, m);
    emit_affine_u8<V>(emit, 1, high_nibbles(qs), d, m);
  }
};

// Q5_0 / Q5_1 (bias 16 / 0): the 32 five-bit values nibble | (bit e of the
// little-endian u32 qh) << 4, minus bias, as exact floats: elements 0..15 (low
// nibbles of qs) to w0, 16..31 (high nibbles) to w1. V::five_bit does it; this
// is the byte form the AVX2 path uses (all 32 bytes in one ymm: bytes 0..15
// take qh's bytes 0, 1 and 16..31 its bytes 2, 3 (vpshufb), each byte's own bit
// selected by or-ing every other bit on and comparing with all-ones).
template <int kBias>
inline __m256i five_bit_bytes(__m128i qs, uint32_t qh) {
  const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i others = _mm256_set1_epi64x((long long)0x7fbfdfeff7fbfdfeULL);  // all bits but bit (byte % 8)
  __m256i set = _mm256_or_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), sel), others);
  set = _mm256_cmpeq_epi8(set, _mm256_set1_epi8(-1));  // 0xFF where the bit is 1
  const __m256i nib = _mm256_set_m128i(high_nibbles(qs), low_nibbles(qs));
  if (kBias == 0) return _mm256_or_si256(nib, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
  // bit 0: nibble | 0xF0 = nibble - 16 (int8); bit 1: nibble = nibble + 16 - 16
  return _mm256_or_si256(nib, _mm256_andnot_si256(set, _mm256_set1_epi8((char)0xF0)));
}

template <class V>
struct DecQ5_0 {  // (float)((nibble | bit << 4) - 16) * d
  static constexpr int kElems = 32, kBytes = 22;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const auto d = V::set1(half(b));
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    typename V::reg q[2];
    V::template five_bit<16>(load16(b + 6), qh, q);
    emit(0, V::mul(q[0], d));
    emit(1, V::mul(q[1], d));
  }
};

template <class V>
struct DecQ5_1 {  // fma((float)(nibble | bit << 4), d, m)
  static constexpr int kElems = 32, kBytes = 24;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const auto d = V::set1(half(b)), m = V::set1(half(b + 2));
    uint32_t qh;
    std::memcpy(&qh, b + 4, 4);
    typename V::reg q[2];
    V::template five_bit<0>(load16(b + 8), qh, q);
    emit(0, V::fma(q[0], d, m));
    emit(1, V::fma(q[1], d, m));
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

// Q4_K: the 8 (scale, min) pairs of the 12 scale bytes (ggml's utmp shuffle:
// get_scale_min_k4 for all j at once) -> s[0..7] = d * (float)sc[j], s[8..15] =
// dmin * (float)m[j], one rounding each (the products kquant_pair forms).
inline void q4k_scales(const uint8_t* b, float* s) {
  uint32_t u[4];
  std::memcpy(u, b + 4, 12);
  u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);  // m[4..7]
  const uint32_t m_lo = u[1] & 0x3f3f3f3fu;                                  // m[0..3]
  u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);         // sc[4..7]
  u[2] = m_lo;
  u[0] &= 0x3f3f3f3fu;                                                       // sc[0..3]
  const __m128i sm = _mm_loadu_si128((const __m128i*)u);
  const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm));
  const __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(sm, sm)));
  _mm256_storeu_ps(s, _mm256_mul_ps(_mm256_set1_ps(half(b)), sc));
  _mm256_storeu_ps(s + 8, _mm256_mul_ps(_mm256_set1_ps(half(b + 2)), mn));
}

template <class V>
struct DecQ4_K {  // per 32: fma(d1, (float)nibble, -m1)
  static constexpr int kElems = 256, kBytes = 144;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    alignas(32) float s[16];  // d1 of sub-block j at s[j], m1 at s[8 + j]
    q4k_scales(b, s);
    const uint8_t* q = b + 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int g = 0; g < 4; g++, q += 32) {
      const auto d1 = V::set1(s[2 * g]), m1 = V::set1(s[8 + 2 * g]);
      const auto d2 = V::set1(s[2 * g + 1]), m2 = V::set1(s[9 + 2 * g]);
      const __m256i a = _mm256_loadu_si256((const __m256i*)q);
      const __m256i lo = _mm256_and_si256(a, m4), hi = _mm256_and_si256(_mm256_srli_epi16(a, 4), m4);
      emit_kquant_u8<V>(emit, 4 * g + 0, _mm256_castsi256_si128(lo), d1, m1);
      emit_kquant_u8<V>(emit, 4 * g + 1, _mm256_extracti128_si256(lo, 1), d1, m1);
      emit_kquant_u8<V>(emit, 4 * g + 2, _mm256_castsi256_si128(hi), d2, m2);
      emit_kquant_u8<V>(emit, 4 * g + 3, _mm256_extracti128_si256(hi, 1), d2, m2);
    }
  }
};

inline __m128i bit16(__m128i qh, int bit) {  // (qh & (1 << bit)) ? 16 : 0
  __m128i m = _mm_set1_epi8((char)(1 << bit));
  return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(qh, m), m), _mm_set1_epi8(16));
}

template <class V>
struct DecQ5_K {  // per 32: fma(d1, (float)(nibble + (qh bit ? 16 : 0)), -m1)
  static constexpr int kElems = 256, kBytes = 176;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    const float d = half(b), dmin = half(b + 2);
    const uint8_t* ql = b + 48;
    __m128i qh_a = load16(b + 16), qh_c = load16(b + 32);
    for (int g = 0; g < 4; g++, ql += 32) {
      float dl[2], ml[2];
      kquant_pair(b + 4, g, d, dmin, dl, ml);
      const auto d1 = V::set1(dl[0]), m1 = V::set1(ml[0]), d2 = V::set1(dl[1]), m2 = V::set1(ml[1]);
      __m128i a = load16(ql), c = load16(ql + 16);
      emit_kquant_u8<V>(emit, 4 * g + 0, _mm_or_si128(low_nibbles(a), bit16(qh_a, 2 * g)), d1, m1);
      emit_kquant_u8<V>(emit, 4 * g + 1, _mm_or_si128(low_nibbles(c), bit16(qh_c, 2 * g)), d1, m1);
      emit_kquant_u8<V>(emit, 4 * g + 2, _mm_or_si128(high_nibbles(a), bit16(qh_a, 2 * g + 1)), d2, m2);
      emit_kquant_u8<V>(emit, 4 * g + 3, _mm_or_si128(high_nibbles(c), bit16(qh_c, 2 * g + 1)), d2, m2);
    }
  }
};

template <class V>
struct DecQ6_K {  // (d * (float)scale) * (float)(q6 - 32)
  static constexpr int kElems = 256, kBytes = 210;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    alignas(32) float s[16];  // d * (float)sc[i], one rounding each
    const __m256 d = _mm256_set1_ps(half(b + 208));
    const __m128i sc = load16(b + 192);
    _mm256_storeu_ps(s, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
    _mm256_storeu_ps(s + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(sc, sc)))));
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30), bias = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++) {  // 128 elements: quarter w = elements 32w..32w+31
      const uint8_t* ql = b + 64 * h;
      const __m256i qh = _mm256_loadu_si256((const __m256i*)(b + 128 + 32 * h));
      const __m256i A = _mm256_loadu_si256((const __m256i*)ql), B = _mm256_loadu_si256((const __m256i*)(ql + 32));
      __m256i q[4];  // low 4 bits from ql (low / high nibbles), bits 4..5 from qh bits 2w, 2w+1
      q[0] = _mm256_or_si256(_mm256_and_si256(A, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      q[1] = _mm256_or_si256(_mm256_and_si256(B, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A, 4), m4), _mm256_and_si256(qh, m30));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(B, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
      for (int w = 0; w < 4; w++) {
        const __m256i v = _mm256_sub_epi8(q[w], bias);
        emit_scaled_i8<V>(emit, 8 * h + 2 * w, _mm256_castsi256_si128(v), V::set1(s[8 * h + 2 * w]));
        emit_scaled_i8<V>(emit, 8 * h + 2 * w + 1, _mm256_extracti128_si256(v, 1), V::set1(s[8 * h + 2 * w + 1]));
      }
    }
  }
};

// Any other block type: dequantize_row into a buffer, then emit from it.
template <class V, DType T>
struct DecBuffered {
  static constexpr int kElems = (int)(T == DType::Q8_1 ? QK4_0 : QK_K);
  static constexpr int kBytes = T == DType::Q8_1 ? 36 : T == DType::Q2_K ? 84 : T == DType::Q3_K ? 110 : 292;
  template <class F> static void block(const uint8_t* b, F&& emit) {
    alignas(64) float buf[kElems];
    dequantize_row(T, b, kElems, buf);
    for (int c = 0; c < kElems / 16; c++) emit(c, V::load(buf + 16 * c));
  }
};

}  // namespace
}  // namespace oracle::isa
