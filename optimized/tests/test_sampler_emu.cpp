// The device sampler chain (optimized::DeviceSampler over kernels/sampler_edit,
// sampler_filter, sampler, softmax, argmax, logprobs) on the emulated kernels
// against the reference chain: sample() + logprob_report(), tolerance 0.
// One list of cases: both presets' orders, custom orders, greedy and sampled,
// bias / bans / penalties, tied logits, masked ids, min_keep, the error rows.
// Each case compares the token, the processed candidates (ids, logit and prob
// bits) and the raw/processed logprob reports (values, ranks, top lists).
#include <catch2/catch.hpp>

#include <cstdio>
#include <random>

#include "kernels/tests/kernel_test_support.h"
#include "optimized/device_sampler.h"
#include "base/errors.h"
#include "reference/generate/speculative.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampler.h"

using namespace oracle;
using oracle::kernels::test::count_bit_mismatches;
using oracle::kernels::test::Dev;
using oracle::kernels::test::Floats;
using oracle::kernels::test::uniform;

namespace {

enum class Logits { Random, Tied, Masked };

struct ChainCase {
  std::string label;
  SamplerConfig config;
  int vocab, rows;
  Logits kind;
  uint32_t seed;
};

// Logits of one row: random, quantized to 1/4 (many ties), or with every 4th id -inf.
Floats row_logits(std::mt19937& rng, int vocab, Logits kind) {
  Floats x((size_t)vocab);
  for (float& v : x) v = uniform(rng, 5.0f);
  if (kind == Logits::Tied)
    for (float& v : x) v = (float)(int)(v * 4.0f) / 4.0f;
  if (kind == Logits::Masked)
    for (int i = 1; i < vocab; i += 4) x[(size_t)i] = -num::inf_f32();
  return x;
}

// A history of 20 tokens drawn from a few ids (repeats), the first one unique.
std::vector<int> history(std::mt19937& rng, int vocab) {
  std::vector<int> h = {vocab - 1};
  for (int i = 0; i < 19; i++) h.push_back((int)(rng() % 6) * 3 % vocab);
  return h;
}

bool same_report(const TokenLogprob& a, const TokenLogprob& b) {
  return a.id == b.id && num::f32_bits(a.logprob) == num::f32_bits(b.logprob);
}

// Each CHECKs its comparisons and returns whether all held (a failing case stops
// the run, so a broken kernel fails a few dozen assertions, not thousands).
bool same_tops(const std::vector<TokenLogprob>& want, const std::vector<TokenLogprob>& got) {
  bool ok = want.size() == got.size();
  for (size_t i = 0; ok && i < want.size(); i++) ok = same_report(want[i], got[i]);
  if (!ok)
    for (size_t i = 0; i < want.size() && i < got.size(); i++)
      std::printf("  top[%zu]: want id %d lp 0x%08x got id %d lp 0x%08x\n", i, want[i].id,
                  num::f32_bits(want[i].logprob), got[i].id, num::f32_bits(got[i].logprob));
  return ok;
}

bool check_report(const LogprobReport& want, const LogprobReport& got) {
  bool ok = true;
  auto check = [&ok](bool c) { CHECK(c); ok = ok && c; };
  check(got.token == want.token);
  check(num::f32_bits(got.raw_logprob) == num::f32_bits(want.raw_logprob));
  check(got.raw_rank == want.raw_rank);
  check(num::f32_bits(got.processed_logprob) == num::f32_bits(want.processed_logprob));
  check(got.processed_rank == want.processed_rank);
  check(same_tops(want.raw_top, got.raw_top));
  check(same_tops(want.processed_top, got.processed_top));
  return ok;
}

bool check_candidates(const Candidates& want, const Candidates& got) {
  std::vector<int> wid, gid;
  Floats wl, gl, wp, gp;
  for (const Candidate& c : want.items) wid.push_back(c.id), wl.push_back(c.logit), wp.push_back(c.prob);
  for (const Candidate& c : got.items) gid.push_back(c.id), gl.push_back(c.logit), gp.push_back(c.prob);
  const bool ids = gid == wid, logits = count_bit_mismatches("processed logits", wl, gl) == 0,
             probs = count_bit_mismatches("processed probs", wp, gp) == 0;
  CHECK(ids);
  CHECK(logits);
  CHECK(probs);
  return ids && logits && probs;
}

// Runs one case: every row on the device at once, each row through the reference alone.
// Adds the rows compared to *rows (an error row counts when both sides refuse it);
// false when anything differed.
bool run_case(const ChainCase& c, int* rows) {
  std::mt19937 rng(c.seed);
  Floats logits;
  std::vector<std::vector<int>> hist;
  std::vector<SamplingContext> ctx;
  for (int r = 0; r < c.rows; r++) {
    Floats x = row_logits(rng, c.vocab, c.kind);
    logits.insert(logits.end(), x.begin(), x.end());
    hist.push_back(history(rng, c.vocab));
  }
  for (int r = 0; r < c.rows; r++)
    ctx.push_back({hist[(size_t)r], {c.config.seed, (uint32_t)(r * 7 + 1), (uint32_t)(hist[(size_t)r].size())}});
  validate(c.config, c.vocab);
  const SamplerChain chain = build_chain(c.config);
  optimized::DeviceSampler dev(c.config, c.vocab);
  Dev<float> dl(logits);
  const int top_n = 5;
  std::vector<SampleResult> want;
  bool want_error = false;
  for (int r = 0; r < c.rows; r++) {
    try {
      want.push_back(sample(chain, std::span<const float>(&logits[(size_t)r * c.vocab], (size_t)c.vocab), ctx[(size_t)r]));
    } catch (const InputError&) {
      want_error = true;
    }
  }
  if (want_error) {
    bool threw = false;
    try {
      dev.sample(dl.get(), ctx, top_n);
    } catch (const InputError&) {
      threw = true;
    }
    CHECK(threw);
    *rows += 1;
    return threw;
  }
  const std::vector<optimized::DeviceSample> got = dev.sample(dl.get(), ctx, top_n);
  REQUIRE(got.size() == (size_t)c.rows);
  bool ok = true;
  for (int r = 0; r < c.rows; r++) {
    INFO("row " << r);
    const std::span<const float> raw(&logits[(size_t)r * c.vocab], (size_t)c.vocab);
    CHECK(got[(size_t)r].token == want[(size_t)r].token);
    ok = got[(size_t)r].token == want[(size_t)r].token && ok;
    ok = check_candidates(want[(size_t)r].processed, dev.processed(r)) && ok;
    ok = check_report(logprob_report(want[(size_t)r].token, raw, want[(size_t)r].processed, top_n),
                      got[(size_t)r].logprobs) && ok;
  }
  *rows += c.rows;
  return ok;
}

// The same case through DeviceSampler::distributions vs the reference ProcessedDistribution
// (the target's p and the draft's q of a speculative round): every probability bit.
bool run_distribution_case(const ChainCase& c) {
  std::mt19937 rng(c.seed);
  Floats logits;
  std::vector<std::vector<int>> hist;
  for (int r = 0; r < c.rows; r++) {
    Floats x = row_logits(rng, c.vocab, c.kind);
    logits.insert(logits.end(), x.begin(), x.end());
    hist.push_back(history(rng, c.vocab));
  }
  std::vector<SamplingContext> ctx;
  for (int r = 0; r < c.rows; r++) ctx.push_back({hist[(size_t)r], {c.config.seed, 0, 0}});
  const ProcessedDistribution dist(c.config);
  Floats want;
  bool want_error = false;
  for (int r = 0; r < c.rows && !want_error; r++) {
    try {
      const Floats p = dist(std::span<const float>(&logits[(size_t)r * c.vocab], (size_t)c.vocab), hist[(size_t)r]);
      want.insert(want.end(), p.begin(), p.end());
    } catch (const InputError&) {
      want_error = true;
    }
  }
  optimized::DeviceSampler dev(c.config, c.vocab);
  Dev<float> dl(logits), dout(Floats((size_t)c.rows * c.vocab, -1.0f));
  if (want_error) {
    CHECK_THROWS_AS(dev.distributions(dl.get(), ctx, dout.get()), InputError);
    return true;
  }
  dev.distributions(dl.get(), ctx, dout.get());
  return count_bit_mismatches(c.label + " distributions", want, dout.host()) == 0;
}

SamplerConfig with_edits(SamplerConfig s, int vocab) {
  s.repetition_penalty = 1.3f, s.frequency_penalty = 0.25f, s.presence_penalty = 0.5f, s.penalty_window = 12;
  s.logit_bias = {{3, 1.5f}, {0, -0.75f}, {3, 0.125f}, {vocab / 2, 2.0f}};
  s.banned_tokens = {vocab - 2, 5, vocab / 3};
  return s;
}

std::vector<ChainCase> chain_cases() {
  std::vector<ChainCase> out;
  uint32_t seed = 4100;
  auto add = [&](const std::string& label, SamplerConfig s, int vocab, Logits kind) {
    s.seed = 0x5eed0000ULL + seed;
    out.push_back({label, s, vocab, 3, kind, seed++});
  };
  for (int vocab : {37, 300, 1000}) {
    const SamplerConfig lc = preset_config(Preset::LlamaCpp), hf = preset_config(Preset::Hf);
    for (Logits kind : {Logits::Random, Logits::Tied, Logits::Masked}) {
      add("llamacpp preset", lc, vocab, kind);
      add("llamacpp preset + edits", with_edits(lc, vocab), vocab, kind);
      SamplerConfig h = with_edits(hf, vocab);
      h.top_p = 0.9f, h.min_p = 0.05f, h.min_keep = 3, h.temperature = 0.7f, h.top_k = 20;
      add("hf + edits, top-k ties kept", h, vocab, kind);
      SamplerConfig g = with_edits(lc, vocab);
      g.temperature = 0.0f;
      add("llamacpp greedy + edits", g, vocab, kind);
      SamplerConfig hg = with_edits(hf, vocab);
      hg.temperature = 0.0f, hg.top_k = 3;
      add("hf greedy + edits", hg, vocab, kind);
      SamplerConfig o = with_edits(lc, vocab);
      o.order = {Processor::Temperature, Processor::MinP,  Processor::Penalties, Processor::TopP,
                 Processor::LogitBias,   Processor::TopK, Processor::Banned};
      o.min_p = 0.2f, o.top_p = 0.6f, o.top_k = 7, o.min_keep = 4, o.penalty_window = -1;
      add("llamacpp custom order, min_keep 4", o, vocab, kind);
      SamplerConfig ho = o;
      ho.preset = Preset::Hf, ho.temperature = 1.3f;
      add("hf custom order", ho, vocab, kind);
    }
  }
  SamplerConfig all_banned;
  all_banned.banned_tokens = {0, 1, 2};
  out.push_back({"every candidate banned", all_banned, 3, 2, Logits::Random, seed++});
  return out;
}

}  // namespace

TEST_CASE("device sampler chain equals sample() + logprob_report() bit for bit", "[emu][sampler_chain]") {
  int rows = 0;
  for (const ChainCase& c : chain_cases()) {
    INFO(c.label << " vocab " << c.vocab << " seed " << c.seed);
    REQUIRE(run_case(c, &rows));  // the first differing case ends the test
  }
  CHECK(rows == 190);
}

// Catches KERNEL_SCATTER_INDEX_AS_ID (the greedy cases with bans and top-k).
TEST_CASE("device processed distributions equal ProcessedDistribution bit for bit", "[emu][sampler_chain]") {
  int cases = 0;
  for (const ChainCase& c : chain_cases()) {
    INFO(c.label << " vocab " << c.vocab << " seed " << c.seed);
    REQUIRE(run_distribution_case(c));
    cases++;
  }
  CHECK(cases == 64);
}
