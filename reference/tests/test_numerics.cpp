// Canonical numerics: accuracy of our own transcendentals against libm in
// float64 (libm is allowed in tests, never in the pipeline), exact edge rules,
// and the documented reduction order.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>

#include "numerics/numerics.h"

using namespace oracle::num;

namespace {
// Distance in units of the float32 ulp at the correctly rounded value.
double ulp_error(float got, double want) {
  float w = static_cast<float>(want);
  if (w == got) return 0.0;
  double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}
}  // namespace

TEST_CASE("exp_canonical is within 1 ulp of exp over its normal range", "[numerics]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-87.0f, 88.7f);
  double worst = 0;
  for (int i = 0; i < 200000; i++) {
    float x = dist(rng);
    worst = std::max(worst, ulp_error(exp_canonical(x), std::exp(static_cast<double>(x))));
  }
  INFO("worst ulp error " << worst);
  CHECK(worst <= 1.0);
}

TEST_CASE("exp_canonical edge rules", "[numerics]") {
  CHECK(exp_canonical(0.0f) == 1.0f);
  CHECK(exp_canonical(-INFINITY) == 0.0f);
  CHECK(std::isinf(exp_canonical(INFINITY)));
  CHECK(std::isinf(exp_canonical(89.0f)));
  CHECK(std::isnan(exp_canonical(NAN)));
  CHECK(exp_canonical(-104.0f) == 0.0f);
  float sub = exp_canonical(-100.0f);  // subnormal result, rounded once
  CHECK(sub > 0.0f);
  CHECK(ulp_error(sub, std::exp(-100.0)) <= 1.0);
}

TEST_CASE("log_canonical is within 1 ulp of log", "[numerics]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-80.0f, 80.0f);
  double worst = 0;
  for (int i = 0; i < 200000; i++) {
    float x = std::exp(dist(rng));
    worst = std::max(worst, ulp_error(log_canonical(x), std::log(static_cast<double>(x))));
  }
  INFO("worst ulp error " << worst);
  CHECK(worst <= 1.0);
  CHECK(log_canonical(1.0f) == 0.0f);
  CHECK(std::isinf(log_canonical(0.0f)));
  CHECK(std::isnan(log_canonical(-1.0f)));
  CHECK(ulp_error(log_canonical(1e-40f), std::log(1e-40)) <= 1.0);  // subnormal input
}

TEST_CASE("float64 RoPE helpers match libm to double precision", "[numerics]") {
  for (int i = 0; i < 64; i++) {
    float f = rope_freq(10000.0f, i, 128);
    CHECK(f == static_cast<float>(std::pow(10000.0, -(2.0 * i) / 128.0)));
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-20000.0, 20000.0);
  for (int i = 0; i < 100000; i++) {
    double x = dist(rng), s, c;
    sincos_d(x, &s, &c);
    REQUIRE(std::fabs(s - std::sin(x)) < 4e-16 * std::max(1.0, std::fabs(x) / 1000));
    REQUIRE(std::fabs(c - std::cos(x)) < 4e-16 * std::max(1.0, std::fabs(x) / 1000));
  }
}

TEST_CASE("half and bfloat16 conversions are exact and round to nearest even", "[numerics]") {
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = fp16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(f32_to_fp16(f) == h);  // round trip of every finite half / inf
  }
  CHECK(f32_to_fp16(65520.0f) == 0x7c00);     // rounds up to inf
  CHECK(f32_to_fp16(1.0f + 0x1p-11f) == 0x3c00);  // tie -> even
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);  // tie -> even
}

TEST_CASE("dot_canonical follows the documented lane/tree order", "[numerics]") {
  // Values chosen so that any other association gives different bits.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int n : {1, 7, 16, 17, 64, 100, 288, 1000}) {
    std::vector<float> a(n), b(n);
    for (int k = 0; k < n; k++) a[k] = dist(rng) * std::ldexp(1.0f, k % 13), b[k] = dist(rng);
    float lanes[16] = {0};
    for (int k = 0; k < n; k++) lanes[k % 16] = std::fma(a[k], b[k], lanes[k % 16]);  // v2: one fma per element
    for (int w = 8; w >= 1; w /= 2)
      for (int i = 0; i < w; i++) lanes[i] = lanes[i] + lanes[i + w];
    CHECK(dot_canonical(a.data(), b.data(), n) == lanes[0]);
  }
}

TEST_CASE("softmax_canonical: stable, masked rows, fully masked rule", "[numerics]") {
  float big[3] = {1e30f, -1e30f, 1e30f};
  softmax_canonical(big, 3);
  CHECK(big[0] == 0.5f);
  CHECK(big[1] == 0.0f);
  float masked[3] = {-INFINITY, 2.0f, -INFINITY};
  softmax_canonical(masked, 3);
  CHECK(masked[1] == 1.0f);
  float all[2] = {-INFINITY, -INFINITY};
  softmax_canonical(all, 2);
  CHECK(all[0] == 0.0f);
  CHECK(all[1] == 0.0f);
  CHECK(argmax_lowest(big, 3) == 0);  // tie between 0 and 2 -> lowest id
}
