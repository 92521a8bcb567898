// Known-answer tests for every sampler processor on hand-computed
// distributions (expected values are worked out in the comments and checked
// against float64 math here, not taken from the code under test), the two
// engine presets, the selectors, logprobs and the JSON form of the config.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>
#include <rapidcheck/catch.h>

#include "base/errors.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampler.h"

using namespace oracle;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

Candidates run_one(const std::string& name, const SamplerConfig& cfg, std::vector<float> logits,
                   std::vector<int> history = {}) {
  Candidates c = candidates_from_logits(logits);
  SamplingContext ctx{history, {cfg.seed, 0, 0}};
  make_processor(parse_processor(name, "test", "order"), cfg)->apply(c, ctx);
  return c;
}

std::vector<int> ids(const Candidates& c) {
  std::vector<int> out;
  for (const Candidate& k : c.items) out.push_back(k.id);
  return out;
}

std::vector<float> logits_of(const Candidates& c) {
  std::vector<float> out;
  for (const Candidate& k : c.items) out.push_back(k.logit);
  return out;
}

std::string testing_join(const std::vector<float>& v) {
  std::string out;
  for (float x : v) out += (out.empty() ? "" : " ") + std::to_string(x);
  return out;
}

SamplerConfig cfg_for(const std::string& preset) {
  SamplerConfig c;
  c.preset = parse_preset(preset, "test", "preset");
  return c;
}

// softmax in float64 of the given logits, for hand checks
std::vector<double> softmax64(std::vector<double> x) {
  double m = x[0], s = 0.0;
  for (double v : x) m = std::max(m, v);
  for (double& v : x) s += (v = std::exp(v - m));
  for (double& v : x) v /= s;
  return x;
}

void check_probs(Candidates c, const std::vector<double>& want) {
  compute_probs(c);
  REQUIRE(c.items.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    INFO("candidate " << c.items[i].id << " prob " << c.items[i].prob << " want " << want[i]);
    CHECK(c.items[i].prob == Approx(want[i]).epsilon(2e-7));
  }
}

}  // namespace

// ---- top-k --------------------------------------------------------------------------------
TEST_CASE("top-k keeps the k largest logits and renormalises", "[sampler][top_k]") {
  for (const char* preset : {"hf", "llamacpp"}) {
    SamplerConfig cfg = cfg_for(preset);
    cfg.top_k = 2;
    Candidates c = run_one("top_k", cfg, {2, 1, 0, -1});
    CHECK(ids(c) == std::vector<int>{0, 1});
    // renormalised over {2, 1}: e^1/(e^1+1), 1/(e^1+1)
    check_probs(c, {0.7310585786300049, 0.2689414213699951});
  }
}

TEST_CASE("top-k boundary ties: llamacpp keeps exactly k by lowest id, hf keeps all ties", "[sampler][top_k]") {
  SamplerConfig cfg = cfg_for("llamacpp");
  cfg.top_k = 2;
  CHECK(ids(run_one("top_k", cfg, {1, 3, 3, 3, 0})) == std::vector<int>{1, 2});
  cfg.preset = Preset::Hf;
  CHECK(ids(run_one("top_k", cfg, {1, 3, 3, 3, 0})) == std::vector<int>{1, 2, 3});
  cfg.top_k = 0;  // off
  CHECK(ids(run_one("top_k", cfg, {1, 3, 3, 3, 0})).size() == 5);
}

// ---- top-p --------------------------------------------------------------------------------
// probs of [2,1,0,-1] = [0.64391, 0.23688, 0.08714, 0.03206]
TEST_CASE("top-p keeps the smallest prefix reaching p (both presets)", "[sampler][top_p]") {
  for (const char* preset : {"hf", "llamacpp"}) {
    SamplerConfig cfg = cfg_for(preset);
    cfg.top_p = 0.8f;  // 0.64391 < 0.8 <= 0.88080
    CHECK(ids(run_one("top_p", cfg, {2, 1, 0, -1})) == std::vector<int>{0, 1});
    cfg.top_p = 0.9f;  // 0.88080 < 0.9 <= 0.96794
    Candidates c = run_one("top_p", cfg, {2, 1, 0, -1});
    CHECK(ids(c) == std::vector<int>{0, 1, 2});
    check_probs(c, softmax64({2, 1, 0}));
    cfg.top_p = 0.5f;  // the top token alone reaches 0.5
    CHECK(ids(run_one("top_p", cfg, {2, 1, 0, -1})) == std::vector<int>{0});
    cfg.min_keep = 3;
    CHECK(ids(run_one("top_p", cfg, {2, 1, 0, -1})) == std::vector<int>{0, 1, 2});
  }
}

TEST_CASE("top-p ties are ranked by lowest id; exact boundary is inclusive", "[sampler][top_p]") {
  for (const char* preset : {"hf", "llamacpp"}) {
    SamplerConfig cfg = cfg_for(preset);
    cfg.top_p = 0.5f;  // four probs of exactly 0.25: cum 0.25, 0.5 >= 0.5
    CHECK(ids(run_one("top_p", cfg, {0, 0, 0, 0})) == std::vector<int>{0, 1});
    cfg.top_p = 1.0f;  // off
    CHECK(ids(run_one("top_p", cfg, {0, 0, 0, 0})).size() == 4);
  }
}

TEST_CASE("top-p: each preset follows its own engine's float32 rule where the two differ", "[sampler][top_p]") {
  // llama.cpp llama_sampler_top_p_apply: probabilities descending, cum += p in float, keep the
  // prefix up to the first rank where cum >= top_p (and at least min_keep). transformers
  // TopPLogitsWarper: ascending, cumsum, remove where cum <= 1 - top_p, keep the last min_keep.
  // Both keep "the smallest prefix reaching p" in exact arithmetic; their float32 roundings
  // differ (1 - p is rounded, the sums run in opposite orders), and there the presets must not
  // be interchangeable. The probabilities are compute_probs' (both engines' softmax is ours).
  // top_p at the float cumulative sums of the descending probabilities and one step either
  // side: where the two rules can part.
  int differing = 0;
  for (int n = 3; n <= 8; n++)
    for (int trial = 0; trial < 20; trial++) {
      std::vector<float> logits(n);
      for (int i = 0; i < n; i++) logits[i] = (float)((i * 7 + trial * 13 + n * 3) % 17) * 0.25f + 0.01f * i;
      Candidates c = candidates_from_logits(logits);
      compute_probs(c);
      const std::vector<int> desc = order_by_prob(c);  // (prob desc, id asc)
      std::vector<float> ps;
      float run = 0.0f;
      for (int r = 0; r + 1 < n; r++) {
        run += c.items[desc[r]].prob;
        for (float q : {std::nextafter(run, 0.0f), run, std::nextafter(run, 1.0f)})
          if (q > 0.0f && q < 1.0f) ps.push_back(q);
      }
      for (float top_p : ps) {
        std::vector<int> want_llama, want_hf;
        float cum = 0.0f;
        for (int r = 0; r < n; r++) {
          cum += c.items[desc[r]].prob;
          want_llama.push_back(desc[r]);
          if (cum >= top_p) break;
        }
        const float threshold = 1.0f - top_p;
        cum = 0.0f;
        for (int r = n - 1; r >= 0; r--) {  // ascending
          cum += c.items[desc[r]].prob;
          if (!(cum <= threshold) || r == 0) want_hf.push_back(desc[r]);
        }
        std::sort(want_llama.begin(), want_llama.end());
        std::sort(want_hf.begin(), want_hf.end());
        if (want_llama == want_hf) continue;
        differing++;
        INFO("logits " << testing_join(logits) << " top_p " << top_p);
        SamplerConfig hf = cfg_for("hf"), lc = cfg_for("llamacpp");
        hf.top_p = lc.top_p = top_p;
        CHECK(ids(run_one("top_p", hf, logits)) == want_hf);
        CHECK(ids(run_one("top_p", lc, logits)) == want_llama);
      }
    }
  CHECK(differing > 0);
}

// ---- min-p --------------------------------------------------------------------------------
TEST_CASE("min-p drops tokens below min_p * p_max (hf) / max + log(min_p) (llamacpp)", "[sampler][min_p]") {
  for (const char* preset : {"hf", "llamacpp"}) {
    SamplerConfig cfg = cfg_for(preset);
    cfg.min_p = 0.3f;  // ratio to the top: 1, e^-1 = 0.368, e^-2 = 0.135, e^-3
    Candidates c = run_one("min_p", cfg, {2, 1, 0, -1});
    CHECK(ids(c) == std::vector<int>{0, 1});
    check_probs(c, {0.7310585786300049, 0.2689414213699951});
    cfg.min_p = 0.5f;
    CHECK(ids(run_one("min_p", cfg, {2, 1, 0, -1})) == std::vector<int>{0});
    cfg.min_keep = 2;
    CHECK(ids(run_one("min_p", cfg, {2, 1, 0, -1})) == std::vector<int>{0, 1});
    cfg.min_keep = 1;
    cfg.min_p = 0.1f;  // e^-2 = 0.135 >= 0.1 > e^-3 = 0.0498
    CHECK(ids(run_one("min_p", cfg, {-1, 0, 1, 2})) == std::vector<int>{1, 2, 3});
    // id 0 above the threshold but not the maximum stays (every id is tested, not only the top)
    CHECK(ids(run_one("min_p", cfg, {1, 2, 0})) == std::vector<int>{0, 1, 2});
  }
}

// Replay's margins (how far outside the support a removed token lies): hf min-p in probability,
// min_p * p_max - p; llamacpp in logits, max + log(min_p) - logit (killed a surviving mutant).
TEST_CASE("min-p removal margins: hf in probability, llamacpp in logits", "[sampler][min_p]") {
  for (const char* preset : {"hf", "llamacpp"}) {
    SamplerConfig cfg = cfg_for(preset);
    cfg.min_p = 0.5f;
    const std::vector<float> logits{2, 1, 0, -1};
    const Candidates before = candidates_from_logits(logits);
    const RemovalMargin m = make_processor(Processor::MinP, cfg)->removal_margin(before, 2);  // logit 0: removed
    if (std::string(preset) == "hf") {
      Candidates p = before;
      compute_probs(p);
      double pmax = 0.0;
      for (const Candidate& k : p.items) pmax = std::max(pmax, (double)k.prob);
      CHECK(m.in_probability);
      CHECK(m.distance == Approx(0.5 * pmax - (double)p.items[2].prob).epsilon(1e-12));
      CHECK(m.distance > 0.0);
    } else {
      CHECK_FALSE(m.in_probability);
      CHECK(m.distance == Approx(2.0 + std::log(0.5)).epsilon(1e-6));
    }
    // a removed token whose logit is not 0 (-1): the margin is max + ln(min_p) - logit = 2.307 (llamacpp);
    // with logit 0 above, "- logit" and "+ logit" agree (a mutation that survived)
    const RemovalMargin m3 = make_processor(Processor::MinP, cfg)->removal_margin(before, 3);
    if (std::string(preset) == "llamacpp") CHECK(m3.distance == Approx(2.0 + std::log(0.5) + 1.0).epsilon(1e-6));
    else CHECK(m3.distance > m.distance);  // less probable: further past the threshold
  }
}

// ---- temperature ------------------------------------------------------------------------------
TEST_CASE("temperature divides every logit (IEEE division)", "[sampler][temperature]") {
  SamplerConfig cfg;
  cfg.temperature = 2.0f;
  CHECK(logits_of(run_one("temperature", cfg, {2, 1, 0, -1})) == std::vector<float>{1, 0.5f, 0, -0.5f});
  cfg.temperature = 0.5f;
  CHECK(logits_of(run_one("temperature", cfg, {2, 1, 0, -1})) == std::vector<float>{4, 2, 0, -2});
  cfg.temperature = 3.0f;
  volatile float three = 3.0f;
  CHECK(logits_of(run_one("temperature", cfg, {2})) == std::vector<float>{2.0f / three});
  cfg.temperature = 0.0f;  // greedy: left unchanged for the argmax
  CHECK(logits_of(run_one("temperature", cfg, {2, 1})) == std::vector<float>{2, 1});
}

// ---- penalties ---------------------------------------------------------------------------------
TEST_CASE("penalties: repetition divides positive / multiplies non-positive, then freq and presence",
          "[sampler][penalties]") {
  SamplerConfig cfg;
  cfg.repetition_penalty = 2.0f;
  cfg.frequency_penalty = 0.5f;
  cfg.presence_penalty = 0.25f;
  std::vector<int> history = {0, 1, 1, 3, 3, 3};
  // id0 (x1): 2/2 - (0.5 + 0.25) = 0.25; id1 (x2): -1*2 - (1 + 0.25) = -3.25;
  // id2 unseen: 0.5; id3 (x3): 3/2 - (1.5 + 0.25) = -0.25; id4 unseen: 0
  CHECK(logits_of(run_one("penalties", cfg, {2, -1, 0.5f, 3, 0}, history)) ==
        std::vector<float>{0.25f, -3.25f, 0.5f, -0.25f, 0});
  cfg.penalty_window = 2;  // only {3, 3}: id3 = 1.5 - (1 + 0.25) = 0.25
  CHECK(logits_of(run_one("penalties", cfg, {2, -1, 0.5f, 3, 0}, history)) ==
        std::vector<float>{2, -1, 0.5f, 0.25f, 0});
  cfg.penalty_window = 0;  // off
  CHECK(logits_of(run_one("penalties", cfg, {2, -1, 0.5f, 3, 0}, history)) ==
        std::vector<float>{2, -1, 0.5f, 3, 0});
  cfg.penalty_window = -1;
  cfg.frequency_penalty = cfg.presence_penalty = 0.0f;
  CHECK(logits_of(run_one("penalties", cfg, {0, 4, -4}, {0, 1, 2})) == std::vector<float>{0, 2, -8});
}

// ---- logit bias, banned --------------------------------------------------------------------------
TEST_CASE("logit bias adds; banned tokens are removed", "[sampler][bias]") {
  SamplerConfig cfg;
  cfg.logit_bias = {{3, 5.0f}, {0, -kInf}, {1, 0.25f}};
  CHECK(logits_of(run_one("logit_bias", cfg, {2, 1, 0, -1})) == std::vector<float>{-kInf, 1.25f, 0, 4});
  cfg.banned_tokens = {3, 1};
  CHECK(ids(run_one("banned", cfg, {2, 1, 0, -1})) == std::vector<int>{0, 2});
}

TEST_CASE("a -inf bias or a ban is never drawn", "[sampler][bias]") {
  SamplerConfig cfg;
  cfg.logit_bias = {{0, -kInf}};
  cfg.banned_tokens = {1};
  SamplerChain chain = build_chain(cfg);
  std::vector<float> logits = {5, 5, 0, 0};
  std::vector<int> hist;
  for (uint32_t pos = 0; pos < 500; pos++) {
    int t = sample(chain, logits, {hist, {7, 0, pos}}).token;
    REQUIRE((t == 2 || t == 3));
  }
}

// ---- presets: order matters ---------------------------------------------------------------------
static std::vector<std::string> order_names(const std::vector<Processor>& order) {  // as JSON spells them
  std::vector<std::string> names;
  for (Processor p : order) names.push_back(processor_name(p));
  return names;
}

TEST_CASE("preset orders: hf tempers before top-p, llamacpp after", "[sampler][preset]") {
  CHECK(order_names(preset_order(Preset::Hf)) ==
        std::vector<std::string>{"logit_bias", "penalties", "banned", "temperature", "top_k", "top_p", "min_p"});
  CHECK(order_names(preset_order(Preset::LlamaCpp)) ==
        std::vector<std::string>{"logit_bias", "banned", "penalties", "top_k", "top_p", "min_p", "temperature"});
  // T = 2, top_p = 0.6 on [2,1,0,-1].
  // hf: tempered [1, .5, 0, -.5] -> probs [.45505, .27600, ...]: keeps {0, 1};
  //     processed probs = softmax([1, .5]).
  // llamacpp: untempered probs [.64391, ...] reach 0.6 at once: keeps {0}.
  for (const char* preset : {"hf", "llamacpp"}) {
    SamplerConfig cfg = cfg_for(preset);
    cfg.temperature = 2.0f;
    cfg.top_p = 0.6f;
    SampleResult r = sample(build_chain(cfg), std::vector<float>{2, 1, 0, -1}, {{}, {1, 0, 0}});
    if (std::string(preset) == "hf") {
      CHECK(ids(r.processed) == std::vector<int>{0, 1});
      CHECK(r.processed.items[0].prob == Approx(1.0 / (1.0 + std::exp(-0.5))).epsilon(2e-7));
    } else {
      CHECK(ids(r.processed) == std::vector<int>{0});
      CHECK(r.token == 0);
      CHECK(r.processed.items[0].prob == 1.0f);
    }
  }
}

TEST_CASE("preset defaults are the engines' own (docs/sampling.md, Presets)", "[sampler][preset]") {
  // llama.cpp common_params_sampling: T 0.8, top-k 40, top-p 0.95, min-p 0.05, penalty_last_n 64
  const SamplerConfig l = preset_config(Preset::LlamaCpp);
  CHECK(l.temperature == 0.8f);
  CHECK(l.top_k == 40);
  CHECK(l.top_p == 0.95f);
  CHECK(l.min_p == 0.05f);
  CHECK(l.penalty_window == 64);
  CHECK(l.order == preset_order(Preset::LlamaCpp));
  // transformers GenerationConfig with do_sample: T 1, top-k 50, top-p 1, no min-p, whole history
  const SamplerConfig h = preset_config(Preset::Hf);
  CHECK(h.temperature == 1.0f);
  CHECK(h.top_k == 50);
  CHECK(h.top_p == 1.0f);
  CHECK(h.min_p == 0.0f);
  CHECK(h.penalty_window == -1);
  CHECK(h.order == preset_order(Preset::Hf));
}

TEST_CASE("explicit order overrides the preset order", "[sampler][preset]") {
  SamplerConfig cfg = cfg_for("llamacpp");
  cfg.order = {Processor::Temperature, Processor::TopP};
  cfg.temperature = 2.0f;
  cfg.top_p = 0.6f;
  SamplerChain chain = build_chain(cfg);
  CHECK(chain.name() == "chain(temperature,top_p,draw)");
  SampleResult r = sample(chain, std::vector<float>{2, 1, 0, -1}, {{}, {1, 0, 0}});
  CHECK(ids(r.processed) == std::vector<int>{0, 1});
}

// ---- selectors ----------------------------------------------------------------------------------
TEST_CASE("greedy: argmax, ties to the lowest id, NaN never wins", "[sampler][greedy]") {
  SamplerConfig cfg;
  cfg.temperature = 0.0f;
  SamplerChain chain = build_chain(cfg);
  CHECK(sample(chain, std::vector<float>{1, 3, 3, 0}, {}).token == 1);
  CHECK(sample(chain, std::vector<float>{std::nanf(""), 1, 2}, {}).token == 2);
  cfg.repetition_penalty = 4.0f;  // greedy still sees the penalties: 3/4 < 1
  CHECK(sample(build_chain(cfg), std::vector<float>{1, 3, 0}, {std::vector<int>{1}, {}}).token == 0);
}

TEST_CASE("ranks_before is a strict weak ordering (irreflexive, asymmetric, transitive)", "[sampler][greedy]") {
  // std::sort needs it; an `id <=` tie break orders the same ids but is reflexive (undefined behaviour).
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {nan, -inf, -1.5f, -0.0f, 0.0f, 1e-45f, 2.0f, inf};
  const std::vector<int> ids = {0, 1, 7};
  for (float xa : xs)
    for (int ia : ids) {
      INFO("x " << xa << " id " << ia);
      CHECK_FALSE(ranks_before(xa, ia, xa, ia));
      for (float xb : xs)
        for (int ib : ids) {
          const bool ab = ranks_before(xa, ia, xb, ib), ba = ranks_before(xb, ib, xa, ia);
          CHECK_FALSE((ab && ba));
          if (ia != ib) CHECK(ab != ba);  // distinct ids: a total order
          for (float xc : xs)
            for (int ic : ids)
              if (ab && ranks_before(xb, ib, xc, ic)) CHECK(ranks_before(xa, ia, xc, ic));
        }
    }
  CHECK(ranks_before(1.0f, 5, 0.5f, 0));  // larger value first
  CHECK(ranks_before(-inf, 5, nan, 0));   // NaN after every number
  CHECK(ranks_before(0.5f, 2, 0.5f, 3));  // then lower id
  CHECK(ranks_before(nan, 2, nan, 3));
}

TEST_CASE("draw: inverse CDF over (prob desc, id asc) with the Philox uniform", "[sampler][draw]") {
  SamplerConfig cfg;  // neutral: T = 1, nothing filtered
  SamplerChain chain = build_chain(cfg);
  // Two equal candidates: order [id0, id1], cum [0.5, 1]; token = u < 0.5 ? 0 : 1.
  std::vector<float> logits = {0.0f, 0.0f};
  int seen[2] = {0, 0};
  for (uint32_t pos = 0; pos < 200; pos++) {
    rng::RngKey key{99, 5, pos};
    float u = rng::uniform_at(key, 0, rng::kPurposeSample);
    int t = sample(chain, logits, {{}, key}).token;
    REQUIRE(t == (u < 0.5f ? 0 : 1));
    seen[t]++;
  }
  CHECK(seen[0] > 60);
  CHECK(seen[1] > 60);
  // Unequal: logits [-1, 2, 0, 1] -> order by prob: ids 1, 3, 2, 0; float64 CDF.
  std::vector<float> l4 = {-1, 2, 0, 1};
  std::vector<double> p = softmax64({-1, 2, 0, 1});
  const int order[4] = {1, 3, 2, 0};
  for (uint32_t pos = 0; pos < 300; pos++) {
    rng::RngKey key{3, 1, pos};
    double u = rng::uniform_at(key, 0, rng::kPurposeSample), cum = 0.0;
    int want = -1;
    bool near_edge = false;
    for (int id : order) {
      cum += p[id];
      near_edge |= std::fabs(cum - u) < 1e-5;
      if (want < 0 && cum > u) want = id;
    }
    if (near_edge) continue;
    REQUIRE(sample(chain, l4, {{}, key}).token == want);
  }
}

TEST_CASE("draw frequencies follow the processed distribution", "[sampler][draw]") {
  SamplerConfig cfg;
  cfg.top_k = 3;  // {2, 1, 0} renormalised: [0.66524, 0.24473, 0.09003]
  SamplerChain chain = build_chain(cfg);
  std::vector<float> logits = {2, 1, 0, -1};
  std::map<int, int> count;
  const int n = 20000;
  for (int pos = 0; pos < n; pos++) count[sample(chain, logits, {{}, {11, 2, (uint32_t)pos}}).token]++;
  std::vector<double> p = softmax64({2, 1, 0});
  CHECK(count[3] == 0);
  for (int id = 0; id < 3; id++) CHECK(count[id] == Approx(p[id] * n).margin(5 * std::sqrt(n * p[id])));
}

TEST_CASE("the draw depends only on its own key", "[sampler][draw]") {
  SamplerConfig cfg;
  SamplerChain chain = build_chain(cfg);
  std::vector<float> logits(64);
  for (int i = 0; i < 64; i++) logits[i] = (float)((i * 37) % 64) / 16.0f;
  std::vector<int> a, b, c;
  for (uint32_t pos = 0; pos < 100; pos++) {
    a.push_back(sample(chain, logits, {{}, {5, 1, pos}}).token);
    b.push_back(sample(chain, logits, {{}, {5, 1, pos}}).token);
    c.push_back(sample(chain, logits, {{}, {5, 2, pos}}).token);
  }
  CHECK(a == b);
  CHECK(a != c);
}

// ---- logprobs -------------------------------------------------------------------------------------
TEST_CASE("logprobs: raw and processed, rank and top-N", "[logprobs]") {
  SamplerConfig cfg;
  cfg.top_k = 2;
  cfg.temperature = 0.0f;
  std::vector<float> logits = {2, 1, 0, -1};
  SampleResult r = sample(build_chain(cfg), logits, {});
  REQUIRE(r.token == 0);
  LogprobReport rep = logprob_report(1, logits, r.processed, 3);
  // raw: x - 2 - log(1 + e^-1 + e^-2 + e^-3)
  CHECK(rep.raw_logprob == Approx(-1.4401896985611953).epsilon(1e-6));
  CHECK(rep.raw_rank == 2);
  REQUIRE(rep.raw_top.size() == 3);
  CHECK(rep.raw_top[0].id == 0);
  CHECK(rep.raw_top[0].logprob == Approx(-0.44018969856119533).epsilon(1e-6));
  CHECK(rep.raw_top[2].id == 2);
  // processed: log(1 / (1 + e)) over the top-2 survivors
  CHECK(rep.processed_logprob == Approx(-1.3132616875182228).epsilon(1e-6));
  CHECK(rep.processed_rank == 2);
  CHECK(rep.processed_top.size() == 2);
  // a token the chain removed
  LogprobReport gone = logprob_report(3, logits, r.processed, 1);
  CHECK(gone.processed_logprob == -kInf);
  CHECK(gone.processed_rank == 0);
  CHECK(gone.raw_rank == 4);
}

TEST_CASE("logprob ranks break ties by lowest id", "[logprobs]") {
  Candidates c = candidates_from_logits(std::vector<float>{1, 1, 1});
  LogprobReport rep = logprob_report(2, std::vector<float>{1, 1, 1}, c, 3);
  CHECK(rep.raw_rank == 3);
  CHECK(rep.raw_top[0].id == 0);
  CHECK(rep.raw_top[1].id == 1);
  CHECK(rep.raw_logprob == Approx(-std::log(3.0)).epsilon(1e-6));
}

TEST_CASE("LogprobReport JSON round trip is bit-exact", "[logprobs][json]") {
  Candidates c = candidates_from_logits(std::vector<float>{0.1f, -3.3f, 7.77f});
  LogprobReport a = logprob_report(1, std::vector<float>{0.1f, -3.3f, 7.77f}, c, 2);
  LogprobReport b = nlohmann::json(a).get<LogprobReport>();
  CHECK(b.raw_logprob == a.raw_logprob);
  CHECK(b.processed_top[1].logprob == a.processed_top[1].logprob);
  CHECK(nlohmann::json(b).dump() == nlohmann::json(a).dump());
}

// ---- config: validation and JSON ---------------------------------------------------------------------
TEST_CASE("SamplerConfig JSON round trip keeps every field", "[sampler][json]") {
  SamplerConfig a = preset_config(Preset::Hf);
  a.temperature = 0.7f;
  a.top_p = 0.9f;
  a.logit_bias = {{5, -kInf}, {7, 1.5f}};
  a.banned_tokens = {3};
  a.seed = 0xfedcba9876543210ull;
  nlohmann::json j = a;
  SamplerConfig b = j.get<SamplerConfig>();
  CHECK(b.preset == Preset::Hf);
  CHECK(b.order == preset_order(Preset::Hf));
  CHECK(b.temperature == 0.7f);
  CHECK(b.top_p == 0.9f);
  CHECK(b.top_k == 50);
  CHECK(b.logit_bias == a.logit_bias);
  CHECK(b.banned_tokens == a.banned_tokens);
  CHECK(b.seed == a.seed);
  CHECK(nlohmann::json(b) == j);
}

TEST_CASE("range ends of top_p and min_p: 0 and 1 accepted, just outside refused", "[sampler][errors]") {
  for (float v : {0.0f, 1.0f}) {
    SamplerConfig c = cfg_for("hf");
    c.top_p = v;
    CHECK_NOTHROW(validate(c, 10));
    c = cfg_for("hf");
    c.min_p = v;
    CHECK_NOTHROW(validate(c, 10));
  }
  for (float v : {-1e-6f, 1.000001f}) {
    SamplerConfig c = cfg_for("hf");
    c.top_p = v;
    CHECK_THROWS_WITH(validate(c, 10), Catch::Contains("top_p"));
    c = cfg_for("hf");
    c.min_p = v;
    CHECK_THROWS_WITH(validate(c, 10), Catch::Contains("min_p"));
  }
}

TEST_CASE("bad sampler input names the field", "[sampler][errors]") {
  auto field_of = [](auto fn) {
    try {
      fn();
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("<no error>");
  };
  SamplerConfig c;
  c.top_p = 1.5f;
  CHECK(field_of([&] { validate(c, 10); }) == "top_p");
  c = {};
  CHECK(field_of([&] { from_json(nlohmann::json{{"preset", "vllm"}}, c); }) == "preset");
  c = {};
  c.order = {Processor::TopK, Processor::TopK};
  CHECK(field_of([&] { validate(c, 10); }) == "order");
  c = {};
  c.banned_tokens = {10};
  CHECK(field_of([&] { validate(c, 10); }) == "banned_tokens");
  c = {};
  c.repetition_penalty = 0.0f;
  CHECK(field_of([&] { validate(c, 10); }) == "repetition_penalty");
  CHECK(field_of([&] { nlohmann::json::parse(R"({"top_k": "many"})").get<SamplerConfig>(); }) == "top_k");
  for (const char* bias : {R"({"logit_bias": [[1, 2, 3]]})", R"({"logit_bias": [[1.5, 2]]})", R"({"logit_bias": [[1]]})"})
    CHECK(field_of([&] { nlohmann::json::parse(bias).get<SamplerConfig>(); }) == "logit_bias");
  CHECK(field_of([&] { parse_processor("typical", "sampler", "order"); }) == "order");
  c = {};
  c.banned_tokens = {0, 1};
  CHECK(field_of([&] { sample(build_chain(c), std::vector<float>{1, 2}, {}); }) == "banned_tokens");
  c = {};
  c.min_keep = 0;  // min_keep >= 1: a filter may never empty the candidates
  CHECK(field_of([&] { validate(c, 10); }) == "min_keep");
  c.min_keep = 1;
  CHECK(field_of([&] { validate(c, 10); }) == "<no error>");
  // the range of ids is [0, vocab): both ends accepted, one beyond either refused
  for (int id : {0, 9}) {
    c = {};
    c.logit_bias = {{id, 1.0f}};
    c.banned_tokens = {id};
    CHECK(field_of([&] { validate(c, 10); }) == "<no error>");
  }
  for (int id : {-1, 10}) {
    c = {};
    c.logit_bias = {{id, 1.0f}};
    CHECK(field_of([&] { validate(c, 10); }) == "logit_bias");
    c = {};
    c.banned_tokens = {id};
    CHECK(field_of([&] { validate(c, 10); }) == "banned_tokens");
  }
}

// ---- properties (RapidCheck) ---------------------------------------------------------------------
namespace {

// Logits on a quarter grid, so ties are frequent.
std::vector<float> gen_logits() {
  int n = *rc::gen::inRange(1, 64);
  std::vector<int> q = *rc::gen::container<std::vector<int>>((size_t)n, rc::gen::inRange(-40, 41));
  std::vector<float> x;
  for (int v : q) x.push_back((float)v * 0.25f);
  return x;
}

SamplerConfig gen_config() {
  SamplerConfig c = cfg_for(*rc::gen::element<std::string>("hf", "llamacpp"));
  c.top_k = *rc::gen::inRange(0, 10);
  c.top_p = *rc::gen::element(0.3f, 0.9f, 1.0f);
  c.min_p = *rc::gen::element(0.0f, 0.05f, 0.5f);
  c.temperature = *rc::gen::element(0.5f, 1.0f, 2.0f);
  c.min_keep = *rc::gen::inRange(1, 3);
  c.seed = *rc::gen::arbitrary<uint64_t>();
  return c;
}

}  // namespace

TEST_CASE("properties of the processors and the draw", "[sampler][property]") {
  setenv("RC_PARAMS", "seed=20261130", 0);  // seeded unless the caller chose one
  rc::prop("llamacpp top-k keeps exactly the k best by (logit desc, id asc)", [] {
    std::vector<float> x = gen_logits();
    SamplerConfig cfg;
    cfg.top_k = *rc::gen::inRange(1, 70);
    Candidates c = run_one("top_k", cfg, x);
    RC_ASSERT(c.items.size() == std::min((size_t)cfg.top_k, x.size()));
    std::vector<char> kept(x.size(), 0);
    for (const Candidate& k : c.items) kept[k.id] = 1;
    for (size_t a = 0; a < x.size(); a++)
      for (size_t b = 0; b < x.size(); b++)
        if (kept[a] && !kept[b]) RC_ASSERT((x[a] > x[b] || (x[a] == x[b] && a < b)));
  });
  rc::prop("the draw is a pure function of its key and picks a positive-probability survivor", [] {
    std::vector<float> x = gen_logits();
    SamplerConfig cfg = gen_config();
    SamplerChain chain = build_chain(cfg);
    SamplingContext ctx{{}, {cfg.seed, *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>()}};
    SampleResult a = sample(chain, x, ctx);
    SampleResult b = sample(build_chain(cfg), x, ctx);
    RC_ASSERT(a.token == b.token);
    double sum = 0.0;
    for (size_t i = 0; i < a.processed.items.size(); i++) {
      sum += a.processed.items[i].prob;
      if (i > 0) RC_ASSERT(a.processed.items[i - 1].id < a.processed.items[i].id);
    }
    RC_ASSERT(std::fabs(sum - 1.0) < 1e-5);
    RC_ASSERT(a.processed.items[a.processed.selected].prob > 0.0f);
  });
  rc::prop("greedy picks the lowest id among the largest logits", [] {
    std::vector<float> x = gen_logits();
    SamplerConfig cfg = gen_config();
    cfg.temperature = 0.0f;
    int want = 0;
    for (int i = 1; i < (int)x.size(); i++)
      if (x[i] > x[want]) want = i;
    RC_ASSERT(sample(build_chain(cfg), x, {}).token == want);
  });
}
