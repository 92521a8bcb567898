// Per-position chi-square with the real drafters, k = 4 (default CI).
//
// At context position t of llama2.c's greedy run, n seeded speculative steps
// of the real pair (target stories260K; drafters: ModelDrafter(llama2xs) and
// NgramDrafter(3)), Philox draws everywhere, the production speculative_step.
// At every step position j = 0..k (j = k: the bonus), each step that reached j
// emitted y_j from the target's processed p conditioned on its accepted prefix
// (the prefix varies from step to step). The randomised probability integral
// transform U = F(y_j -) + V p(y_j) (F: the CDF in id order, V uniform from a
// test-local generator) is Uniform(0, 1) exactly when that holds, whatever the
// prefix; Pearson's chi-square of U over B = 10 equal bins at alpha = 1e-3,
// one test per position.
// Power (computed here, noncentral chi-square): under an alternative a(y) for
// each step, U's bin b has probability sum_y a(y) |[F(y-), F(y)) & bin b| / p(y);
// averaged over the steps that reached j this gives the noncentrality. Named
// alternatives: the bonus drawn from p_{k-1} (the planted fault
// SPEC_BONUS_FROM_LAST_DRAFT_ROW) at j = k, and 3 points of probability moved
// onto the top token at every j; the test requires power >= 0.99 against the
// first and prints the second.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "chi_square.h"
#include "spec_test_util.h"

using namespace oracle;
using namespace oracle::test;

namespace {

constexpr int kBins = 10;

struct TargetRows {  // the target's processed p after history + a draft prefix (cached)
  const Model& m;
  std::vector<int> history;
  ProcessedDistribution dist;
  KvCache kv;
  std::map<std::vector<int>, std::vector<float>> rows;
  TargetRows(const Model& model, std::vector<int> h, const SamplerConfig& cfg)
      : m(model), history(std::move(h)), dist(cfg), kv(model.config, {}) {
    forward(m, kv, 0, std::span<const int>(history).first(history.size() - 1));
  }
  const std::vector<float>& at(const std::vector<int>& prefix) {
    auto it = rows.find(prefix);
    if (it != rows.end()) return it->second;
    kv.truncate(0, (int)history.size() - 1);
    std::vector<int> run{history.back()}, ext = history;
    run.insert(run.end(), prefix.begin(), prefix.end());
    ext.insert(ext.end(), prefix.begin(), prefix.end());
    return rows.emplace(prefix, dist(forward(m, kv, 0, run), ext)).first->second;
  }
};

// Probability of each PIT bin when y ~ a and the PIT is built from p.
std::vector<double> pit_bins(const std::vector<float>& p, const std::vector<double>& a) {
  std::vector<double> bins(kBins, 0.0);
  double lo = 0.0;
  for (size_t y = 0; y < p.size(); y++) {
    const double w = p[y];
    if (w <= 0.0) continue;
    const double hi = lo + w;
    for (int b = (int)(lo * kBins); b < kBins && b <= (int)(hi * kBins); b++) {
      const double overlap = std::min(hi, (b + 1.0) / kBins) - std::max(lo, (double)b / kBins);
      if (overlap > 0.0) bins[(size_t)b] += a[y] * overlap / w;
    }
    lo = hi;
  }
  return bins;
}

std::vector<double> top_shift(const std::vector<float>& p, double shift) {
  const size_t top = (size_t)(std::max_element(p.begin(), p.end()) - p.begin());
  std::vector<double> a(p.begin(), p.end());
  const double scale = (1.0 - a[top] - shift) / (1.0 - a[top]);
  for (size_t i = 0; i < a.size(); i++) a[i] = i == top ? a[top] + shift : a[i] * std::max(0.0, scale);
  return a;
}

struct Position {
  long n = 0;
  std::vector<long> counts = std::vector<long>(kBins, 0);
  std::vector<double> alt_fault = std::vector<double>(kBins, 0.0), alt_top = std::vector<double>(kBins, 0.0);
};

double power(const std::vector<double>& alt_sum, long n, double alpha) {
  if (n == 0) return 0.0;
  double lambda = 0.0;
  for (double a : alt_sum) lambda += (a / (double)n - 1.0 / kBins) * (a / (double)n - 1.0 / kBins) * kBins;
  return noncentral_chi2_sf(chi2_critical(alpha, kBins - 1), kBins - 1, lambda * (double)n);
}

void check_positions(Drafter& drafter, int t, long n, const char* name) {
  const int k = 4, vocab = 512;
  const double alpha = 1e-3;
  std::vector<int> history = reference_ids();
  history.insert(history.begin(), 1);
  history.resize((size_t)t);
  const SamplerConfig cfg = sampling_config();
  TargetRows target(pair().stories, history, cfg);
  std::vector<Position> pos((size_t)k + 1);
  std::mt19937_64 v_rng(20261201);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (long s = 0; s < n; s++) {
    const rng::RngKey key{(uint64_t)s, 0, (uint32_t)t};
    const Draft d = drafter.propose(history, k, key);
    std::vector<float> p;
    for (size_t i = 0; i <= d.tokens.size(); i++) {
      const auto& row = target.at(std::vector<int>(d.tokens.begin(), d.tokens.begin() + (long)i));
      p.insert(p.end(), row.begin(), row.end());
    }
    const SpecStep step = speculative_step(p, d.q, d.tokens, vocab, key);
    for (size_t j = 0; j < step.tokens.size(); j++) {
      const std::vector<int> prefix(step.tokens.begin(), step.tokens.begin() + (long)j);
      const std::vector<float>& pj = target.at(prefix);
      const int y = step.tokens[j];
      double below = 0.0;
      for (int i = 0; i < y; i++) below += pj[(size_t)i];
      const double u = below + unit(v_rng) * (double)pj[(size_t)y];
      Position& P = pos[j];
      P.n++;
      P.counts[(size_t)std::min(kBins - 1, (int)(u * kBins))]++;
      const std::vector<double> top = pit_bins(pj, top_shift(pj, 0.03));
      for (int b = 0; b < kBins; b++) P.alt_top[(size_t)b] += top[(size_t)b];
      if (j == (size_t)k) {  // the fault's bonus row: p conditioned on one draft fewer
        const std::vector<float>& prev = target.at(std::vector<int>(prefix.begin(), prefix.end() - 1));
        const std::vector<double> f = pit_bins(pj, std::vector<double>(prev.begin(), prev.end()));
        for (int b = 0; b < kBins; b++) P.alt_fault[(size_t)b] += f[(size_t)b];
      }
    }
  }
  for (int j = 0; j <= k; j++) {
    const Position& P = pos[(size_t)j];
    INFO(name << " position t+" << j << ": " << P.n << " steps");
    REQUIRE(P.n >= 200);
    const ChiSquare c = chi_square(P.counts, std::vector<double>(kBins, 1.0 / kBins));
    const double pw_top = power(P.alt_top, P.n, alpha), pw_fault = j == k ? power(P.alt_fault, P.n, alpha) : -1.0;
    std::printf("%s t=%d position %d: %ld steps, X2 %.2f (df %d), p-value %.4f; power: top +3 points %.4f%s\n",
                name, t, j, P.n, c.statistic, kBins - 1, c.p_value, pw_top,
                j == k ? (", bonus from p_{k-1} " + std::to_string(pw_fault)).c_str() : "");
    CHECK(c.p_value > alpha);
    if (j == k) CHECK(pw_fault >= 0.99);
  }
}

}  // namespace

TEST_CASE("chi-square per step position (k = 4, bonus included): model drafter", "[speculative][chisq]") {
  ModelDrafter drafter(pair().xs, sampling_config(), {});
  check_positions(drafter, 62, 12000, "ModelDrafter(llama2xs)");
}

TEST_CASE("chi-square per step position (k = 4, bonus included): n-gram drafter", "[speculative][chisq]") {
  NgramDrafter drafter(3, 512);
  check_positions(drafter, 140, 6000, "NgramDrafter(3)");  // t = 140: in a repeated phrase, the 3-gram draft is the greedy continuation
}
