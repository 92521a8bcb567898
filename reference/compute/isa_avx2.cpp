// The AVX2+FMA path of the dispatch table (isa.h); compiled with -mavx2
// -mfma -mf16c (reference/compute/CMakeLists.txt) and -ffp-contract=off. The
// 16 canonical lanes are two ymm registers: lo = lanes 0..7, hi = lanes 8..15;
// _mm256_fmadd_ps is exactly num::fma_rn per lane, _mm256_mul_ps / _add_ps
// exactly mul_rn / add_rn.
#include <immintrin.h>

#include "reference/compute/isa_simd.h"

namespace oracle::isa {
namespace {

struct Avx2 {
  struct reg {
    __m256 lo, hi;
  };
  // Prefill tile (isa_simd.h rows_stored): 1 row(s) x 4 tokens of accumulators.
  static constexpr int kTileRows = 1, kTileTokens = 4;
  static reg zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static reg set1(float a) { return {_mm256_set1_ps(a), _mm256_set1_ps(a)}; }
  static reg add(reg a, reg b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static reg mul(reg a, reg b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static reg sub(reg a, reg b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
  // a*b + c and a*b - c, one rounding each (num::fma_rn(a, b, c), fma_rn(a, b, -c)).
  static reg fma(reg a, reg b, reg c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static reg fms(reg a, reg b, reg c) { return {_mm256_fmsub_ps(a.lo, b.lo, c.lo), _mm256_fmsub_ps(a.hi, b.hi, c.hi)}; }
  static reg load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static void store(float* p, reg a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
  }
  static __m128i high8(__m128i v) { return _mm_unpackhi_epi64(v, v); }
  static reg i8(__m128i q) {
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(high8(q)))};
  }
  static reg u8(__m128i q) {
    return {_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(high8(q)))};
  }
  static reg f16(const uint8_t* b) { return {_mm256_cvtph_ps(load16(b)), _mm256_cvtph_ps(load16(b + 16))}; }
  static __m256 widen_bf16(__m128i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)); }
  static reg bf16(const uint8_t* b) { return {widen_bf16(load16(b)), widen_bf16(load16(b + 16))}; }
  // Q5_0 / Q5_1: nibble + 16 * bit - kBias, the 32 bytes at once (isa_simd.h five_bit_bytes).
  template <int kBias>
  static void five_bit(__m128i qs, uint32_t qh, reg* out) {
    const __m256i q = five_bit_bytes<kBias>(qs, qh);
    out[0] = i8(_mm256_castsi256_si128(q));
    out[1] = i8(_mm256_extracti128_si256(q, 1));
  }
  // num::lane_tree_reduce, same adds: w=8: lo+hi; w=4: low half + high half;
  // w=2: + lanes 2,3; w=1: lane 0 + lane 1.
  static float tree(reg a) {
    __m256 s8 = _mm256_add_ps(a.lo, a.hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
};

constexpr Kernels kAvx2 = make_kernels<Avx2>(Isa::Avx2);

}  // namespace

const Kernels& avx2_kernels() { return kAvx2; }

}  // namespace oracle::isa
