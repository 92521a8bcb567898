// The AVX-512 path of the dispatch table (isa.h); compiled with -mavx512f
// -mavx512bw -mavx2 -mfma -mf16c (reference/compute/CMakeLists.txt) and
// -ffp-contract=off. The 16 canonical lanes are exactly one zmm register:
// lane l = element l of the 16-element chunk; _mm512_fmadd_ps is num::fma_rn
// per lane, _mm512_mul_ps / _add_ps are mul_rn / add_rn.
#include <immintrin.h>

#include "reference/compute/isa_simd.h"

namespace oracle::isa {
namespace {

struct Avx512 {
  using reg = __m512;
  // Prefill tile (isa_simd.h rows_stored): 2 row(s) x 8 tokens of accumulators.
  static constexpr int kTileRows = 2, kTileTokens = 8;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg set1(float a) { return _mm512_set1_ps(a); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  // a*b + c and a*b - c, one rounding each (num::fma_rn(a, b, c), fma_rn(a, b, -c)).
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg fms(reg a, reg b, reg c) { return _mm512_fmsub_ps(a, b, c); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg a) { _mm512_storeu_ps(p, a); }
  static reg i8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
  static reg u8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)); }
  static __m256i load32(const uint8_t* b) { return _mm256_loadu_si256((const __m256i*)b); }
  static reg f16(const uint8_t* b) { return _mm512_cvtph_ps(load32(b)); }
  static reg bf16(const uint8_t* b) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load32(b)), 16)); }
  // Q5_0 / Q5_1 (isa_simd.h five_bit_bytes): nibble + 16 * bit - kBias, in 32-bit
  // lanes: the nibbles widened once, then a subtract of 16 masked by ~qh (kBias 16)
  // or an add of 16 masked by qh (kBias 0). qh goes into one 32-bit opmask
  // (AVX-512BW: kmovd), complemented and halved there (knotd, kshiftrd), not in
  // general registers moved over 16 bits at a time: Q5_0 decode 13.2 -> 14.3 G
  // weights/s (L2-resident rows, 1 thread, Zen 4).
  template <int kBias>
  static void five_bit(__m128i qs, uint32_t qh, reg* out) {
    const __m512i x = _mm512_cvtepu8_epi32(qs), s16 = _mm512_set1_epi32(16);
    __m512i v[2] = {_mm512_and_si512(x, _mm512_set1_epi32(0x0F)), _mm512_srli_epi32(x, 4)};
    __mmask32 bits = _cvtu32_mask32(qh);
    if (kBias == 16) bits = _knot_mask32(bits);
    const __mmask16 half_bits[2] = {(__mmask16)bits, (__mmask16)_kshiftri_mask32(bits, 16)};
    for (int h = 0; h < 2; h++) {
      v[h] = kBias == 16 ? _mm512_mask_sub_epi32(v[h], half_bits[h], v[h], s16)
                         : _mm512_mask_add_epi32(v[h], half_bits[h], v[h], s16);
      out[h] = _mm512_cvtepi32_ps(v[h]);
    }
  }
  // num::lane_tree_reduce, same adds: w=8: lanes 0..7 + 8..15 (the two ymm
  // halves; AVX512F has no 32x8 extract, the 64x4 one moves the same bits),
  // then as AVX2: w=4, w=2, w=1.
  static float tree(reg a) {
    __m256 lo = _mm512_castps512_ps256(a);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
  // tree(a[i]) for i < 16, the same adds with the same operands, 16 outputs at a
  // time: level w = 8 pairs a[2j], a[2j + 1] into one register (each half its
  // output's lanes 0..7 + 8..15), w = 4 pairs those by 128-bit quarters, w = 2
  // and w = 1 within quarters (shuffle_ps). The last register holds output
  // c + 4e in lane 4c + e; one permute orders them: out[j] = tree(a[i]) with
  // i = (j % kR) * (16 / kR) + j / kR (kR = 1: i = j; kR = 2: a[0..7] and
  // a[8..15] interleaved, so a 2-row tile's two rows of one token are adjacent).
  static constexpr bool kTree16 = true;
  // _mm512_shuffle_f32x4 with every lane written (mask all ones): the same
  // instruction's result. GCC 12's unmasked forms (this one, and permutexvar
  // below) pass _mm512_undefined_ps and warn (-Wuninitialized, a false
  // positive) once inlined into the attention tiles.
  template <int kImm>
  static reg shuffle128(reg a, reg b) { return _mm512_mask_shuffle_f32x4(a, (__mmask16)0xFFFF, a, b, kImm); }
  template <int kR>
  static void tree16(const reg* a, float* out) {
    reg u[8], v[4], w[2];
    for (int j = 0; j < 8; j++)  // w = 8: lanes 0..7 + lanes 8..15
      u[j] = _mm512_add_ps(shuffle128<0x44>(a[2 * j], a[2 * j + 1]), shuffle128<0xEE>(a[2 * j], a[2 * j + 1]));
    for (int j = 0; j < 4; j++)  // w = 4: quarters 0, 2 + quarters 1, 3
      v[j] = _mm512_add_ps(shuffle128<0x88>(u[2 * j], u[2 * j + 1]), shuffle128<0xDD>(u[2 * j], u[2 * j + 1]));
    for (int j = 0; j < 2; j++)  // w = 2: elements 0, 1 + 2, 3 of each quarter
      w[j] = _mm512_add_ps(_mm512_shuffle_ps(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const reg z = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),  // w = 1
                                _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(64) int order[16];  // lane of output j's accumulator
    for (int j = 0; j < 16; j++) {
      const int i = (j % kR) * (16 / kR) + j / kR;
      order[j] = 4 * (i & 3) + (i >> 2);
    }
    _mm512_storeu_ps(out, _mm512_mask_permutexvar_ps(z, (__mmask16)0xFFFF, _mm512_load_si512(order), z));
  }
};

constexpr Kernels kAvx512 = make_kernels<Avx512>(Isa::Avx512);

}  // namespace

const Kernels& avx512_kernels() { return kAvx512; }

}  // namespace oracle::isa
