// Speculative decoding losslessness (reference/generate/speculative.h): for random
// target p and draft q over small vocabularies, the first emitted token of a
// draft-then-verify step is distributed exactly as p. The uniform u is
// integrated on a midpoint grid of G points, so each probability is exact up
// to 1/G per decision: |P(x) - p(x)| <= 3/G (acceptance, residual draw, and
// float32 probabilities).
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstdio>

#include "property_tests/generators.h"
#include "numerics/numerics.h"
#include "reference/generate/speculative.h"

using namespace oracle;

namespace {

constexpr int kGrid = 2048;

float u_at(int i) { return ((float)i + 0.5f) / (float)kGrid; }

// A probability vector over n ids: canonical softmax of random logits, some masked.
std::vector<float> gen_distribution(int n) {
  std::vector<float> x = *rc::gen::container<std::vector<float>>(
      (size_t)n, rc::gen::map(rc::gen::inRange(-12, 13), [](int v) { return (float)v / 4.0f; }));
  for (float& v : x)
    if (*rc::gen::inRange(0, 5) == 0) v = -INFINITY;
  x[(size_t)*rc::gen::inRange(0, n)] = 0.0f;  // at least one live entry
  num::softmax_canonical(x.data(), n);
  return x;
}

// P(first emitted token = x) for one draft position, integrating every u.
std::vector<double> emitted(const std::vector<float>& p, const std::vector<float>& q) {
  int n = (int)p.size();
  std::vector<double> out((size_t)n, 0.0), r_dist((size_t)n, 0.0);
  std::vector<float> r = residual(p, q);
  for (int i = 0; i < kGrid; i++) {
    int x = draw_inverse_cdf(r, u_at(i));
    if (x >= 0) r_dist[(size_t)x] += 1.0 / kGrid;
  }
  for (int d = 0; d < n; d++) {
    if (q[(size_t)d] == 0.0f) continue;
    double acc = 0.0;
    for (int i = 0; i < kGrid; i++) acc += accept_draft(p[(size_t)d], q[(size_t)d], u_at(i)) ? 1.0 / kGrid : 0.0;
    out[(size_t)d] += (double)q[(size_t)d] * acc;
    for (int x = 0; x < n; x++) out[(size_t)x] += (double)q[(size_t)d] * (1.0 - acc) * r_dist[(size_t)x];
  }
  return out;
}

}  // namespace

TEST_CASE("property: speculative decoding is lossless", "[property][speculative]") {
  oracle::prop::seed_rapidcheck();

  oracle::prop::check("first emitted token ~ p exactly (accept min(1,p/q), else residual max(0,p-q))", [] {
    int n = *rc::gen::inRange(2, 9);
    std::vector<float> p = gen_distribution(n), q = gen_distribution(n);
    std::vector<double> got = emitted(p, q);
    for (int x = 0; x < n; x++) {
      if (!(std::fabs(got[(size_t)x] - (double)p[(size_t)x]) <= 3.0 / kGrid))
        std::printf("token %d: emitted %.6f, target p %.6f, draft q %.6f\n", x, got[(size_t)x],
                    (double)p[(size_t)x], (double)q[(size_t)x]);
      RC_ASSERT(std::fabs(got[(size_t)x] - (double)p[(size_t)x]) <= 3.0 / kGrid);
    }
  });

  oracle::prop::check("q == p: every draft is accepted", [] {
    int n = *rc::gen::inRange(2, 9);
    std::vector<float> p = gen_distribution(n);
    int d = *rc::gen::inRange(0, n);
    RC_PRE(p[(size_t)d] > 0.0f);
    for (int i = 0; i < kGrid; i++) RC_ASSERT(accept_draft(p[(size_t)d], p[(size_t)d], u_at(i)));
  });
}
