// Properties of softmax_canonical (numerics/numerics.h): stability for logits
// up to ±1e30 and -inf masks, normalisation within a derived bound, agreement
// with float64, order preservation.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstdio>

#include "property_tests/generators.h"
#include "numerics/numerics.h"

namespace num = oracle::num;
using oracle::prop::gen_logits;

namespace {

const double kU = std::ldexp(1.0, -24);  // unit roundoff of float32

std::vector<float> softmax(std::vector<float> x) {
  num::softmax_canonical(x.data(), (int)x.size());
  return x;
}

bool fully_masked(const std::vector<float>& x) {
  for (float v : x)
    if (v > -INFINITY) return false;
  return true;
}

// float64 softmax of the same row (exact exp; masked entries 0).
std::vector<double> softmax64(const std::vector<float>& x) {
  double m = -INFINITY;
  for (float v : x) m = std::max(m, (double)v);
  std::vector<double> p(x.size());
  double s = 0.0;
  for (size_t k = 0; k < x.size(); k++) s += (p[k] = std::exp((double)x[k] - m));
  for (double& v : p) v /= s;
  return p;
}

}  // namespace

TEST_CASE("property: softmax_canonical", "[property][softmax]") {
  oracle::prop::Shapes shapes;

  oracle::prop::check("no NaN/Inf, every p in [0,1], even for ±1e30 and -inf masks", 2000, shapes, [&] {
    std::vector<float> x = *gen_logits(64);
    shapes.add("n", (long)x.size());
    std::vector<float> p = softmax(x);
    for (float v : p) RC_ASSERT(v >= 0.0f && v <= 1.0f);  // false for NaN
  });

  oracle::prop::check("fully masked row -> all zeros; all-but-one masked -> exactly 1 there", 2000, shapes, [&] {
    int n = *rc::gen::inRange(1, 40);
    int keep = *rc::gen::inRange(-1, n);  // -1: fully masked
    std::vector<float> x((size_t)n, -INFINITY);
    if (keep >= 0) x[(size_t)keep] = *oracle::prop::gen_logit();
    if (keep >= 0 && x[(size_t)keep] == -INFINITY) keep = -1;
    std::vector<float> p = softmax(x);
    for (int k = 0; k < n; k++) RC_ASSERT(p[(size_t)k] == (k == keep ? 1.0f : 0.0f));
  });

  // Bound: e_k in [0, 1] (the max gives exactly 1). s = fl(sum e_k) has relative
  // error <= (n-1)u for any summation order; p_k = fl(e_k / s) adds <= u each.
  // So |sum_k p_k - 1| <= (n-1)u/(1-(n-1)u) + u <= (n+1)u for n < 2^20
  // (the check sums p_k in float64, exactly enough for n <= 64).
  oracle::prop::check("probabilities sum to 1 within (n+1)u", 2000, shapes, [&] {
    std::vector<float> x = *gen_logits(64);
    RC_PRE(!fully_masked(x));
    std::vector<float> p = softmax(x);
    double sum = 0.0;
    for (float v : p) sum += v;
    RC_ASSERT(std::fabs(sum - 1.0) <= (double)(x.size() + 1) * kU);
  });

  // Bound per entry: d_k = fl(x_k - m) is exact by Sterbenz when x_k and m are
  // close and otherwise has relative error u, i.e. absolute |d_k| u, which
  // changes exp by the factor e^{±|d_k| u}; exp_canonical adds <= 2u (1 ulp +
  // rounding); the sum and division add (n+1)u as above. Entries that
  // underflow (d_k < -103.97) are 0 against a true value < 2^-149 * 2, so an
  // absolute slack of 1e-37 covers them (and subnormal results).
  oracle::prop::check("agrees with a float64 softmax within (|d_k| + n + 4)u relative", 2000, shapes, [&] {
    std::vector<float> x = *gen_logits(64);
    RC_PRE(!fully_masked(x));
    std::vector<float> p = softmax(x);
    std::vector<double> q = softmax64(x);
    float m = num::max_fixed_order(x.data(), (int)x.size());
    for (size_t k = 0; k < x.size(); k++) {
      double d = x[k] == -INFINITY ? 0.0 : std::fabs((double)num::sub_rn(x[k], m));
      double bound = q[k] * (d + (double)x.size() + 4.0) * kU + 1e-37;
      if (!(std::fabs((double)p[k] - q[k]) <= bound))
        std::printf("entry %zu: x=%a p=%a (0x%08x) float64 %.17g bound %.3g\n", k, x[k], p[k],
                    num::f32_bits(p[k]), q[k], bound);
      RC_ASSERT(std::fabs((double)p[k] - q[k]) <= bound);
    }
  });

  oracle::prop::check("order-preserving: x_i < x_j => p_i <= p_j, x_i == x_j => p_i == p_j", 2000, shapes, [&] {
    std::vector<float> x = *gen_logits(48);
    std::vector<float> p = softmax(x);
    for (size_t i = 0; i < x.size(); i++)
      for (size_t j = 0; j < x.size(); j++) {
        if (x[i] < x[j]) RC_ASSERT(p[i] <= p[j]);
        if (x[i] == x[j]) RC_ASSERT(p[i] == p[j]);
      }
  });
}
