// Speculative decoding: greedy speculative output equals plain greedy output
// bit for bit (both roles of the real pair stories260K / llama2xs, k = 1..8,
// paged and contiguous caches, and the n-gram drafter); the emitted-token
// distribution of one step, computed exactly over the 2^24-point uniform grid,
// equals the target's processed distribution; a chi-square test over seeded
// runs of the real pair with temperature, top-k, top-p, min-p and a
// repetition penalty active; determinism; metrics; input errors.
//
// Planted faults (docs/testing.md, "Faults"), both caught by
// "exact emitted distribution ..." and "chi-square ...":
//   SPEC_RESAMPLE_FROM_P  residual() returns p instead of max(0, p - q);
//   SPEC_ACCEPT_BY_P      accept_draft() accepts with p(x) instead of min(1, p/q).
// Each test also computes, in a clean build, how far the faulty rule lands
// from p and requires that gap to exceed its tolerance by a wide margin, so
// the tests demonstrably can fail.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "bit_compare.h"
#include "spec_test_util.h"
#include "base/errors.h"
#include "reference/generate/speculative.h"

using namespace oracle;
using namespace oracle::test;

namespace {

// ---- plain decoding: one forward per token, the sampler chain's own selector ----------
std::vector<int> plain_generate(const Model& m, std::vector<int> history, int max_tokens,
                                const SamplerConfig& cfg, bool paged) {
  KvCache kv(m.config, cache(paged));
  const SamplerChain chain = build_chain(cfg);
  std::vector<float> logits = forward(m, kv, 0, history);
  std::vector<int> out;
  while ((int)out.size() < max_tokens && (int)history.size() < m.config.seq_len) {
    const rng::RngKey key{cfg.seed, 0, (uint32_t)history.size()};
    const int y = sample(chain, logits, SamplingContext{history, key}).token;
    out.push_back(y);
    history.push_back(y);
    if (y == 1) break;  // llama2.c stops on BOS
    logits = forward(m, kv, 0, std::span<const int>(&y, 1));
  }
  return out;
}

SpecOptions spec_options(int k, const SamplerConfig& cfg, bool paged, int max_tokens) {
  SpecOptions o;
  o.k = k;
  o.max_tokens = max_tokens;
  o.sampler = cfg;
  o.stop_token_ids = {1};
  o.kv = cache(paged);
  return o;
}

SpecResult run_spec(const Model& target, const Model& draft, int k, const SamplerConfig& cfg, bool paged,
                    int max_tokens) {
  ModelDrafter drafter(draft, cfg, cache(paged));
  return generate_speculative(target, drafter, prompt_ids(), spec_options(k, cfg, paged, max_tokens));
}

}  // namespace

// ---- greedy: bit-for-bit equality ------------------------------------------------------------
TEST_CASE("draw_inverse_cdf picks the first rank whose running sum is strictly above u * total", "[speculative]") {
  // (prob desc, id asc) order; a running sum equal to the target does not pick (docs/sampling.md, Draw)
  CHECK(draw_inverse_cdf(std::vector<float>{0.5f, 0.5f}, 0.5f) == 1);            // 0.5 is not > 0.5
  CHECK(draw_inverse_cdf(std::vector<float>{0.5f, 0.5f}, 0.5f - 0x1p-24f) == 0);  // one grid step below
  CHECK(draw_inverse_cdf(std::vector<float>{0.25f, 0.75f}, 0.75f) == 0);          // rank 0 is id 1: 0.75 not > 0.75
  CHECK(draw_inverse_cdf(std::vector<float>{0.25f, 0.75f}, 0.0f) == 1);           // u = 0: the most likely
  CHECK(draw_inverse_cdf(std::vector<float>{0.0f, 1.0f, 0.0f}, 1.0f - 0x1p-24f) == 1);  // zero mass never drawn
}

TEST_CASE("plain greedy reference reproduces llama2.c's greedy run", "[speculative]") {
  const std::vector<int> ref = reference_ids();
  const std::vector<int> out = plain_generate(pair().stories, prompt_ids(), 80, greedy_config(), false);
  const std::vector<int> expected(ref.begin() + 10, ref.begin() + 90);
  INFO(first_id_mismatch(out, expected));
  REQUIRE(out == expected);
}

TEST_CASE("greedy speculative equals plain greedy: both roles, k = 1..8, paged and contiguous",
          "[speculative]") {
  const int n = 80;
  struct Role { const Model* target; const Model* draft; const char* name; };
  const Role roles[] = {{&pair().stories, &pair().xs, "target stories260K, draft llama2xs"},
                        {&pair().xs, &pair().stories, "target llama2xs, draft stories260K"}};
  for (const Role& role : roles) {
    const std::vector<int> plain = plain_generate(*role.target, prompt_ids(), n, greedy_config(), false);
    for (bool paged : {false, true})
      for (int k = 1; k <= 8; k++) {
        const SpecResult r = run_spec(*role.target, *role.draft, k, greedy_config(), paged, n);
        INFO(role.name << ", k = " << k << (paged ? ", paged" : ", contiguous") << ": "
                       << first_id_mismatch(r.output_ids, plain));
        REQUIRE(r.output_ids == plain);
        REQUIRE(r.metrics.accepted <= r.metrics.drafted);
        REQUIRE(r.metrics.emitted == (long)plain.size());
      }
  }
}

TEST_CASE("greedy speculative equals plain greedy: n-gram drafter, penalties, adaptive k", "[speculative]") {
  SamplerConfig cfg = greedy_config();
  cfg.repetition_penalty = 1.3f;  // history-dependent: each verify row sees its own prefix
  for (const Model* m : {&pair().stories, &pair().xs})
    for (bool paged : {false, true}) {
      const std::vector<int> plain = plain_generate(*m, prompt_ids(), 80, cfg, paged);
      NgramDrafter ngram(3, m->config.vocab_size);
      SpecResult r = generate_speculative(*m, ngram, prompt_ids(), spec_options(4, cfg, paged, 80));
      INFO("n-gram: " << first_id_mismatch(r.output_ids, plain));
      REQUIRE(r.output_ids == plain);
      const Model& other = m == &pair().stories ? pair().xs : pair().stories;
      ModelDrafter drafter(other, cfg, cache(paged));
      SpecOptions o = spec_options(2, cfg, paged, 80);
      o.adaptive_k = true;
      o.k_max = 8;
      r = generate_speculative(*m, drafter, prompt_ids(), o);
      INFO("adaptive k: " << first_id_mismatch(r.output_ids, plain));
      REQUIRE(r.output_ids == plain);
    }
}

// Adaptive k only changes speed, never the output, so it is checked on the counts: drafting with
// the target itself (greedy: every draft accepted), k grows by one per round from 2 to k_max.
TEST_CASE("adaptive k grows to k_max while every draft is accepted", "[speculative]") {
  const SamplerConfig cfg = greedy_config();
  const Model& m = pair().stories;
  ModelDrafter self(m, cfg, cache(false));
  SpecOptions o = spec_options(2, cfg, false, 60);
  o.adaptive_k = true;
  o.k_max = 6;
  const SpecResult r = generate_speculative(m, self, prompt_ids(), o);
  REQUIRE(r.output_ids == plain_generate(m, prompt_ids(), 60, cfg, false));
  REQUIRE(r.metrics.accepted_histogram.size() == 7);
  CHECK(r.metrics.accepted == r.metrics.evaluated);                // nothing rejected
  CHECK(r.metrics.accepted_histogram[3] + r.metrics.accepted_histogram[4] >= 1);  // k went 2 -> 3 -> 4 ...
  CHECK(r.metrics.accepted_histogram[6] >= 1);                     // ... up to k_max
}

// A drafter whose every draft is rejected: k shrinks by one per round down to 1.
struct AlwaysWrongDrafter : Drafter {
  int vocab;
  explicit AlwaysWrongDrafter(int v) : vocab(v) {}
  Draft propose(std::span<const int>, int k, const rng::RngKey&) override {
    Draft d;
    for (int i = 0; i < k; i++) {
      d.tokens.push_back(0);  // <unk>: never stories260K's greedy pick
      d.q.resize(d.q.size() + (size_t)vocab, 0.0f);
      d.q[d.q.size() - (size_t)vocab] = 1.0f;
    }
    return d;
  }
  std::string name() const override { return "always-wrong"; }
};

// 30 greedy tokens with k = 6 and the always-wrong drafter: the output is still plain
// generation's, and nothing is accepted.
static SpecResult always_wrong_run(bool adaptive_k) {
  const SamplerConfig cfg = greedy_config();
  const Model& m = pair().stories;
  AlwaysWrongDrafter wrong(m.config.vocab_size);
  SpecOptions o = spec_options(6, cfg, false, 30);
  o.adaptive_k = adaptive_k;
  o.k_max = 6;
  SpecResult r = generate_speculative(m, wrong, prompt_ids(), o);
  REQUIRE(r.output_ids == plain_generate(m, prompt_ids(), 30, cfg, false));
  REQUIRE(r.metrics.accepted == 0);
  return r;
}

TEST_CASE("adaptive k shrinks by one per rejected round down to 1", "[speculative]") {
  const SpecResult r = always_wrong_run(true);
  long want = 0;  // k = 6, 5, 4, 3, 2, then 1; round r (r tokens out) drafts at most 30 - r - 1
  for (long round = 0; round < r.metrics.rounds; round++) want += std::min(std::max(6 - round, 1L), 30 - round - 1);
  CHECK(r.metrics.drafted == want);
}

// Without adaptive_k, k is fixed: the always-wrong drafter drafts min(k, room - 1) every round
// (k never shrinks), so the count is Σ min(6, 30 - r - 1) over the rounds (30 tokens, one per round).
TEST_CASE("without adaptive k every round drafts k (or room - 1)", "[speculative]") {
  const SpecResult r = always_wrong_run(false);
  REQUIRE(r.metrics.rounds == 30);
  long want = 0;
  for (long round = 0; round < r.metrics.rounds; round++) want += std::min(6L, 30 - round - 1);
  CHECK(r.metrics.drafted == want);
}

// The last round drafts room - 1 tokens (the target adds one more): drafting with the target
// itself (every draft accepted), k = 6 and 10 tokens: 6 drafted + 1 in round one (7 out), then
// room 3, so 2 drafted + 1; 8 drafted in all, never more than the room.
TEST_CASE("the last round drafts only room - 1 tokens", "[speculative]") {
  const SamplerConfig cfg = greedy_config();
  const Model& m = pair().stories;
  ModelDrafter self(m, cfg, cache(false));
  SpecOptions o = spec_options(6, cfg, false, 10);
  o.k_max = 6;
  const SpecResult r = generate_speculative(m, self, prompt_ids(), o);
  REQUIRE(r.output_ids == plain_generate(m, prompt_ids(), 10, cfg, false));
  CHECK(r.metrics.rounds == 2);
  CHECK(r.metrics.drafted == 8);
  CHECK(r.metrics.accepted == 8);
}

// Up to the context's end: the room is the context left (not max_tokens), so no round drafts past
// seq_len and the output is plain decoding's, to the last position (finish "length").
TEST_CASE("speculative decoding stops drafting at the context's end", "[speculative]") {
  const SamplerConfig cfg = greedy_config();
  const Model& m = pair().stories;
  // A prompt 11 positions short of seq_len (plain decoding's own tokens, BOS-free), so the
  // context binds long before max_tokens.
  const std::vector<int> text = plain_generate(m, prompt_ids(), 300, cfg, false);
  std::vector<int> prompt = prompt_ids();
  for (size_t i = 0; (int)prompt.size() < m.config.seq_len - 11; i++)
    if (text[i % text.size()] != 1) prompt.push_back(text[i % text.size()]);
  ModelDrafter self(m, cfg, cache(false));
  SpecOptions o = spec_options(6, cfg, false, 1 << 20);
  o.k_max = 6;
  const SpecResult r = generate_speculative(m, self, prompt, o);
  const std::vector<int> plain = plain_generate(m, prompt, 1 << 20, cfg, false);
  REQUIRE(plain.size() == 11);
  CHECK(r.output_ids == plain);
  CHECK(r.finish_reason == "length");
}

// The greedy target distribution is one-hot at argmax_lowest of the processed logits, also when
// that is the first candidate (index 0 of the alive list) and when it ties.
TEST_CASE("greedy ProcessedDistribution is one-hot at the lowest-id maximum", "[speculative]") {
  const ProcessedDistribution dist(greedy_config());
  const std::vector<int> history;
  const std::vector<std::vector<float>> cases = {{5, 1, 2}, {1, 5, 2}, {1, 2, 5}, {3, 3, 1}, {1, 4, 4}};
  const std::vector<int> want = {0, 1, 2, 0, 1};
  for (size_t i = 0; i < cases.size(); i++) {
    const std::vector<float> out = dist(cases[i], history);
    REQUIRE(out.size() == 3);
    for (int id = 0; id < 3; id++) CHECK(out[(size_t)id] == (id == want[i] ? 1.0f : 0.0f));
  }
}

// A stale draft cache would only lower acceptance (the output stays exact), so
// the drafter's rollback is checked directly: after rounds on other histories
// its drafts and q rows equal a fresh drafter's, bit for bit.
TEST_CASE("model drafter rollback: drafts after earlier rounds equal a fresh drafter's", "[speculative]") {
  std::vector<int> ids = reference_ids();
  ids.insert(ids.begin(), 1);
  const std::vector<int> h1(ids.begin(), ids.begin() + 20);
  std::vector<int> h2(ids.begin(), ids.begin() + 18);  // diverges from h1 at position 18
  h2.insert(h2.end(), {5, 6, 7});
  const std::vector<int> h3(ids.begin(), ids.begin() + 31);
  for (bool paged : {false, true}) {
    const SamplerConfig cfg = sampling_config(9);
    ModelDrafter reused(pair().xs, cfg, cache(paged));
    for (const std::vector<int>* h : std::vector<const std::vector<int>*>{&h1, &h2, &h3, &h1}) {
      const rng::RngKey key{cfg.seed, 0, (uint32_t)h->size()};
      const Draft a = reused.propose(*h, 5, key);
      ModelDrafter fresh(pair().xs, cfg, cache(paged));
      const Draft b = fresh.propose(*h, 5, key);
      INFO((paged ? "paged" : "contiguous") << ", history " << h->size() << ": "
                                            << first_bit_mismatch(a.q, b.q));
      REQUIRE(a.tokens == b.tokens);
      REQUIRE(first_bit_mismatch(a.q, b.q).empty());
    }
  }
}

// Each draft is the inverse-CDF draw of its own q row with the uniform keyed
// (seed, seq, t + i, draw 0, SpecDraft) (speculative.h), recomputed here.
TEST_CASE("model drafter: draft i is draw_inverse_cdf(q_i, uniform(t + i, draw 0, SpecDraft))", "[speculative]") {
  std::vector<int> ids = reference_ids();
  ids.insert(ids.begin(), 1);
  const std::vector<int> h(ids.begin(), ids.begin() + 12);
  const SamplerConfig cfg = sampling_config(5);
  ModelDrafter drafter(pair().xs, cfg, cache(false));
  const rng::RngKey key{cfg.seed, 0, (uint32_t)h.size()};
  const Draft d = drafter.propose(h, 6, key);
  const size_t v = (size_t)pair().xs.config.vocab_size;
  REQUIRE(d.tokens.size() == 6);
  for (size_t i = 0; i < d.tokens.size(); i++) {
    rng::RngKey k = key;
    k.position = key.position + (uint32_t)i;
    const std::span<const float> q(d.q.data() + i * v, v);
    CHECK(d.tokens[i] == draw_inverse_cdf(q, rng::uniform_at(k, 0, rng::kPurposeSpecDraft)));
  }
}

// ---- sampling: determinism and the bonus draw ---------------------------------------------------
TEST_CASE("sampled speculative output is replayable: same seed, cache kind and thread count agree",
          "[speculative]") {
  const SamplerConfig cfg = sampling_config(42);
  const SpecResult a = run_spec(pair().stories, pair().xs, 4, cfg, false, 60);
  const SpecResult b = run_spec(pair().stories, pair().xs, 4, cfg, true, 60);
  ForwardOptions two_threads;
  two_threads.threads = 2;
  ModelDrafter drafter(pair().xs, cfg, cache(false), two_threads);
  SpecOptions o = spec_options(4, cfg, false, 60);
  o.forward.threads = 2;
  const SpecResult c = generate_speculative(pair().stories, drafter, prompt_ids(), o);
  INFO(first_id_mismatch(a.output_ids, b.output_ids) << " / " << first_id_mismatch(a.output_ids, c.output_ids));
  REQUIRE(a.output_ids == b.output_ids);
  REQUIRE(a.output_ids == c.output_ids);
  REQUIRE(a.metrics.accepted == b.metrics.accepted);
  const SpecResult d = run_spec(pair().stories, pair().xs, 4, sampling_config(43), false, 60);
  REQUIRE(d.output_ids != a.output_ids);  // the seed matters
}

TEST_CASE("with no drafts the step is plain sampling draw for draw", "[speculative]") {
  const Model& m = pair().stories;
  std::vector<int> history = reference_ids();
  history.insert(history.begin(), 1);
  KvCache kv(m.config, {});
  ForwardOptions fo;
  fo.all_logits = true;
  const std::vector<float> logits = forward(m, kv, 0, history, fo);  // (n, vocab)
  const size_t v = (size_t)m.config.vocab_size;
  for (uint64_t seed : {0ull, 7ull, 123456789ull}) {
    const SamplerConfig cfg = sampling_config(seed);
    const SamplerChain chain = build_chain(cfg);
    const ProcessedDistribution dist(cfg);
    for (size_t t = 1; t < history.size(); t += 7) {
      const std::span<const float> row = std::span<const float>(logits).subspan((t - 1) * v, v);
      const rng::RngKey key{seed, 3, (uint32_t)t};
      const std::span<const int> prefix(history.data(), t);
      const int plain = sample(chain, row, SamplingContext{prefix, key}).token;
      const SpecStep s = speculative_step(dist(row, prefix), {}, {}, (int)v, key);
      INFO("seed " << seed << ", position " << t);
      REQUIRE(s.tokens == std::vector<int>{plain});
    }
  }
}

// ---- metrics, drafters, errors -----------------------------------------------------------------
TEST_CASE("metrics: expected tokens per pass and the reported counts", "[speculative]") {
  REQUIRE(SpecMetrics::expected_tokens_per_pass(0.0, 4) == 1.0);
  REQUIRE(SpecMetrics::expected_tokens_per_pass(1.0, 4) == 5.0);
  REQUIRE(SpecMetrics::expected_tokens_per_pass(0.5, 2) == Approx(1.75));  // 1 + .5 + .25
  const SpecResult r = run_spec(pair().stories, pair().xs, 4, sampling_config(5), false, 100);
  long rounds = 0, accepted = 0;
  for (size_t a = 0; a < r.metrics.accepted_histogram.size(); a++) {
    rounds += r.metrics.accepted_histogram[a];
    accepted += (long)a * r.metrics.accepted_histogram[a];
  }
  REQUIRE(rounds == r.metrics.rounds);
  REQUIRE(accepted == r.metrics.accepted);
  REQUIRE(r.metrics.emitted == (long)r.output_ids.size());
  REQUIRE(r.metrics.draft_passes >= r.metrics.rounds);
  REQUIRE(r.metrics.accepted <= r.metrics.evaluated);
  REQUIRE(r.metrics.evaluated <= r.metrics.drafted);
  std::printf("stories260K <- llama2xs, k 4, sampled: alpha %.3f, %.3f tokens/pass (iid model %.3f)\n",
              r.metrics.acceptance_rate(), r.metrics.tokens_per_pass(),
              SpecMetrics::expected_tokens_per_pass(r.metrics.acceptance_rate(), 4));
}

TEST_CASE("n-gram drafter proposes the continuation of the latest earlier match", "[speculative]") {
  NgramDrafter d(2, 10);
  const std::vector<int> h{5, 6, 7, 8, 5, 6, 9, 5, 6};
  const Draft a = d.propose(h, 3, {});
  REQUIRE(a.tokens == std::vector<int>{9, 5, 6});  // latest "5 6" is at 4, followed by 9 5 6
  REQUIRE(a.q.size() == 30);
  REQUIRE(a.q[9] == 1.0f);
  REQUIRE(a.q[10 + 5] == 1.0f);
  REQUIRE(d.propose(std::vector<int>{1, 2, 3}, 3, {}).tokens.empty());  // no earlier match
  REQUIRE(d.propose(std::vector<int>{4, 1, 2, 4}, 5, {}).tokens == std::vector<int>{1, 2, 4});  // unigram fallback
  REQUIRE(d.propose(std::vector<int>{7}, 3, {}).tokens.empty());      // one token: no n-gram, no earlier match
  REQUIRE(d.propose(std::vector<int>{7, 7}, 3, {}).tokens == std::vector<int>{7});
}

TEST_CASE("bad speculative options raise InputError naming the field", "[speculative]") {
  NgramDrafter d(2, pair().stories.config.vocab_size);
  SpecOptions o = spec_options(0, greedy_config(), false, 10);
  REQUIRE_THROWS_WITH(generate_speculative(pair().stories, d, prompt_ids(), o), Catch::Contains("k"));
  o.k = 2;
  REQUIRE_THROWS_WITH(generate_speculative(pair().stories, d, std::vector<int>{}, o), Catch::Contains("prompt"));
  NgramDrafter wrong_vocab(2, 32000);
  const std::vector<int> repeating{1, 5, 6, 5, 6};
  REQUIRE_THROWS_WITH(generate_speculative(pair().stories, wrong_vocab, repeating, o),
                      Catch::Contains("vocab_size"));
  // the ends of each range are accepted, one beyond is refused
  const int v = pair().stories.config.vocab_size;
  o.max_tokens = 1;
  CHECK(generate_speculative(pair().stories, d, std::vector<int>{1, 0, v - 1}, o).output_ids.size() == 1);
  o.max_tokens = 0;
  REQUIRE_THROWS_WITH(generate_speculative(pair().stories, d, prompt_ids(), o), Catch::Contains("max_tokens"));
  o.max_tokens = 10;
  for (int bad : {-1, v})
    REQUIRE_THROWS_WITH(generate_speculative(pair().stories, d, std::vector<int>{1, bad}, o), Catch::Contains("prompt"));
}
