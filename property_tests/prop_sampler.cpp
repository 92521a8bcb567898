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
  make_processor(parse_processor(processor, "test", "order"), cfg)->apply(c, SamplingContext{history, {}});
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
  oracle::prop::Shapes shapes;
  SamplerConfig cfg = preset_config(Preset::LlamaCpp);

  oracle::prop::check("top-k keeps exactly k, the k largest, ties by lowest id", 2000, shapes, [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    shapes.add("n", (long)x.size());
    cfg.top_k = *rc::gen::inRange(1, (int)x.size() + 1);
    std::vector<int> want = ranked(x);
    want.resize((size_t)cfg.top_k);
    std::sort(want.begin(), want.end());
    RC_ASSERT(ids(run("top_k", cfg, x)) == want);
  });

  // Kept = a prefix of the (prob desc, id asc) ranking whose float64 mass
  // reaches p, and without its last member it does not (slack (n+2)u: the
  // sampler sums float32 probabilities sequentially).
  oracle::prop::check("top-p keeps the smallest prefix of the ranking reaching p", 2000, shapes, [&] {
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

  oracle::prop::check("min-p (llamacpp) keeps logit >= max + log(min_p)", 2000, shapes, [&] {
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

  oracle::prop::check("temperature -> 0 equals greedy (argmax, ties to the lowest id)", 2000, shapes, [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    int greedy = 0;  // independent of num::argmax_lowest: first index of the maximum
    for (size_t k = 1; k < x.size(); k++)
      if (x[k] > x[(size_t)greedy]) greedy = (int)k;
    SamplerConfig g = preset_config(Preset::LlamaCpp);
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

  // The exact formula (llama.cpp llama_sampler_penalties), in float32 here:
  // for a token seen c > 0 times in the last `window` history tokens,
  //   x' = (x <= 0 ? x * rep : x / rep) - (c * freq + presence); unseen tokens keep x.
  oracle::prop::check("penalties: exact formula on every token (counts in the window), unseen untouched", 2000, shapes, [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    const int n = (int)x.size();
    const int len = *rc::gen::inRange(0, 3 * n + 1);
    std::vector<int> history = *rc::gen::container<std::vector<int>>((size_t)len, rc::gen::inRange(0, n));
    cfg.repetition_penalty = *rc::gen::element(1.0f, 1.1f, 1.3f, 2.0f);
    cfg.frequency_penalty = *rc::gen::element(0.0f, 0.5f, 0.75f);
    cfg.presence_penalty = *rc::gen::element(0.0f, 0.25f, 1.0f);
    cfg.penalty_window = *rc::gen::element(-1, 1, 4, 16, 64);
    shapes.add("history", len);
    Candidates c = run("penalties", cfg, x, history);
    const size_t first = cfg.penalty_window < 0 || (size_t)cfg.penalty_window >= history.size()
                             ? 0 : history.size() - (size_t)cfg.penalty_window;
    RC_ASSERT(c.items.size() == x.size());
    for (const Candidate& k : c.items) {
      const int count = (int)std::count(history.begin() + (long)first, history.end(), k.id);
      float want = x[(size_t)k.id];
      if (count > 0) {
        const float r = want <= 0.0f ? want * cfg.repetition_penalty : want / cfg.repetition_penalty;
        want = r - ((float)count * cfg.frequency_penalty + cfg.presence_penalty);  // float32, no contraction
      }
      RC_ASSERT(num::f32_bits(k.logit) == num::f32_bits(want));
    }
  });

  // Exact boundaries: n = 2^m equal logits give probabilities exactly 2^-m, so
  // the top-p prefix reaching p = j 2^-m (cumulative sums exact) is j tokens.
  oracle::prop::check("top-p boundary: a prefix reaching p exactly is the kept set (llamacpp, hf)", 1000, shapes, [&] {
    const int m = *rc::gen::inRange(1, 6), n = 1 << m, j = *rc::gen::inRange(1, n);
    SamplerConfig s = preset_config(*rc::gen::element(0, 1) ? Preset::Hf : Preset::LlamaCpp);
    s.top_p = (float)j / (float)n;
    s.min_keep = 1;
    const float v = (float)*rc::gen::inRange(-8, 9);
    std::vector<float> x((size_t)n, v);
    std::vector<int> kept = ids(run("top_p", s, x));
    std::vector<int> want;
    for (int i = 0; i < j; i++) want.push_back(i);  // ties rank by id
    // llamacpp: the first prefix with cum >= p; hf: drops tail ranks while cum <= 1 - p. Both: j ids.
    RC_ASSERT(kept == want);
  });

  // llamacpp min-p keeps logit >= max + log(min_p); with min_p = 1 the threshold
  // is the maximum itself (log_canonical(1) = 0), so every tied maximum stays.
  oracle::prop::check("min-p boundary: min_p = 1 keeps every logit equal to the maximum", 1000, shapes, [&] {
    std::vector<float> x = *gen_finite_logits(1, 40);
    const float mx = *std::max_element(x.begin(), x.end());
    for (float& v : x)
      if (*rc::gen::inRange(0, 3) == 0) v = mx;
    RC_ASSERT(num::log_canonical(1.0f) == 0.0f);
    SamplerConfig s = preset_config(Preset::LlamaCpp);
    s.min_p = 1.0f;
    std::vector<int> want;
    for (size_t k = 0; k < x.size(); k++)
      if (x[k] == mx) want.push_back((int)k);
    RC_ASSERT(ids(run("min_p", s, x)) == want);
  });

  oracle::prop::check("processed probabilities renormalise: sum to 1 within (n+1)u", 2000, shapes, [&] {
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

// The probabilities every selector and report reads (the SOFTMAX_CANONICAL_NO_MAX
// fault's catching case: compute_probs is where the sampler plants it).
TEST_CASE("property: compute_probs", "[property][sampler][compute_probs]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("compute_probs is softmax_canonical bit for bit: stable for ±1e30 and -inf masks", 2000,
                      shapes, [&] {
    std::vector<float> x = *oracle::prop::gen_logits(64);
    Candidates c = candidates_from_logits(x);
    compute_probs(c);
    std::vector<float> want = x;
    num::softmax_canonical(want.data(), (int)want.size());
    for (size_t i = 0; i < x.size(); i++) {
      RC_ASSERT(c.items[i].prob >= 0.0f && c.items[i].prob <= 1.0f);  // false for NaN
      RC_ASSERT(num::f32_bits(c.items[i].prob) == num::f32_bits(want[i]));
    }
  });
}

// Hand-computed results (known answers beside the laws above).
TEST_CASE("sampler known answers", "[property][sampler]") {
  SamplerConfig cfg = preset_config(Preset::LlamaCpp);
  // four equal logits: probabilities exactly 1/4; top_p 0.5 is reached after two.
  cfg.top_p = 0.5f;
  CHECK(ids(run("top_p", cfg, {1.0f, 1.0f, 1.0f, 1.0f})) == std::vector<int>{0, 1});
  // [2, 0, 0]: p = e^2/(e^2+2) = 0.787; top_p 0.75 keeps only id 0, 0.8 keeps 0 and 1.
  cfg.top_p = 0.75f;
  CHECK(ids(run("top_p", cfg, {2.0f, 0.0f, 0.0f})) == std::vector<int>{0});
  cfg.top_p = 0.8f;
  CHECK(ids(run("top_p", cfg, {2.0f, 0.0f, 0.0f})) == std::vector<int>{0, 1});
  // min_p 1: the tied maxima stay.
  cfg.min_p = 1.0f;
  CHECK(ids(run("min_p", cfg, {3.0f, 1.0f, 3.0f})) == std::vector<int>{0, 2});
  // min_p 0.5: keep logit >= 3 + ln 0.5 = 2.3069: {3, 2.5} stay, 2.0 goes.
  cfg.min_p = 0.5f;
  CHECK(ids(run("min_p", cfg, {3.0f, 2.0f, 2.5f})) == std::vector<int>{0, 2});
  // penalties: rep 2, freq 0.5, presence 0.25; history [1, 1, 2]:
  //   id 0 unseen: 3; id 1 (2 times): 4/2 - (2*0.5 + 0.25) = 0.75; id 2 (once): -1*2 - 0.75 = -2.75.
  SamplerConfig p = preset_config(Preset::LlamaCpp);
  p.repetition_penalty = 2.0f, p.frequency_penalty = 0.5f, p.presence_penalty = 0.25f, p.penalty_window = -1;
  const std::vector<int> history{1, 1, 2};
  Candidates c = run("penalties", p, {3.0f, 4.0f, -1.0f}, history);
  REQUIRE(c.items.size() == 3);
  CHECK(c.items[0].logit == 3.0f);
  CHECK(c.items[1].logit == 0.75f);
  CHECK(c.items[2].logit == -2.75f);
  // top-k 2 of [1, 3, 3, 2]: ids 1 and 2 (ties by lowest id after the larger value).
  SamplerConfig k = preset_config(Preset::LlamaCpp);
  k.top_k = 2;
  CHECK(ids(run("top_k", k, {1.0f, 3.0f, 3.0f, 2.0f})) == std::vector<int>{1, 2});
}
