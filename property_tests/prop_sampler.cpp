// Sampler laws (reference/sampling/sampler.h): top-k keeps exactly k (ties by id),
// top-p keeps the smallest prefix reaching p, min-p threshold, temperature -> 0
// equals greedy, penalties only touch seen tokens, processed probabilities
// renormalise.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "property_tests/generators.h"
#include "numerics/numerics.h"
#include "reference/sampling/sampler.h"

using namespace oracle;
using oracle::prop::gen_finite_logits;

namespace {

const double kU = std::ldexp(1.0, -24);

Candidates run(const std::string& processor, const SamplerConfig& cfg, const std::vector<float>& logits,
               std::span<const int> history = {}) {
  Candidates c = candidates_from_logits(logits);
  make_processor(processor, cfg)->apply(c, SamplingContext{history, {}});
  return c;
}

std::vector<int> ids(const Candidates& c) {
  std::vector<int> out;
  for (const Candidate& k : c.items) out.push_back(k.id);
  return out;
}

// Ids by (value desc, id asc), computed here independently of the sampler.
std::vector<int> ranked(const std::vector<float>& v) {
  std::vector<int> r(v.size());
  for (size_t i = 0; i < v.size(); i++) r[i] = (int)i;
  std::stable_sort(r.begin(), r.end(), [&](int a, int b) { return v[(size_t)a] > v[(size_t)b]; });
  return r;
}

std::vector<double> softmax64(const std::vector<float>& x) {
  double m = *std::max_element(x.begin(), x.end()), s = 0.0;
  std::vector<double> p(x.size());
  for (size_t k = 0; k < x.size(); k++) s += (p[k] = std::exp((double)x[k] - m));
  for (double& v : p) v /= s;
  return p;
}

}  // namespace

TEST_CASE("property: sampler laws", "[property][sampler]") {
  oracle::prop::seed_rapidcheck();
  SamplerConfig cfg = preset_config("llamacpp");

  oracle::prop::check("top-k keeps exactly k, the k largest, ties by lowest id", [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    cfg.top_k = *rc::gen::inRange(1, (int)x.size() + 1);
    std::vector<int> want = ranked(x);
    want.resize((size_t)cfg.top_k);
    std::sort(want.begin(), want.end());
    RC_ASSERT(ids(run("top_k", cfg, x)) == want);
  });

  // Kept = a prefix of the (prob desc, id asc) ranking whose float64 mass
  // reaches p, and without its last member it does not (slack (n+2)u: the
  // sampler sums float32 probabilities sequentially).
  oracle::prop::check("top-p keeps the smallest prefix of the ranking reaching p", [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    cfg.top_p = (float)*rc::gen::inRange(1, 100) / 100.0f;
    std::vector<double> p = softmax64(x);
    std::vector<int> order = ranked(x);
    std::vector<int> kept = ids(run("top_p", cfg, x));
    size_t n = kept.size();
    RC_ASSERT(n >= 1);
    std::vector<int> prefix(order.begin(), order.begin() + (long)n);
    std::sort(prefix.begin(), prefix.end());
    RC_ASSERT(kept == prefix);
    double mass = 0.0, tol = (double)(x.size() + 2) * kU;
    for (size_t r = 0; r + 1 < n; r++) mass += p[(size_t)order[r]];
    RC_ASSERT(mass < cfg.top_p + tol);
    RC_ASSERT(mass + p[(size_t)order[n - 1]] >= cfg.top_p - tol);
  });

  oracle::prop::check("min-p (llamacpp) keeps logit >= max + log(min_p)", [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    cfg.min_p = (float)*rc::gen::inRange(1, 100) / 100.0f;
    double threshold = (double)*std::max_element(x.begin(), x.end()) + std::log((double)cfg.min_p);
    std::set<int> kept;
    for (int id : ids(run("min_p", cfg, x))) kept.insert(id);
    for (size_t k = 0; k < x.size(); k++) {
      if (std::fabs((double)x[k] - threshold) < 1e-5) continue;  // within rounding of log(min_p)
      RC_ASSERT(kept.count((int)k) == ((double)x[k] > threshold ? 1u : 0u));
    }
  });

  oracle::prop::check("temperature -> 0 equals greedy (argmax, ties to the lowest id)", [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    int greedy = num::argmax_lowest(x.data(), (int)x.size());
    SamplerConfig g = preset_config("llamacpp");
    g.temperature = 0.0f;
    RC_ASSERT(sample(build_chain(g), x, SamplingContext{{}, {}}).token == greedy);
    // A tiny positive temperature draws the argmax when it is unique (gap >= 1/4).
    int ties = (int)std::count(x.begin(), x.end(), x[(size_t)greedy]);
    RC_PRE(ties == 1);
    g.temperature = 1e-4f;
    g.seed = *rc::gen::inRange<uint64_t>(0, 1000000);
    rng::RngKey key{g.seed, 0, (uint32_t)*rc::gen::inRange(0, 100)};
    RC_ASSERT(sample(build_chain(g), x, SamplingContext{{}, key}).token == greedy);
  });

  oracle::prop::check("penalties change only the logits of tokens in the history window", [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    std::vector<int> history = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, (int)x.size()));
    cfg.repetition_penalty = 1.3f;
    cfg.frequency_penalty = 0.5f;
    cfg.presence_penalty = 0.25f;
    cfg.penalty_window = -1;
    Candidates c = run("penalties", cfg, x, history);
    std::set<int> seen(history.begin(), history.end());
    for (const Candidate& k : c.items)
      if (!seen.count(k.id)) RC_ASSERT(num::f32_bits(k.logit) == num::f32_bits(x[(size_t)k.id]));
      else RC_ASSERT(k.logit < x[(size_t)k.id]);  // presence > 0: always lowered
  });

  oracle::prop::check("processed probabilities renormalise: sum to 1 within (n+1)u", [] {
    std::vector<float> x = *gen_finite_logits(1, 64);
    SamplerConfig s = *oracle::prop::gen_sampler_config();
    s.temperature = std::max(s.temperature, 0.25f);
    std::vector<int> history = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, (int)x.size()));
    rng::RngKey key{s.seed, 0, 0};
    SampleResult r = sample(build_chain(s), x, SamplingContext{history, key});
    double sum = 0.0;
    for (const Candidate& k : r.processed.items) {
      RC_ASSERT(k.prob >= 0.0f);
      sum += k.prob;
    }
    RC_ASSERT(std::fabs(sum - 1.0) <= (double)(r.processed.items.size() + 1) * kU);
  });
}
