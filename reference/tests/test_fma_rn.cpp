// num::fma_rn (numerics v2's one fused multiply-add) against an independent
// derivation, and dot_canonical against a float64-exact model of "per-lane
// fma, then the halving tree".
//
// The model: for finite floats, a*b is exact in double (24 + 24 bits, exponent
// range far inside double's); s = p + c in double plus its TwoSum error e is
// exactly a*b + c as an unevaluated sum s + e; the float nearest to it is
// (float)s or a float neighbour, chosen by comparing s + e with the midpoints
// (each s - mid is exact by Sterbenz). Float adds are modelled as (float) of
// the double sum: double rounding is innocuous for + with 53 >= 2*24 + 2.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "numerics/numerics.h"

using namespace oracle::num;

namespace {

// Is the exact value s + e above (1), below (-1) or at (0) the double mid?
int side(double s, double e, double mid) {
  const double d = s - mid;  // exact: s and mid are within a factor 2 (or both tiny multiples of 2^-150)
  return d > -e ? 1 : d < -e ? -1 : 0;
}

bool even(float f) { return (f32_bits(f) & 1u) == 0; }

float model_fma(float a, float b, float c) {
  const double p = (double)a * (double)b;
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(c)) return (float)(p + (double)c);
  const double s = p + (double)c;
  const double bb = s - p, e = (p - (s - bb)) + ((double)c - bb);  // TwoSum: s + e == p + c exactly
  if (s == 0.0 && e == 0.0) return (float)s;  // exact zero: IEEE sign rule of p + c in round-to-nearest
  const float r = (float)s;
  if (std::isinf(r)) return r;
  const float hi = std::nextafter(r, INFINITY), lo = std::nextafter(r, -INFINITY);
  // Past FLT_MAX the next "float" is 2^128: a tie there rounds to infinity.
  const double up_mid = std::isinf(hi) ? (double)r + ((double)r - (double)lo) / 2 : ((double)r + (double)hi) / 2;
  const double dn_mid = std::isinf(lo) ? (double)r - ((double)hi - (double)r) / 2 : ((double)r + (double)lo) / 2;
  const int up = side(s, e, up_mid), dn = side(s, e, dn_mid);
  if (up > 0 || (up == 0 && (std::isinf(hi) || even(hi)))) return hi;
  if (dn < 0 || (dn == 0 && (std::isinf(lo) || even(lo)))) return lo;
  if (r == 0.0f) return s + e < 0 ? -0.0f : 0.0f;  // rounded to zero: the sign of the exact value
  return r;
}

bool same_bits(float x, float y) { return (x != x && y != y) || f32_bits(x) == f32_bits(y); }

float add_model(float x, float y) { return (float)((double)x + (double)y); }

}  // namespace

TEST_CASE("fma_rn: known answers where one rounding differs from mul then add", "[numerics][fma]") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the rounded product drops 2^-24 (a tie, to even).
  const float a = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
  CHECK(fma_rn(a, a, c) == 0x1p-24f);
  CHECK(add_rn(mul_rn(a, a), c) == 0.0f);
  // fma(x, x, -round(x*x)) is the exact error of the product (representable): Dekker.
  for (float x : {0.1f, 1.0f / 3.0f, 3.14159274f, -7.25e-3f}) {
    const float p = mul_rn(x, x);
    CHECK(fma_rn(x, x, -p) == (float)((double)x * x - (double)p));
  }
  // No intermediate overflow: FLT_MAX * 2 - FLT_MAX = FLT_MAX, mul then add gives inf.
  const float big = std::numeric_limits<float>::max();
  CHECK(fma_rn(big, 2.0f, -big) == big);
  CHECK(std::isinf(add_rn(mul_rn(big, 2.0f), -big)));
  // Subnormal range: a*b = 2^-150 + 2^-173, c = -2^-149. One rounding: -2^-150 + 2^-173 -> -0;
  // mul then add: round(a*b) = 2^-149, then +0.
  const float sa = 0x1p-75f * (1.0f + 0x1p-23f), sb = 0x1p-75f, sc = -0x1p-149f;
  CHECK(f32_bits(fma_rn(sa, sb, sc)) == 0x80000000u);
  CHECK(f32_bits(add_rn(mul_rn(sa, sb), sc)) == 0x00000000u);
  CHECK(fma_rn(0x1p-100f, 0x1p-40f * 1.5f, 0x1p-149f) == 769.0f * 0x1p-149f);  // 3·2^-141 + 2^-149 = 769·2^-149, exact
}

TEST_CASE("fma_rn: infinities, NaN and signed zeros", "[numerics][fma]") {
  const float inf = inf_f32(), nan = f32_from_bits(0x7fc00000u);
  CHECK(std::isnan(fma_rn(inf, 0.0f, 1.0f)));
  CHECK(std::isnan(fma_rn(inf, 1.0f, -inf)));
  CHECK(fma_rn(inf, 2.0f, 5.0f) == inf);
  CHECK(std::isnan(fma_rn(-3.0f, inf, inf)));  // -inf + inf
  CHECK(std::isnan(fma_rn(1.0f, 1.0f, nan)));
  CHECK(std::isnan(fma_rn(nan, 0.0f, 0.0f)));
  CHECK(fma_rn(2.0f, 3.0f, inf) == inf);
  CHECK(f32_bits(fma_rn(0.0f, -1.0f, 0.0f)) == 0x00000000u);   // -0 + +0 = +0
  CHECK(f32_bits(fma_rn(-0.0f, 1.0f, -0.0f)) == 0x80000000u);  // -0 + -0 = -0
  CHECK(f32_bits(fma_rn(2.0f, 3.0f, -6.0f)) == 0x00000000u);   // exact cancellation: +0
}

TEST_CASE("fma_rn equals the independent model on random triples of every magnitude", "[numerics][fma]") {
  std::mt19937 rng(30);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-80, 80);
  int differs_from_mul_add = 0, n = 0;
  for (int i = 0; i < 300000; i++, n++) {
    float a, b, c;
    if (i % 3 == 0) {  // arbitrary bit patterns: subnormals, huge, inf, NaN
      a = f32_from_bits(bits(rng)), b = f32_from_bits(bits(rng)), c = f32_from_bits(bits(rng));
    } else {  // cancelling magnitudes: c near -a*b
      a = std::ldexp(unit(rng), ex(rng)), b = std::ldexp(unit(rng), ex(rng));
      c = i % 3 == 1 ? -mul_rn(a, b) * (1.0f + std::ldexp(unit(rng), -20)) : std::ldexp(unit(rng), ex(rng));
    }
    const float got = fma_rn(a, b, c), want = model_fma(a, b, c);
    if (!same_bits(got, want)) {
      INFO(a << " " << b << " " << c << " got " << got << " want " << want);
      CHECK(same_bits(got, want));
    }
    if (!same_bits(got, add_rn(mul_rn(a, b), c))) differs_from_mul_add++;
  }
  INFO(differs_from_mul_add << " of " << n << " differ from mul then add");
  CHECK(differs_from_mul_add > n / 10);  // the test can tell the two apart
}

TEST_CASE("dot_canonical is per-lane fma in increasing k, then the halving tree", "[numerics][fma]") {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int differs_from_v1 = 0;
  for (int n : {0, 1, 7, 15, 16, 17, 31, 64, 100, 288, 1000, 4099}) {
    for (int rep = 0; rep < 8; rep++) {
      std::vector<float> a(n), b(n);
      for (int k = 0; k < n; k++) a[k] = std::ldexp(dist(rng), k % 13 - 6), b[k] = dist(rng);
      float lanes[16] = {}, v1[16] = {};
      for (int k = 0; k < n; k++) {
        lanes[k % 16] = model_fma(a[k], b[k], lanes[k % 16]);
        v1[k % 16] = add_model(v1[k % 16], (float)((double)a[k] * b[k]));  // numerics v1: mul, then add
      }
      for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) lanes[i] = add_model(lanes[i], lanes[i + w]), v1[i] = add_model(v1[i], v1[i + w]);
      const float got = dot_canonical(a.data(), b.data(), n);
      INFO("n = " << n);
      CHECK(f32_bits(got) == f32_bits(lanes[0]));
      CHECK(f32_bits(sumsq_fixed_order(a.data(), n)) == f32_bits(dot_canonical(a.data(), a.data(), n)));
      if (f32_bits(got) != f32_bits(v1[0])) differs_from_v1++;
    }
  }
  CHECK(differs_from_v1 > 20);  // the model tells v2 from v1
}
