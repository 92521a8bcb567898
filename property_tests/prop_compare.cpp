// Properties of `oracle compare` (audit/interop/compare.h): perturbations whose
// effect is known by construction, checked against numbers computed here —
// never against the comparison's own output.
//  - ULP: each candidate logit is the reference's stepped u_k representable
//    floats (std::nextafter, |want| >= 1 so no step crosses zero): max_ulp is
//    max u_k, bit_equal iff every u_k = 0, first_diff the first k with u_k > 0,
//    max_abs and NMSE recomputed naively in float64.
//  - KLD: all values on a 1/16 grid in [-16, 16], so shifts are exact in
//    float32. A constant shift c changes no x_k - m, so KLD is 0 but for the
//    rounding of lse = m + ln(sum) (m differs by c): the bound below with
//    KLD 0. Raising
//    one logit j by d gives q_k = p_k e^(d[k=j]) / Z with Z = 1 + p_j (e^d - 1),
//    so KL(P||Q) = sum_k p_k (ln p_k - ln q_k) = ln Z - p_j d, evaluated here
//    with log1p/expm1 (p_j from std::exp). Bound: the oracle's sum has n terms,
//    each p_k (lr_k - lc_k) with lr, lc = x - lse rounded (|x| <= 16 + d,
//    |lse| <= 16 + d + ln n), so every term carries at most 4 roundings of
//    magnitude <= 2 (16 + d + ln n) and the running sum n more of magnitude
//    <= the KLD: |err| <= (4 + n) u (2 (16 + d + ln n) + kld) with u = 2^-53,
//    plus 8 u (ln Z + p_j d) for the formula here; exp_d / log_d are accurate
//    to within 1 ulp (numerics.h), inside the per-term 4.
//  - Top-1 and ties: per step the reference's unique maximum 8 sits at a, a
//    second token b at 8 - m (m >= 0 on the grid), every other logit below;
//    the candidate raises b to 8 + delta (a flip) or is the reference (none).
//    The reference's margin is m exactly; with tie_rel a power of two and
//    max|want| = 8 the tie bound 2 tie_rel 8 is exact, and m is drawn at,
//    just below and just above it: a flip is a tie iff m <= bound (the rule of
//    compare.h), top1 agreement / ties / flips / first argmax difference /
//    verdict are counted here from the construction.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "audit/interop/compare.h"
#include "generators.h"

using namespace oracle;

namespace {

constexpr double kU = 0x1p-53;  // unit roundoff of float64

// A value on the 1/16 grid in [lo, hi] (both multiples of 1/16).
float grid(double lo, double hi) {
  const int a = (int)std::lround(lo * 16), b = (int)std::lround(hi * 16);
  return (float)*rc::gen::inRange(a, b + 1) / 16.0f;
}

float step_ulps(float x, int u) {
  const float dir = *rc::gen::inRange(0, 2) ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  for (int i = 0; i < u; i++) x = std::nextafter(x, dir);
  return x;
}

CompareThresholds lenient() {
  CompareThresholds t;
  t.max_kld = std::numeric_limits<double>::max();
  return t;
}

}  // namespace

TEST_CASE("property: compare counts ULPs, max abs and NMSE of a known perturbation", "[property][compare]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("max_ulp = the largest nextafter count, bit_equal, first_diff, max_abs, nmse", 1000, shapes, [&] {
    const int steps = *rc::gen::inRange(1, 5), vocab = *rc::gen::inRange(1, 65);
    const int max_u = *rc::gen::element(0, 1, 3, 1000);
    std::vector<float> want, got;
    std::vector<uint64_t> step_max(steps, 0);
    std::vector<int> first(steps, -1);
    for (int s = 0; s < steps; s++)
      for (int k = 0; k < vocab; k++) {
        float w = (float)*rc::gen::inRange(16, 4096) / 16.0f * (*rc::gen::inRange(0, 2) ? 1.0f : -1.0f);  // |w| >= 1
        const int u = *rc::gen::inRange(0, max_u + 1);
        want.push_back(w);
        got.push_back(step_ulps(w, u));
        step_max[s] = std::max<uint64_t>(step_max[s], (uint64_t)u);
        if (u > 0 && first[s] < 0) first[s] = k;
      }
    shapes.add("vocab", vocab);
    shapes.add("max ulps", max_u);
    const LogitsComparison c = compare_logit_rows(want, got, steps, vocab, {}, lenient());
    uint64_t all_max = 0;
    int first_bit = -1;
    for (int s = 0; s < steps; s++) {
      const StepDiff& d = c.per_step[s];
      double max_abs = 0.0, num = 0.0, den = 0.0;
      for (int k = 0; k < vocab; k++) {
        const double e = (double)got[s * vocab + k] - (double)want[s * vocab + k];
        max_abs = std::max(max_abs, std::fabs(e));
        num += e * e;
        den += (double)want[s * vocab + k] * want[s * vocab + k];
      }
      RC_ASSERT(d.stats.max_ulp == step_max[s]);
      RC_ASSERT(d.stats.bit_equal == (step_max[s] == 0));
      RC_ASSERT(d.stats.first_diff == first[s]);
      RC_ASSERT(d.stats.max_abs == max_abs);  // one exact subtraction per element (Sterbenz / same binade)
      // two sums of n non-negative terms, each term 2 roundings: relative error <= (2n + 4) u
      RC_ASSERT(std::fabs(d.stats.nmse - num / den) <= (2.0 * vocab + 4.0) * kU * (num / den));
      all_max = std::max(all_max, step_max[s]);
      if (first_bit < 0 && step_max[s] > 0) first_bit = s;
    }
    RC_ASSERT(c.max_ulp == all_max);
    RC_ASSERT(c.first_bit_diff == first_bit);
  });
}

TEST_CASE("property: compare's KLD equals the closed form of a shifted or raised logit", "[property][compare]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("KLD 0 under a constant shift; ln(1 + p_j (e^d - 1)) - p_j d for one raised logit", 1000, shapes,
                      [&] {
    const int vocab = *rc::gen::inRange(2, 65);
    std::vector<float> want(vocab);
    for (float& w : want) w = grid(-8, 8);
    const bool shift = *rc::gen::inRange(0, 3) == 0;
    const int j = *rc::gen::inRange(0, vocab);
    const double d = shift ? grid(-8, 8) : grid(1.0 / 16, 8);
    std::vector<float> got = want;
    if (shift) for (float& g : got) g = (float)(g + d);  // exact: both on the 1/16 grid within 2^8
    else got[j] = (float)(got[j] + d);
    shapes.add("vocab", vocab);
    const LogitsComparison c = compare_logit_rows(want, got, 1, vocab, {}, lenient());
    double m = -1e300, z = 0.0;
    for (float w : want) m = std::max(m, (double)w);
    for (float w : want) z += std::exp((double)w - m);
    const double pj = std::exp((double)want[j] - m) / z;
    const double exact = shift ? 0.0 : std::log1p(pj * std::expm1(d)) - pj * d;
    const double bound = (4.0 + vocab) * kU * (2.0 * (16.0 + std::fabs(d) + std::log((double)vocab)) + exact) +
                         (shift ? 0.0 : 8.0 * kU * (std::log1p(pj * std::expm1(d)) + pj * d));
    RC_ASSERT(std::fabs(c.per_step[0].kld - exact) <= bound);
  });
}

TEST_CASE("property: compare flips the top-1 exactly where the construction puts it, ties per the rule",
          "[property][compare]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("top1 agree / ties / flips / margins / first argmax diff / verdict as constructed", 1000, shapes, [&] {
    const int steps = *rc::gen::inRange(1, 9), vocab = *rc::gen::inRange(2, 33);
    CompareThresholds t = lenient();
    t.tie_rel = *rc::gen::element(1.0 / 64, 1.0 / 128, 1.0 / 256);
    t.max_flips = *rc::gen::inRange(0, 3);
    const double bound = 2.0 * t.tie_rel * 8.0;  // max|want| = 8
    std::vector<float> want, got;
    std::vector<int> a_of(steps), b_of(steps);
    std::vector<double> m_of(steps);
    std::vector<bool> flip(steps);
    for (int s = 0; s < steps; s++) {
      int a = *rc::gen::inRange(0, vocab);
      int b = *rc::gen::inRange(0, vocab - 1);
      if (b >= a) b++;
      const double m = std::max(0.0, *rc::gen::element(0.0, bound - 1.0 / 16, bound, bound + 1.0 / 16, (double)grid(0, 4)));
      if (m == 0.0 && b < a) std::swap(a, b);  // an exact tie: want's argmax is the lower id
      std::vector<float> w(vocab);
      for (int k = 0; k < vocab; k++) w[k] = grid(-8, 8 - m - 1.0 / 16);
      w[a] = 8.0f;
      w[b] = (float)(8.0 - m);
      std::vector<float> g = w;
      const bool f = *rc::gen::inRange(0, 3) != 0;
      if (f) g[b] = 8.0f + grid(1.0 / 16, 1);
      a_of[s] = a;
      b_of[s] = b;
      m_of[s] = m;
      flip[s] = f;
      want.insert(want.end(), w.begin(), w.end());
      got.insert(got.end(), g.begin(), g.end());
    }
    const LogitsComparison c = compare_logit_rows(want, got, steps, vocab, {}, t);
    int agree = 0, ties = 0, flips = 0, first = -1, fail_at = -1;
    for (int s = 0; s < steps; s++) {
      const StepDiff& d = c.per_step[s];
      RC_ASSERT(d.top_want == a_of[s]);
      RC_ASSERT(d.top_got == (flip[s] ? b_of[s] : a_of[s]));
      RC_ASSERT(d.tie_bound == bound);
      if (!flip[s]) {
        agree++;
        RC_ASSERT(!d.tie);
        RC_ASSERT(d.margin == 0.0);
        continue;
      }
      if (first < 0) first = s;
      RC_ASSERT(d.margin == m_of[s]);
      const bool tie = m_of[s] <= bound;
      RC_ASSERT(d.tie == tie);
      ties += tie;
      flips += !tie;
      if (!tie && flips == t.max_flips + 1) fail_at = s;
      shapes.add("margin/bound x16", (long)std::lround(16 * m_of[s] / bound));
    }
    shapes.add("steps", steps);
    RC_ASSERT(c.top1_agree == agree);
    RC_ASSERT(c.ties == ties);
    RC_ASSERT(c.flips == flips);
    RC_ASSERT(c.first_argmax_diff == first);
    RC_ASSERT(c.pass == (flips <= t.max_flips));
    RC_ASSERT(c.first_failure == fail_at);
  });
}
