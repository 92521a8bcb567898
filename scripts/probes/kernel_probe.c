// Roofline probe for the reference's stored-type matmul (issue 30): the same
// op sequence as reference/compute/isa_simd.h on AVX-512, outside the model.
// Not part of the product build; scripts/probes/run.sh builds and runs it.
//
// Canonical order (docs/numerics.md, numerics v2): element k of a row goes into
// lane k mod 16 in increasing k, one fma per product; a block is dequantized
// with quant.cpp's operations (Q4_1: fma((float)q, d, m); Q8_0 / Q5_0:
// (float)q * d; Q4_K: fma(d * (float)sc, (float)q, -(dmin * (float)m)); Q6_K:
// (d * (float)sc) * (float)(q - 32); F32: as stored); the 16 lanes are summed by
// the halving tree (w = 8, 4, 2, 1: acc[i] += acc[i + w]).
//
//   kernel_probe TYPE PHASE [ROWS] [K] [REPS]
//     TYPE  q4_1 | q8_0 | q5_0 | f32 | q4_k | q6_k
//     PHASE decode : one token, 4-row tiles over a ROWS x K matrix streamed
//                    from memory (default 234376 x 576: about SmolLM2-135M's weights)
//           prefill: 8 tokens, 2-row x 8-token tiles (each decoded block applied to
//                    8 tokens), ROWS x K in L2 (default 512 x 576), repeated
//   OMP_NUM_THREADS=1|2 : rows split over threads. Decode: one contiguous share
//       of the rows per thread, each thread its own copy of x, and one parallel
//       region for all the repetitions (a barrier between them): what the
//       oracle's pool does per matmul. Prefill: omp static.
//   PROBE_SPAN=0 : decode without the tile-start prefetch of the 32-element and
//       F32 types (their default mirrors isa_simd.h).
//   PROBE_PREFETCH=BYTES : each decoded block's byte BYTES on prefetched too
//       (default as isa_simd.h: 4 rows for Q8_0 and the k-quants, and for Q4_1 /
//       Q5_0 where the oracle's decode prefetch is "ahead" (ORACLE_PREFETCH, else
//       Intel's CPUID vendor); else none).
//   PROBE_UNPACK=old : the bit unpacking isa_simd.h had before issue 30's
//       k-quant work (Q5_0: pshufb/cmpeq high bits; Q4_K / Q6_K: scalar scales,
//       16-byte nibble work), to compare; default: the current one.
// First every output of a sample of rows is checked bit for bit against a
// scalar loop of the canonical order (fmaf, -ffp-contract=off); any mismatch
// exits 1. Then it prints the best of REPS: G weights/s (decode) or G MAC/s.
//   gcc -O3 -mavx512f -mavx2 -mfma -mf16c -ffp-contract=off -fopenmp kernel_probe.c -lm
#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { Q4_1, Q8_0, Q5_0, F32, Q4_K, Q6_K };
static const int kElems[] = {32, 32, 32, 16, 256, 256}, kBytes[] = {20, 34, 22, 64, 144, 210};
static int g_old;  // PROBE_UNPACK=old

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static float half(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// ---- scalar canonical order ----------------------------------------------------
static void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {  // ggml get_scale_min_k4
  if (j < 4) { *sc = q[j] & 63; *m = q[j + 4] & 63; }
  else { *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4); *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4); }
}
static float dequant(int type, const uint8_t* b, int j) {  // element j of one block
  switch (type) {
    case Q4_1: {
      int q = j < 16 ? (b[4 + j] & 15) : (b[4 + j - 16] >> 4);
      return fmaf((float)q, half(b), half(b + 2));
    }
    case Q8_0: return (float)(int8_t)b[2 + j] * half(b);
    case Q5_0: {
      uint32_t qh;
      memcpy(&qh, b + 2, 4);
      int lo = j < 16 ? (b[6 + j] & 15) : (b[6 + j - 16] >> 4);
      return (float)((lo | (int)((qh >> j) & 1) << 4) - 16) * half(b);
    }
    case Q4_K: {  // 4 groups of 64: 32 low nibbles (sub-block 2g), 32 high (2g + 1)
      int g = j / 64, hi = j % 64 >= 32, l = j % 32, sc, m;
      uint8_t byte = b[16 + 32 * g + l];
      scale_min_k4(2 * g + hi, b + 4, &sc, &m);
      return fmaf(half(b) * (float)sc, (float)(hi ? byte >> 4 : byte & 15), -(half(b + 2) * (float)m));
    }
    case Q6_K: {  // 2 halves of 128: quarters of 32 (ql low / ql+32 low / ql high / ql+32 high)
      int h = j / 128, qt = j % 128 / 32, l = j % 32;
      const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
      const int8_t* sc = (const int8_t*)(b + 192 + 8 * h);
      int lo = (qt & 1) ? ql[l + 32] : ql[l];
      lo = qt < 2 ? lo & 15 : lo >> 4;
      int q = (lo | ((qh[l] >> (2 * qt)) & 3) << 4) - 32;
      return half(b + 208) * (float)sc[l / 16 + 2 * qt] * (float)q;
    }
    default: { float f; memcpy(&f, b + 4 * j, 4); return f; }
  }
}
static float tree16(float* a) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) a[i] = a[i] + a[i + w];
  return a[0];
}
static float scalar_dot(int type, const uint8_t* row, const float* x, int k) {
  float acc[16] = {0};
  for (int e = 0; e < k; e++) {
    const uint8_t* b = row + (int64_t)(e / kElems[type]) * kBytes[type];
    acc[e % 16] = fmaf(dequant(type, b, e % kElems[type]), x[e], acc[e % 16]);
  }
  return tree16(acc);
}

// ---- AVX-512: the decoders of isa_decoders.h -----------------------------------
#define INL static inline __attribute__((always_inline))
INL __m128i lo4(__m128i v) { return _mm_and_si128(v, _mm_set1_epi8(15)); }
INL __m128i hi4(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15)); }
INL __m512 u8f(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)); }
INL __m512 i8f(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
INL __m128i ld16(const uint8_t* p) { return _mm_loadu_si128((const __m128i*)p); }
INL __m256i ld32(const uint8_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
INL __m128i q5_high(uint32_t qh, int h) {  // old: bit e of qh as 0x10 in byte e
  __m128i v = _mm_cvtsi32_si128((int)qh);
  __m128i sel = h == 0 ? _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
                       : _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  __m128i set = _mm_cmpeq_epi8(_mm_and_si128(_mm_shuffle_epi8(v, sel), bit), bit);
  return _mm_and_si128(set, _mm_set1_epi8(0x10));
}
// Q4_K's 12 scale bytes -> sc[0..7], m[0..7] (ggml's utmp shuffle of get_scale_min_k4), as floats
// d * (float)sc, dmin * (float)m: one rounding each, as the scalar loop.
INL void q4k_scales(const uint8_t* b, float* s) {
  uint32_t u[4];
  memcpy(u, b + 4, 12);
  u[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
  const uint32_t m_lo = u[1] & 0x3f3f3f3f;
  u[1] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
  u[2] = m_lo;
  u[0] &= 0x3f3f3f3f;
  __m128i sm = _mm_loadu_si128((const __m128i*)u);
  __m512 dd = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(half(b)), _mm512_set1_ps(half(b + 2)));
  _mm512_storeu_ps(s, _mm512_mul_ps(dd, u8f(sm)));
}
// The chunks of one block, handed to EMIT(c, w) in increasing c.
#define DECODE(type, b, EMIT)                                                                          \
  do {                                                                                                 \
    if (type == Q4_1) {                                                                                \
      __m512 d_ = _mm512_set1_ps(half(b)), m_ = _mm512_set1_ps(half((b) + 2));                        \
      __m128i q_ = ld16((b) + 4);                                                                      \
      EMIT(0, _mm512_fmadd_ps(u8f(lo4(q_)), d_, m_));                                                  \
      EMIT(1, _mm512_fmadd_ps(u8f(hi4(q_)), d_, m_));                                                  \
    } else if (type == Q8_0) {                                                                         \
      __m512 d_ = _mm512_set1_ps(half(b));                                                             \
      EMIT(0, _mm512_mul_ps(i8f(ld16((b) + 2)), d_));                                                  \
      EMIT(1, _mm512_mul_ps(i8f(ld16((b) + 18)), d_));                                                 \
    } else if (type == Q5_0) {                                                                         \
      __m512 d_ = _mm512_set1_ps(half(b));                                                             \
      uint32_t qh_;                                                                                    \
      memcpy(&qh_, (b) + 2, 4);                                                                        \
      if (g_old) {                                                                                     \
        __m128i q_ = ld16((b) + 6), s_ = _mm_set1_epi8(16);                                            \
        EMIT(0, _mm512_mul_ps(i8f(_mm_sub_epi8(_mm_or_si128(lo4(q_), q5_high(qh_, 0)), s_)), d_));     \
        EMIT(1, _mm512_mul_ps(i8f(_mm_sub_epi8(_mm_or_si128(hi4(q_), q5_high(qh_, 1)), s_)), d_));     \
      } else { /* bit clear: nibble - 16 (a masked 32-bit subtract; the mask is ~qh, AVX-512F) */     \
        __m512i x_ = _mm512_cvtepu8_epi32(ld16((b) + 6)), s_ = _mm512_set1_epi32(16);                 \
        __m512i l_ = _mm512_and_si512(x_, _mm512_set1_epi32(15)), h_ = _mm512_srli_epi32(x_, 4);      \
        l_ = _mm512_mask_sub_epi32(l_, _cvtu32_mask16(~qh_ & 0xffff), l_, s_);                         \
        h_ = _mm512_mask_sub_epi32(h_, _cvtu32_mask16(~qh_ >> 16), h_, s_);                            \
        EMIT(0, _mm512_mul_ps(_mm512_cvtepi32_ps(l_), d_));                                            \
        EMIT(1, _mm512_mul_ps(_mm512_cvtepi32_ps(h_), d_));                                            \
      }                                                                                                \
    } else if (type == Q4_K) {                                                                         \
      const uint8_t* q_ = (b) + 16;                                                                    \
      if (g_old) {                                                                                     \
        for (int g_ = 0; g_ < 4; g_++, q_ += 32) {                                                     \
          int sc0, m0, sc1, m1;                                                                        \
          scale_min_k4(2 * g_, (b) + 4, &sc0, &m0);                                                    \
          scale_min_k4(2 * g_ + 1, (b) + 4, &sc1, &m1);                                                \
          __m512 d1 = _mm512_set1_ps(half(b) * (float)sc0), n1 = _mm512_set1_ps(half((b) + 2) * (float)m0); \
          __m512 d2 = _mm512_set1_ps(half(b) * (float)sc1), n2 = _mm512_set1_ps(half((b) + 2) * (float)m1); \
          __m128i a_ = ld16(q_), c_ = ld16(q_ + 16);                                                   \
          EMIT(4 * g_ + 0, _mm512_fmsub_ps(d1, u8f(lo4(a_)), n1));                                     \
          EMIT(4 * g_ + 1, _mm512_fmsub_ps(d1, u8f(lo4(c_)), n1));                                     \
          EMIT(4 * g_ + 2, _mm512_fmsub_ps(d2, u8f(hi4(a_)), n2));                                     \
          EMIT(4 * g_ + 3, _mm512_fmsub_ps(d2, u8f(hi4(c_)), n2));                                     \
        }                                                                                              \
      } else {                                                                                         \
        float s_[16] __attribute__((aligned(64)));                                                     \
        q4k_scales(b, s_);                                                                             \
        for (int g_ = 0; g_ < 4; g_++, q_ += 32) {                                                     \
          __m512 d1 = _mm512_set1_ps(s_[2 * g_]), n1 = _mm512_set1_ps(s_[8 + 2 * g_]);                \
          __m512 d2 = _mm512_set1_ps(s_[2 * g_ + 1]), n2 = _mm512_set1_ps(s_[9 + 2 * g_]);            \
          __m256i a_ = ld32(q_), m4_ = _mm256_set1_epi8(15);                                           \
          __m256i l_ = _mm256_and_si256(a_, m4_), h_ = _mm256_and_si256(_mm256_srli_epi16(a_, 4), m4_); \
          EMIT(4 * g_ + 0, _mm512_fmsub_ps(d1, u8f(_mm256_castsi256_si128(l_)), n1));                  \
          EMIT(4 * g_ + 1, _mm512_fmsub_ps(d1, u8f(_mm256_extracti128_si256(l_, 1)), n1));             \
          EMIT(4 * g_ + 2, _mm512_fmsub_ps(d2, u8f(_mm256_castsi256_si128(h_)), n2));                  \
          EMIT(4 * g_ + 3, _mm512_fmsub_ps(d2, u8f(_mm256_extracti128_si256(h_, 1)), n2));             \
        }                                                                                              \
      }                                                                                                \
    } else if (type == Q6_K) {                                                                         \
      const float d_ = half((b) + 208);                                                                \
      const int8_t* sc_ = (const int8_t*)((b) + 192);                                                  \
      if (g_old) {                                                                                     \
        for (int h_ = 0; h_ < 2; h_++) {                                                               \
          const uint8_t *ql_ = (b) + 64 * h_, *qh_ = (b) + 128 + 32 * h_;                               \
          for (int w_ = 0; w_ < 4; w_++)                                                               \
            for (int lh_ = 0; lh_ < 2; lh_++) {                                                        \
              __m128i lo_ = ld16(ql_ + 16 * lh_ + (w_ & 1) * 32);                                      \
              lo_ = (w_ < 2) ? lo4(lo_) : hi4(lo_);                                                    \
              __m128i hb_ = _mm_and_si128(_mm_srli_epi16(ld16(qh_ + 16 * lh_), 2 * w_), _mm_set1_epi8(3)); \
              __m128i q_ = _mm_sub_epi8(_mm_or_si128(lo_, _mm_slli_epi16(hb_, 4)), _mm_set1_epi8(32)); \
              EMIT(8 * h_ + 2 * w_ + lh_, _mm512_mul_ps(i8f(q_), _mm512_set1_ps(d_ * (float)sc_[8 * h_ + lh_ + 2 * w_]))); \
            }                                                                                          \
        }                                                                                              \
      } else {                                                                                         \
        float s_[16] __attribute__((aligned(64)));                                                     \
        _mm512_storeu_ps(s_, _mm512_mul_ps(_mm512_set1_ps(d_), i8f(ld16((b) + 192))));                \
        for (int h_ = 0; h_ < 2; h_++) {                                                               \
          const uint8_t *ql_ = (b) + 64 * h_;                                                          \
          __m256i qh_ = ld32((b) + 128 + 32 * h_), A_ = ld32(ql_), B_ = ld32(ql_ + 32);               \
          __m256i m4_ = _mm256_set1_epi8(15), m30_ = _mm256_set1_epi8(0x30), b32_ = _mm256_set1_epi8(32); \
          __m256i q_[4];                                                                               \
          q_[0] = _mm256_and_si256(A_, m4_);                                                           \
          q_[1] = _mm256_and_si256(B_, m4_);                                                           \
          q_[2] = _mm256_and_si256(_mm256_srli_epi16(A_, 4), m4_);                                     \
          q_[3] = _mm256_and_si256(_mm256_srli_epi16(B_, 4), m4_);                                     \
          q_[0] = _mm256_or_si256(q_[0], _mm256_and_si256(_mm256_slli_epi16(qh_, 4), m30_));           \
          q_[1] = _mm256_or_si256(q_[1], _mm256_and_si256(_mm256_slli_epi16(qh_, 2), m30_));           \
          q_[2] = _mm256_or_si256(q_[2], _mm256_and_si256(qh_, m30_));                                 \
          q_[3] = _mm256_or_si256(q_[3], _mm256_and_si256(_mm256_srli_epi16(qh_, 2), m30_));           \
          for (int w_ = 0; w_ < 4; w_++) {                                                             \
            __m256i v_ = _mm256_sub_epi8(q_[w_], b32_);                                                \
            EMIT(8 * h_ + 2 * w_ + 0, _mm512_mul_ps(i8f(_mm256_castsi256_si128(v_)), _mm512_set1_ps(s_[8 * h_ + 2 * w_]))); \
            EMIT(8 * h_ + 2 * w_ + 1, _mm512_mul_ps(i8f(_mm256_extracti128_si256(v_, 1)), _mm512_set1_ps(s_[8 * h_ + 2 * w_ + 1]))); \
          }                                                                                            \
        }                                                                                              \
      }                                                                                                \
    } else {                                                                                           \
      EMIT(0, _mm512_loadu_ps((const float*)(b)));                                                     \
    }                                                                                                  \
  } while (0)

INL float tree(__m512 a) {  // the same adds as tree16
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

static int g_prefetch;  // $PROBE_PREFETCH: bytes ahead in each row (0: none), an experiment knob
// Decode: 4 rows x 1 token (isa_simd.h tile_stored<V, D, 4, 1>). A 256-element block
// (Q4_K / Q6_K) is 16 chunks for one row's accumulator: a chain of 16 dependent fmas if
// fed straight from the decoder, so those go through an L1 buffer of the 4 rows' blocks
// and are applied chunk by chunk across the rows (4 independent chains, same order per
// output: isa_simd.h tile_prefill<V, D, 4, 1>), each block prefetched one tile (4 rows)
// ahead unless $PROBE_PREFETCH says otherwise; PROBE_UNPACK=old feeds them straight.
// Other types: every cache line of the tile's 4 rows is prefetched at the tile's start
// (isa_simd.h row_block's prefetch_span); PROBE_SPAN=0 leaves that out, to price it.
static int g_span = 1;
INL void tile_decode(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* out) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  const int E = kElems[type], B = kBytes[type];
  if (E != 256 && g_span)
    for (int64_t o = 0; o < 4 * rb; o += 64) _mm_prefetch((const char*)w + o, _MM_HINT_T0);
  float buf[4][256] __attribute__((aligned(64)));
  for (int blk = 0; blk < k / E; blk++) {
    const float* xb = x + blk * E;
    if (E == 256 && !g_old) {
      for (int r = 0; r < 4; r++) {
        if (g_prefetch)
          for (int o = 0; o < B; o += 64) _mm_prefetch((const char*)(w + r * rb + (int64_t)blk * B + g_prefetch + o), _MM_HINT_T0);
#define STORE(c, wv) _mm512_store_ps(&buf[r][16 * (c)], (wv))
        DECODE(type, w + r * rb + (int64_t)blk * B, STORE);
#undef STORE
      }
      for (int c = 0; c < 16; c++) {
        __m512 xv = _mm512_loadu_ps(xb + 16 * c);
        for (int r = 0; r < 4; r++) acc[r] = _mm512_fmadd_ps(_mm512_load_ps(&buf[r][16 * c]), xv, acc[r]);
      }
      continue;
    }
    for (int r = 0; r < 4; r++) {
      const uint8_t* b = w + r * rb + (int64_t)blk * B;
      if (g_prefetch) _mm_prefetch((const char*)(b + g_prefetch), _MM_HINT_T0);
#define ACC(c, wv) acc[r] = _mm512_fmadd_ps((wv), _mm512_loadu_ps(xb + 16 * (c)), acc[r])
      DECODE(type, b, ACC);
#undef ACC
    }
  }
  for (int r = 0; r < 4; r++) out[r] = tree(acc[r]);
}

// Prefill: 2 rows x 8 tokens (isa_simd.h tile_prefill<V, D, 2, 8>: each row's block decoded into
// an L1 buffer, then chunk by chunk into the 16 accumulators); out (8, ldo).
INL void tile_prefill(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* out, int ldo) {
  __m512 acc[2][8];
  float buf[2][256] __attribute__((aligned(64)));
  for (int r = 0; r < 2; r++)
    for (int t = 0; t < 8; t++) acc[r][t] = _mm512_setzero_ps();
  const int E = kElems[type], B = kBytes[type];
  for (int blk = 0; blk < k / E; blk++) {
    for (int r = 0; r < 2; r++) {
#define STORE(c, wv) _mm512_store_ps(&buf[r][16 * (c)], (wv))
      DECODE(type, w + r * rb + (int64_t)blk * B, STORE);
#undef STORE
    }
    const float* xb = x + blk * E;
    for (int c = 0; c < E / 16; c++) {
      __m512 w0 = _mm512_load_ps(&buf[0][16 * c]), w1 = _mm512_load_ps(&buf[1][16 * c]);
      for (int t = 0; t < 8; t++) {
        __m512 xv = _mm512_loadu_ps(xb + (int64_t)t * k + 16 * c);
        acc[0][t] = _mm512_fmadd_ps(w0, xv, acc[0][t]);
        acc[1][t] = _mm512_fmadd_ps(w1, xv, acc[1][t]);
      }
    }
  }
  for (int r = 0; r < 2; r++)
    for (int t = 0; t < 8; t++) out[t * ldo + r] = tree(acc[r][t]);
}

// One type per instance, so each decoder is compiled with its type constant.
#define TYPED(type, CALL)                              \
  switch (type) {                                      \
    case Q4_1: { const int ty = Q4_1; CALL; } break;   \
    case Q8_0: { const int ty = Q8_0; CALL; } break;   \
    case Q5_0: { const int ty = Q5_0; CALL; } break;   \
    case F32: { const int ty = F32; CALL; } break;     \
    case Q4_K: { const int ty = Q4_K; CALL; } break;   \
    default: { const int ty = Q6_K; CALL; } break;     \
  }
// Rows [r0, r1) of the matrix (multiples of the tile).
static void decode_rows(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* y, long r0, long r1) {
  TYPED(type, for (long r = r0; r < r1; r += 4) tile_decode(ty, w + r * rb, rb, x, k, y + r));
}
static void prefill_rows(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* y, long rows, long r0,
                         long r1) {
  TYPED(type, for (long r = r0; r < r1; r += 2) tile_prefill(ty, w + r * rb, rb, x, k, y + r, (int)rows));
}

static void fill(int type, uint8_t* w, int64_t bytes) {
  srand(1);
  for (int64_t i = 0; i < bytes; i++) w[i] = (uint8_t)rand();
  const int B = kBytes[type];
  for (int64_t i = 0; i + B <= bytes; i += B) {  // sane scales (no NaN / Inf halves, finite floats)
    if (type == F32) {
      for (int j = 0; j < 16; j++) { float f = (float)(rand() % 2001 - 1000) / 1000.0f; memcpy(w + i + 4 * j, &f, 4); }
      continue;
    }
    uint16_t d = (uint16_t)(0x2000 + rand() % 0x1000), m = (uint16_t)(0xa000 + rand() % 0x1000);
    memcpy(w + i + (type == Q6_K ? 208 : 0), &d, 2);
    if (type == Q4_1 || type == Q4_K) memcpy(w + i + 2, &m, 2);
  }
}

// Decode, timed: one parallel region; per repetition every thread runs its rows, then a
// barrier. PROBE_CHUNK=R (rows, a multiple of 4): the rows go round-robin to the threads
// in chunks of R (the oracle's split of each matrix keeps the threads' streams near each
// other); 0: one contiguous share per thread (omp static).
static double time_decode(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* y, long rows,
                          int reps, long chunk) {
  double best = 1e9;
#pragma omp parallel
  {
    const int nt = omp_get_num_threads(), me = omp_get_thread_num();
    float* xl = aligned_alloc(64, sizeof(float) * k);  // this thread's copy of x
    memcpy(xl, x, sizeof(float) * k);
    for (int rep = 0; rep < reps; rep++) {
      double t0 = 0;
#pragma omp barrier
      if (me == 0) t0 = now();
      if (chunk <= 0) {
        long per = (rows / 4 + nt - 1) / nt * 4, r0 = per * me, r1 = r0 + per < rows ? r0 + per : rows;
        if (r0 < r1) decode_rows(type, w, rb, xl, k, y, r0, r1);
      } else {
        for (long r0 = chunk * me; r0 < rows; r0 += chunk * nt)
          decode_rows(type, w, rb, xl, k, y, r0, r0 + chunk < rows ? r0 + chunk : rows);
      }
#pragma omp barrier
      if (me == 0 && now() - t0 < best) best = now() - t0;
    }
    free(xl);
  }
  return best;
}

static double time_prefill(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* y, long rows,
                           int reps) {
  double best = 1e9;
  const int inner = 20;  // L2-resident: many passes per timing
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now();
    for (int it = 0; it < inner; it++) {
#pragma omp parallel
      {
        const int nt = omp_get_num_threads(), me = omp_get_thread_num();
        long per = (rows / 2 + nt - 1) / nt * 2, r0 = per * me, r1 = r0 + per < rows ? r0 + per : rows;
        if (r0 < r1) prefill_rows(type, w, rb, x, k, y, rows, r0, r1);
      }
    }
    double t = (now() - t0) / inner;
    if (t < best) best = t;
  }
  return best;
}

// isa.h decode_prefetch: $ORACLE_PREFETCH (span / ahead), else ahead on Intel (CPUID vendor).
static int decode_prefetch_ahead(void) {
  const char* e = getenv("ORACLE_PREFETCH");
  if (e && !strcmp(e, "ahead")) return 1;
  if (e && !strcmp(e, "span")) return 0;
  unsigned a, b, c, d;
  char v[13] = {0};
  if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
  memcpy(v, &b, 4), memcpy(v + 4, &d, 4), memcpy(v + 8, &c, 4);
  return !strcmp(v, "GenuineIntel");
}

int main(int argc, char** argv) {
  const char* names[] = {"q4_1", "q8_0", "q5_0", "f32", "q4_k", "q6_k"};
  if (argc < 3) { fprintf(stderr, "usage: kernel_probe q4_1|q8_0|q5_0|f32|q4_k|q6_k decode|prefill [ROWS] [K] [REPS]\n"); return 2; }
  int type = -1;
  for (int i = 0; i < 6; i++) if (!strcmp(argv[1], names[i])) type = i;
  int prefill = !strcmp(argv[2], "prefill");
  if (type < 0 || (!prefill && strcmp(argv[2], "decode"))) { fprintf(stderr, "bad TYPE or PHASE\n"); return 2; }
  const long rows = argc > 3 ? atol(argv[3]) : prefill ? 512 : 234376;
  const int k = argc > 4 ? atoi(argv[4]) : 576, reps = argc > 5 ? atoi(argv[5]) : prefill ? 200 : 20;
  const int T = prefill ? 8 : 1;
  if (getenv("PROBE_PREFETCH")) g_prefetch = atoi(getenv("PROBE_PREFETCH"));
  if (getenv("PROBE_SPAN")) g_span = atoi(getenv("PROBE_SPAN"));
  g_old = getenv("PROBE_UNPACK") && !strcmp(getenv("PROBE_UNPACK"), "old");
  const long chunk = getenv("PROBE_CHUNK") ? atol(getenv("PROBE_CHUNK")) : 0;
  if (rows % 4 || k % kElems[type] || chunk % 4) { fprintf(stderr, "ROWS and PROBE_CHUNK must be multiples of 4, K of the block\n"); return 2; }
  const int64_t rb = (int64_t)k / kElems[type] * kBytes[type];
  // as isa_simd.h: k-quants' blocks, and Q8_0's besides the span, prefetched one tile (4 rows) ahead;
  // the other 32-element blocks too where the oracle's decode prefetch is "ahead" (isa.h: Intel)
  const int ahead32 = decode_prefetch_ahead();
  if (!getenv("PROBE_PREFETCH") && ((kElems[type] == 256 && !g_old) || type == Q8_0 || (ahead32 && kElems[type] == 32)))
    g_prefetch = (int)(4 * rb);
  uint8_t* w = aligned_alloc(64, (size_t)((rows * rb + 63) / 64 * 64));
  fill(type, w, rows * rb);
  float* x = aligned_alloc(64, sizeof(float) * T * k);
  for (int i = 0; i < T * k; i++) x[i] = (float)(rand() % 2001 - 1000) / 997.0f;
  float* y = malloc(sizeof(float) * T * rows);
  // bit check: the first 16 rows, every token
  if (prefill) prefill_rows(type, w, rb, x, k, y, rows, 0, 16);
  else decode_rows(type, w, rb, x, k, y, 0, 16);
  for (long r = 0; r < 16; r++)
    for (int t = 0; t < T; t++) {
      float want = scalar_dot(type, w + r * rb, x + (int64_t)t * k, k), got = y[(int64_t)t * rows + r];
      if (memcmp(&want, &got, 4)) { printf("MISMATCH row %ld token %d: %a vs %a\n", r, t, got, want); return 1; }
    }
  double best = prefill ? time_prefill(type, w, rb, x, k, y, rows, reps) : time_decode(type, w, rb, x, k, y, rows, reps, chunk);
  double per_s = (double)rows * k * T / best / 1e9;
  printf("%s %s threads=%d rows=%ld k=%d%s%s: bit-identical to the scalar canonical loop; best %.3f ms = %.2f %s (%.2f GB/s of weights)\n",
         names[type], argv[2], omp_get_max_threads(), rows, k, g_old ? " unpack=old" : "",
         chunk ? " chunked" : "", best * 1e3, per_s, prefill ? "G MAC/s" : "G weights/s", rows * rb / best / 1e9);
  return 0;
}
