// certify_stats / certify: statistics on hand-computed distributions, chunk
// parallelism bit-identical to one thread, Q8_0 closer than Q4_0 on llama2xs,
// thresholds, error cases, certificate files.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "audit/certify/certify.h"
#include "audit/certify/certify_figures.h"
#include "audit/certify/certify_report.h"
#include "audit/interop/exp_rows.h"
#include "audit/interop/logit_stats.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/tokenizer/tokenizer.h"
#include "numerics/numerics.h"
#include "audit/interop/svg.h"
#include "audit/interop/svg_plot.h"
#include "test_support.h"

using namespace oracle;
using Catch::Matchers::Contains;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Model load(const std::string& rel) {
  std::string path = oracle::test::models(rel);
  REQUIRE(oracle::test::have(path));
  return load_model(path);
}

std::string corpus() {
  std::string path = oracle::test::shared_path("corpus/llama2xs-samples.txt");
  REQUIRE(oracle::test::have(path));
  return read_file(path);
}

CertifyOptions short_run(const std::string& protocol, int chunks) {
  CertifyOptions o;
  o.protocol = parse_protocol(protocol);
  o.ctx = 128;
  o.max_chunks = chunks;
  o.greedy_prompts = 2;
  o.greedy_steps = 8;
  return o;
}

void require_field(const std::function<void()>& fn, const std::string& field) {
  try {
    fn();
    FAIL("expected an InputError naming " << field);
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.field() == field);
  }
}

uint64_t bits(double d) { return num::f64_bits(d); }

}  // namespace

// ---- hand-computed statistics ------------------------------------------------------------
TEST_CASE("compare_logits on a two-token vocabulary matches the closed form") {
  // ref p = (1/2, 1/2); cand logits (ln 3, 0) -> p = (3/4, 1/4)
  float ref[2] = {0.0f, 0.0f};
  float cand[2] = {(float)std::log(3.0), 0.0f};
  TokenRecord r = compare_logits(ref, cand, 2, 1);
  double q0 = std::exp((double)cand[0]) / (std::exp((double)cand[0]) + 1.0);  // cand p(0) with the float logit
  double kl = 0.5 * std::log(0.5 / q0) + 0.5 * std::log(0.5 / (1.0 - q0));
  CHECK(r.kld == Approx(kl).epsilon(1e-12));
  CHECK(r.kld == Approx(0.5 * std::log(4.0 / 3.0)).epsilon(1e-7));
  CHECK(r.top_ref == 0);  // tie -> lowest id
  CHECK(r.top_cand == 0);
  CHECK(r.same_top());
  CHECK(r.dp_top == Approx(q0 - 0.5).epsilon(1e-12));
  CHECK(r.dp_next == Approx((1.0 - q0) - 0.5).epsilon(1e-12));
  CHECK(r.nll_ref == Approx(std::log(2.0)).epsilon(1e-14));
  CHECK(r.nll_cand == Approx(-std::log(1.0 - q0)).epsilon(1e-12));
}

TEST_CASE("identical logits give zero divergence, large ranges stay finite") {
  std::vector<float> x = {3.0f, -1.0f, 0.5f, -800.0f, 12.0f};
  TokenRecord r = compare_logits(x.data(), x.data(), 5, 3);
  CHECK(r.kld == 0.0);
  CHECK(r.dp_top == 0.0);
  CHECK(r.top_ref == 4);
  CHECK(std::isfinite(r.nll_ref));  // p = e^-812: log-softmax in float64 keeps it
  double lse = 12.0 + std::log(1.0 + std::exp(-9.0) + std::exp(-13.0) + std::exp(-11.5));
  CHECK(r.nll_ref == Approx(lse + 800.0).epsilon(1e-13));
}

TEST_CASE("log_sum_exp_f64 is log_softmax_f64's shift; compare_logits_lse with it is compare_logits") {
  // certify's overlapped passes compute the reference's log-sum-exp on the reference's thread
  std::vector<float> ref = {3.0f, -1.0f, 0.5f, -800.0f, 12.0f}, cand = {2.5f, -0.5f, 1.0f, -3.0f, 11.0f};
  const double lse = log_sum_exp_f64(ref.data(), 5);
  CHECK(lse == Approx(12.0 + std::log(1.0 + std::exp(-9.0) + std::exp(-13.0) + std::exp(-11.5))).epsilon(1e-15));
  const std::vector<double> lp = log_softmax_f64(ref.data(), 5);
  for (int k = 0; k < 5; k++) CHECK(bits(lp[k]) == bits((double)ref[k] - lse));
  for (int next = 0; next < 5; next++) {
    const TokenRecord a = compare_logits(ref.data(), cand.data(), 5, next);
    const TokenRecord b = compare_logits_lse(ref.data(), lse, cand.data(), 5, next);
    CHECK(bits(a.kld) == bits(b.kld));
    CHECK(bits(a.nll_ref) == bits(b.nll_ref));
    CHECK(bits(a.nll_cand) == bits(b.nll_cand));
    CHECK(bits(a.dp_top) == bits(b.dp_top));
    CHECK(bits(a.dp_next) == bits(b.dp_next));
    CHECK((a.top_ref == b.top_ref && a.top_cand == b.top_cand && a.next == b.next));
  }
  const TokenRecord off = compare_logits_lse(ref.data(), lse + 1.0, cand.data(), 5, 4);  // the shift is used
  CHECK(off.nll_ref == Approx(compare_logits(ref.data(), cand.data(), 5, 4).nll_ref + 1.0).epsilon(1e-12));
}

TEST_CASE("mean, standard error, percentiles, correlation") {
  MeanSe m = mean_se({1, 2, 3, 4});
  CHECK(m.mean == 2.5);
  CHECK(m.se == Approx(std::sqrt((5.0 / 3.0) / 4.0)).epsilon(1e-15));
  std::vector<double> s = {0, 10, 20, 30, 40};
  CHECK(percentile_sorted(s, 0.9) == Approx(36.0));
  CHECK(percentile_sorted(s, 0.5) == 20.0);
  CHECK(percentile_sorted(s, 1.0) == 40.0);
  CHECK(percentile_sorted(s, 0.0) == 0.0);
  CHECK(pearson({1, 2, 3}, {2, 4, 6}) == Approx(1.0));
  CHECK(pearson({1, 2, 3}, {3, 2, 1}) == Approx(-1.0));
}

// The percentile levels of the JSON certificate are the ones llama-perplexity prints (its
// "KL divergence statistics" and "Token probability statistics" blocks): KLD max, 99.9, 99,
// 95, 90, median, 10, 5, 1, min; Δp max, 99.9, 99, 95, 90, 75, median, 25, 10, 5, 1, 0.1, min.
// On 1001 evenly spaced values v_i = i / 1000 (shuffled) the percentile at L % is L / 100.
TEST_CASE("summarize: llama-perplexity's percentile levels, at their values") {
  std::vector<TokenRecord> recs(1001);
  for (int i = 0; i < 1001; i++) {
    const int j = (i * 389) % 1001;  // a permutation (389 and 1001 are coprime)
    recs[i].kld = j / 1000.0;
    recs[i].dp_next = recs[i].dp_top = j / 1000.0 - 0.5;
  }
  const Summary s = summarize(recs);
  const std::vector<double> kld_levels = {100, 99.9, 99, 95, 90, 50, 10, 5, 1, 0};
  const std::vector<double> dp_levels = {100, 99.9, 99, 95, 90, 75, 50, 25, 10, 5, 1, 0.1, 0};
  REQUIRE(s.kld_percentiles.size() == kld_levels.size());
  for (size_t i = 0; i < kld_levels.size(); i++) {
    CHECK(s.kld_percentiles[i].first == kld_levels[i]);
    CHECK(s.kld_percentiles[i].second == Approx(kld_levels[i] / 100).margin(1e-12));
  }
  for (const Percentiles* p : {&s.dp_next_percentiles, &s.dp_top_percentiles}) {
    REQUIRE(p->size() == dp_levels.size());
    for (size_t i = 0; i < dp_levels.size(); i++) {
      CHECK((*p)[i].first == dp_levels[i]);
      CHECK((*p)[i].second == Approx(dp_levels[i] / 100 - 0.5).margin(1e-12));
    }
  }
}

TEST_CASE("summarize: same-top rate with binomial error, perplexity of known nll") {
  std::vector<TokenRecord> recs(4);
  for (int i = 0; i < 4; i++) {
    recs[i].pos = i % 2;
    recs[i].top_ref = 1;
    recs[i].top_cand = i == 3 ? 2 : 1;
    recs[i].kld = 0.1 * (i + 1);
    recs[i].nll_ref = std::log(2.0);
    recs[i].nll_cand = std::log(4.0);
  }
  Summary s = summarize(recs);
  CHECK(s.n == 4);
  CHECK(s.same_top.mean == 0.75);
  CHECK(s.same_top.se == Approx(std::sqrt(0.75 * 0.25 / 3.0)));
  CHECK(s.kld.mean == Approx(0.25));
  CHECK(s.perplexity.ppl_ref.mean == Approx(2.0).epsilon(1e-14));
  CHECK(s.perplexity.ppl_cand.mean == Approx(4.0).epsilon(1e-14));
  CHECK(s.perplexity.ratio.mean == Approx(2.0).epsilon(1e-14));
  CHECK(s.perplexity.difference.mean == Approx(2.0).epsilon(1e-13));
  REQUIRE(s.kld_by_position.size() == 2);
  CHECK(s.kld_by_position[0] == Approx(0.2));  // (0.1 + 0.3) / 2
  CHECK(s.kld_by_position[1] == Approx(0.3));  // (0.2 + 0.4) / 2
  CHECK(s.kld_percentiles.front().second == Approx(0.4));
}

TEST_CASE("greedy summary: histogram of first divergence") {
  GreedySummary g = summarize_greedy({0, 3, 8, 8}, 8);
  CHECK(g.prompts == 4);
  CHECK(g.mean_first_divergence == Approx(4.75));
  CHECK(g.median_first_divergence == Approx(5.5));
  CHECK(g.fraction_identical == 0.5);
  CHECK(g.histogram[0] == 1);
  CHECK(g.histogram[3] == 1);
  CHECK(g.histogram[8] == 2);
}

// ---- real models ------------------------------------------------------------------------------
TEST_CASE("chunk-parallel certification is bit-identical to one thread") {
  Model ref = load("gguf/llama2xs.gguf"), cand = load("gguf/llama2xs-q8_0.gguf");
  std::string text = corpus();
  CertifyOptions o = short_run("full", 5);
  CertifyResult one = certify(ref, cand, text, o);
  o.threads = 3;
  CertifyResult many = certify(ref, cand, text, o);
  REQUIRE(one.records.size() == many.records.size());
  REQUIRE(one.records.size() == 5u * 127u);
  int shown = 0;
  for (size_t i = 0; i < one.records.size(); i++) {
    const TokenRecord &a = one.records[i], &b = many.records[i];
    bool same = bits(a.kld) == bits(b.kld) && bits(a.nll_cand) == bits(b.nll_cand) &&
                bits(a.dp_top) == bits(b.dp_top) && a.top_cand == b.top_cand && a.pos == b.pos;
    if (!same && shown++ < 5)
      UNSCOPED_INFO("record " << i << " kld bits " << std::hex << bits(a.kld) << " vs " << bits(b.kld));
    CHECK(same);
  }
  CHECK(bits(one.summary.kld.mean) == bits(many.summary.kld.mean));
  CHECK(bits(one.summary.perplexity.ratio.mean) == bits(many.summary.perplexity.ratio.mean));
  CHECK(one.first_divergence == many.first_divergence);
}

TEST_CASE("exp_nonpositive_rows gives num::exp_d's bits on every ISA path, any length") {
  std::vector<double> v;  // edges, the -700 cut, then a deterministic sweep of [-760, 5]
  for (double e : {0.0, -0.0, -1e-300, -1e-17, -0.5, -1.0, -2.0, -20.0, -699.999, -700.0, -700.0000001, -745.0, 1.0, 3.5})
    v.push_back(e);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(-760.0 + 765.0 * (double)(x >> 11) / 9007199254740992.0);
  }
  for (const char* isa : {"scalar", "avx2", "avx512"})
    for (int n : {0, 1, 7, 8, 9, 15, 17, (int)v.size()}) {
      std::vector<double> out(n, -1.0);
      if (!exp_nonpositive_rows_on(isa, v.data(), out.data(), n)) continue;  // this CPU lacks the path
      int wrong = 0;
      for (int k = 0; k < n; k++) {
        const double want = v[k] < -700.0 ? 0.0 : num::exp_d(v[k]);
        if (bits(out[k]) != bits(want) && wrong++ < 3) UNSCOPED_INFO(isa << " v " << v[k] << " got " << out[k]);
      }
      INFO(isa << " n " << n);
      CHECK(wrong == 0);
    }
}

// The statistics of one position, written out here one element at a time in
// increasing k with num::exp_d (docs/certify.md), for comparison with certify's.
TokenRecord scalar_record(const float* ref, const float* cand, int v, int next) {
  auto log_softmax = [v](const float* x) {
    float m = x[0];
    for (int k = 1; k < v; k++) m = x[k] > m ? x[k] : m;
    double sum = 0.0;
    for (int k = 0; k < v; k++) {
      const double d = (double)x[k] - (double)m;
      sum += d < -700.0 ? 0.0 : num::exp_d(d);
    }
    std::vector<double> out(v);
    for (int k = 0; k < v; k++) out[k] = (double)x[k] - ((double)m + num::log_d(sum));
    return out;
  };
  const std::vector<double> lr = log_softmax(ref), lc = log_softmax(cand);
  TokenRecord r;
  for (int k = 0; k < v; k++) {
    const double p = lr[k] < -700.0 ? 0.0 : num::exp_d(lr[k]);
    if (p > 0.0) r.kld += p * (lr[k] - lc[k]);
  }
  r.nll_ref = -lr[next];
  r.nll_cand = -lc[next];
  return r;
}

TEST_CASE("certify's records and greedy agreement equal a plain one-chunk-at-a-time recomputation") {
  Model ref = load("gguf/llama2xs.gguf"), cand = load("gguf/llama2xs-q4_0.gguf");
  const std::string text = corpus();
  CertifyOptions o = short_run("llamacpp", 3);
  o.threads = 2;
  o.greedy_prompts = 3;
  const CertifyResult r = certify(ref, cand, text, o);
  Tokenizer tok(ref.vocab);
  const std::vector<CertifyChunk> chunks =
      make_certify_chunks(tok.encode(text, tok.vocab().add_bos), tok.bos_id(), tok.vocab().add_bos, o);
  const int v = ref.config.vocab_size;
  size_t at = 0;
  REQUIRE(chunks.size() == 3u);
  REQUIRE(r.first_divergence.size() == 3u);
  for (int c = 0; c < 3; c++) {
    std::vector<float> logits[2];  // every position's logits of each model, one thread
    for (int m = 0; m < 2; m++) {
      KvCache kv((m ? cand : ref).config, KvCacheOptions{});
      ForwardOptions fo;
      fo.all_logits = true;
      logits[m] = forward(m ? cand : ref, kv, 0, chunks[c].tokens, fo);
    }
    for (int j = 64; j + 1 < 128; j++, at++) {
      REQUIRE(at < r.records.size());
      const TokenRecord want = scalar_record(&logits[0][(size_t)j * v], &logits[1][(size_t)j * v], v, chunks[c].tokens[j + 1]);
      const TokenRecord& got = r.records[at];
      INFO("chunk " << c << " position " << j);
      CHECK(got.pos == j);
      CHECK(bits(got.kld) == bits(want.kld));
      CHECK(bits(got.nll_ref) == bits(want.nll_ref));
      CHECK(bits(got.nll_cand) == bits(want.nll_cand));
    }
  }
  CHECK(at == r.records.size());
  for (int p = 0; p < 3; p++) {  // prompt p: BOS + chunk p's tokens 1..16, 8 greedy steps, one model at a time
    std::vector<int> prompt{tok.bos_id()};
    prompt.insert(prompt.end(), chunks[p].tokens.begin() + 1, chunks[p].tokens.begin() + 17);
    std::vector<int> gen[2];
    for (int m = 0; m < 2; m++) {
      KvCache kv((m ? cand : ref).config, KvCacheOptions{});
      std::vector<float> l = forward(m ? cand : ref, kv, 0, prompt);
      for (int s = 0; s < 8; s++) {
        gen[m].push_back(num::argmax_lowest(l.data(), v));
        l = forward(m ? cand : ref, kv, 0, std::vector<int>{gen[m].back()});
      }
    }
    int d = 0;
    while (d < 8 && gen[0][d] == gen[1][d]) d++;
    CHECK(r.first_divergence.at(p) == d);
  }
}

TEST_CASE("forward's first_logit returns the tail of the all-rows logits, bit for bit, also through a sink") {
  Model m = load("gguf/llama2xs-q8_0.gguf");
  const std::vector<int> tokens = {1, 415, 217, 263, 31, 292, 27, 471, 263, 17};
  ForwardOptions fo;
  fo.all_logits = true;
  KvCache a(m.config, KvCacheOptions{});
  const std::vector<float> all = forward(m, a, 0, tokens, fo);
  fo.first_logit = 6;
  fo.threads = 2;
  KvCache b(m.config, KvCacheOptions{});
  const std::vector<float> tail = forward(m, b, 0, tokens, fo);
  const size_t v = m.config.vocab_size;
  REQUIRE(tail.size() == 4 * v);
  CHECK(std::equal(tail.begin(), tail.end(), all.begin() + 6 * v));
  std::vector<float> blocks(4 * v, -1.0f);  // the sink's blocks of 3 rows, placed by row
  int calls = 0;
  fo.logits_block = 3;
  fo.logits_sink = [&](int row, std::span<const float> l) {
    calls++;
    std::copy(l.begin(), l.end(), blocks.begin() + row * v);
  };
  KvCache s(m.config, KvCacheOptions{});
  CHECK(forward(m, s, 0, tokens, fo).empty());
  CHECK(calls == 2);
  CHECK(blocks == tail);
  fo.logits_sink = nullptr;
  fo.first_logit = 10;
  KvCache c(m.config, KvCacheOptions{});
  require_field([&] { forward(m, c, 0, tokens, fo); }, "first_logit");
}

TEST_CASE("llama2xs: Q8_0 is much closer to the reference than Q4_0 (llamacpp protocol slice)") {
  Model ref = load("gguf/llama2xs.gguf");
  Model q8 = load("gguf/llama2xs-q8_0.gguf"), q4 = load("gguf/llama2xs-q4_0.gguf");
  std::string text = corpus();
  CertifyOptions o = short_run("llamacpp", 8);
  o.threads = 2;
  CertifyResult r8 = certify(ref, q8, text, o), r4 = certify(ref, q4, text, o);
  CHECK(r8.corpus_tokens == r4.corpus_tokens);
  CHECK(r8.corpus_tokens / 128 == 109);  // llama-perplexity reported 109 chunks of 128
  CHECK(r8.records.size() == 8u * 63u);  // positions 64..126 of each chunk
  CHECK(r8.records.front().pos == 64);
  CHECK(r8.summary.kld.mean > 0.0);
  CHECK(r8.summary.kld.mean * 20 < r4.summary.kld.mean);
  CHECK(r8.summary.same_top.mean > r4.summary.same_top.mean);
  CHECK(dominant_weight_type(q8) == "Q8_0");
  CHECK(dominant_weight_type(q4) == "Q4_0");
  CHECK(all_pass(check_thresholds(r8, default_thresholds("Q8_0"))));
  // A Q4_0 model judged by Q8_0's thresholds fails.
  CHECK_FALSE(all_pass(check_thresholds(r4, default_thresholds("Q8_0"))));
}

TEST_CASE("a model certified against itself has zero divergence") {
  Model ref = load("gguf/llama2xs.gguf");
  CertifyResult r = certify(ref, ref, corpus(), short_run("full", 1));
  CHECK(r.summary.kld.mean == 0.0);
  CHECK(r.summary.same_top.mean == 1.0);
  CHECK(r.greedy.fraction_identical == 1.0);
}

TEST_CASE("int8 KV-cache mode: small but nonzero divergence, K/V rows on the int8 grid") {
  Model ref = load("gguf/llama2xs.gguf");
  CertifyOptions o = short_run("full", 2);
  o.candidate_kv_int8 = true;
  CertifyResult r = certify(ref, ref, corpus(), o);
  CHECK(r.summary.kld.mean > 0.0);
  CHECK(r.summary.kld.mean < 0.01);
  CHECK(all_pass(check_thresholds(r, default_thresholds("KV_I8"))));
  // The cache holds s * q with s = max|row| / 127 and integer |q| <= 127.
  KvCacheOptions ko;
  ko.int8 = true;
  KvCache kv(ref.config, ko);
  std::vector<int> toks = {1, 403, 407, 261};
  forward(ref, kv, 0, toks);
  int kv_dim = ref.config.n_kv_heads * ref.config.head_dim;
  for (int layer = 0; layer < ref.config.n_layers; layer++)
    for (const float* row : {kv.key(0, layer, 2), kv.value(0, layer, 3)}) {
      float amax = 0.0f;
      for (int k = 0; k < kv_dim; k++) amax = std::max(amax, std::fabs(row[k]));
      double s = amax / 127.0;
      for (int k = 0; k < kv_dim; k++) CHECK(std::fabs(row[k] / s - std::round(row[k] / s)) < 1e-3);
    }
}

// ---- errors -----------------------------------------------------------------------------------
TEST_CASE("certify rejects incomparable models and short corpora, naming the field") {
  Model ref = load("gguf/stories260K.gguf");
  Model other = load("gguf/aidreams260K.gguf");  // same vocabulary size, different tokenizer
  CertifyOptions o = short_run("full", 1);
  require_field([&] { certify(ref, other, "Once upon a time", o); }, "tokenizer.ggml.tokens");
  Model arch = ref;
  arch.config.architecture = "gpt2";
  require_field([&] { certify(ref, arch, "Once upon a time", o); }, "general.architecture");
  Model vocab = ref;
  vocab.config.vocab_size = 256;
  require_field([&] { certify(ref, vocab, "Once upon a time", o); }, "vocab_size");
  require_field([&] { certify(ref, ref, "Once upon a time.", o); }, "tokens");
  o.ctx = 100000;
  require_field([&] { certify(ref, ref, "Once upon a time.", o); }, "ctx");
  require_field([&] { parse_protocol("perplexity"); }, "protocol");
  // The library's own checks (the CLI's range check is not the only guard): --threads >= 1.
  o = short_run("full", 1);
  o.threads = 0;
  require_field([&] { certify(ref, ref, "Once upon a time, there was a little girl named Lily.", o); }, "threads");
}

TEST_CASE("thresholds: JSON overrides, unknown metrics rejected") {
  auto dir = std::filesystem::temp_directory_path() / "oracle_test_certify";
  std::filesystem::create_directories(dir);
  std::string good = (dir / "good.json").string(), bad = (dir / "bad.json").string();
  std::ofstream(good) << R"({"kld_mean": {"max": 0.5}, "same_top": {"min": 0.1}, "kld_p999": {"max": 3}})";
  std::ofstream(bad) << R"({"kld_avg": {"max": 0.5}})";
  std::vector<Threshold> t = load_thresholds(good, default_thresholds("Q8_0"));
  CHECK(t.size() == 5);
  for (const Threshold& x : t)
    if (x.metric == "kld_mean") CHECK(x.limit == 0.5);
  require_field([&] { load_thresholds(bad, {}); }, "kld_avg");
  CHECK(default_thresholds("Q8_0")[0].limit < default_thresholds("Q4_0")[0].limit);
}

// ---- certificate files --------------------------------------------------------------------------
TEST_CASE("write_certificate writes JSON, Markdown and two SVG plots") {
  std::vector<TokenRecord> recs(3);
  for (int i = 0; i < 3; i++) {
    recs[i].pos = i;
    recs[i].kld = 0.01 * i;
  }
  CertifyResult r;
  r.protocol = Protocol::Full;
  r.ctx = 4;
  r.chunks = 1;
  r.records = recs;
  r.summary = summarize(recs);
  r.first_divergence = {2, 4};
  r.greedy = summarize_greedy(r.first_divergence, 4);
  CertificateInfo info{"ref.gguf", "aa", "cand.gguf", "bb", "corpus.txt", "cc", "0.1.0", "Q8_0", false};
  auto checks = check_thresholds(r, default_thresholds("Q8_0"));
  std::string dir = (std::filesystem::temp_directory_path() / "oracle_test_certificate").string();
  std::vector<std::string> paths = write_certificate(dir, r, info, checks);
  REQUIRE(paths.size() == 7);  // json, md, one-page summary svg, four panels
  nlohmann::json j = nlohmann::json::parse(read_file(paths[0]));
  CHECK(j["reference"]["sha256"] == "aa");
  CHECK(j["corpus"]["sha256"] == "cc");
  CHECK(j["protocol"]["name"] == "full");
  CHECK(j["statistics"]["kld"]["mean"].get<double>() == Approx(0.01));
  CHECK(j["verdict"] == (all_pass(checks) ? "PASS" : "FAIL"));
  CHECK_THAT(read_file(paths[1]), Contains("# Certificate"));
  CHECK_THAT(read_file(paths[2]), Contains("<svg"));
  CHECK_THAT(read_file(paths[3]), Contains("<polyline"));
}

TEST_CASE("svg_histogram draws one bar per non-empty bin") {
  std::string s = svg_histogram({0.0, 0.1, 0.1, 0.9}, 10, 0.0, 1.0, {"t", "x", "y"});
  size_t bars = 0;
  for (size_t p = s.find("fill=\"steelblue\""); p != std::string::npos; p = s.find("fill=\"steelblue\"", p + 1))
    bars++;
  CHECK(bars == 3);  // bins 0, 1, 9
  // One bin (and fewer: read as one) holds every value: one bar.
  for (int one : {1, 0, -3}) {
    const std::string h = svg_histogram({0.1, 0.5, 0.9}, one, 0.0, 1.0, {"t", "x", "y"});
    size_t n = 0;
    for (size_t p = h.find("fill=\"steelblue\""); p != std::string::npos; p = h.find("fill=\"steelblue\"", p + 1)) n++;
    CHECK(n == 1);
  }
}

TEST_CASE("every SVG label is escaped by the one escaper (text and attribute safe)") {
  const std::string label = "a\"b<c>&d";
  const std::string want = "a&quot;b&lt;c&gt;&amp;d";
  CHECK(svg::escape(label) == want);
  for (const std::string& s : {svg_histogram({0.5}, 2, 0.0, 1.0, {label, label, label}),
                               svg_line_plot({0.0, 1.0}, {0.0, 1.0}, {label, label, label})}) {
    CHECK(s.find(label) == std::string::npos);
    size_t n = 0;
    for (size_t p = s.find(want); p != std::string::npos; p = s.find(want, p + 1)) n++;
    CHECK(n == 3);  // title, x label, y label
  }
}

// ---- chunks: perplexity.cpp's rule -------------------------------------------------------------
// perplexity.cpp tokenizes with add_special and then, per chunk, `if (add_bos && j == 0)
// tokens[batch_start] = bos`: a vocabulary without add_bos (SmolLM2, Qwen2) runs the
// corpus tokens unchanged.
TEST_CASE("make_certify_chunks: BOS replaces the first token only when the vocabulary adds BOS") {
  std::vector<int> ids(300);
  for (int i = 0; i < 300; i++) ids[i] = 10 + i;
  CertifyOptions o;
  o.protocol = Protocol::LlamaCpp;
  o.ctx = 128;
  const std::vector<CertifyChunk> with = make_certify_chunks(ids, 1, true, o);
  const std::vector<CertifyChunk> without = make_certify_chunks(ids, 1, false, o);
  REQUIRE(with.size() == 2);  // ⌊300 / 128⌋
  REQUIRE(without.size() == 2);
  for (int c = 0; c < 2; c++) {
    REQUIRE(with[c].tokens.size() == 128u);
    CHECK(with[c].tokens[0] == 1);
    CHECK(without[c].tokens[0] == 10 + 128 * c);
    CHECK(with[c].first_scored == 64);
    for (int j = 1; j < 128; j++) CHECK(with[c].tokens[j] == 10 + 128 * c + j);
    CHECK(without[c].tokens == std::vector<int>(ids.begin() + 128 * c, ids.begin() + 128 * (c + 1)));
  }
  o.protocol = Protocol::Full;  // ours: [BOS] + 127 corpus tokens, every prediction scored
  const std::vector<CertifyChunk> full = make_certify_chunks(ids, 1, false, o);
  REQUIRE(full.size() == 2);  // ⌊300 / 127⌋
  CHECK(full[1].tokens[0] == 1);
  CHECK(full[1].tokens[1] == 10 + 127);
  CHECK(full[1].first_scored == 0);
}

TEST_CASE("certificate Markdown and summary figure print small statistics with significant digits") {
  std::vector<TokenRecord> recs(4);
  for (int i = 0; i < 4; i++) recs[i].pos = i, recs[i].kld = 3.4e-7 * (i + 1);  // mean 8.5e-07
  CertifyResult r;
  r.protocol = Protocol::LlamaCpp;
  r.ctx = 4;
  r.chunks = 1;
  r.records = recs;
  r.summary = summarize(recs);
  CertificateInfo info{"ref.gguf", "aa", "cand.gguf", "bb", "corpus.txt", "cc", "0.1.0", "F32", false};
  auto checks = check_thresholds(r, default_thresholds("F32"));
  const std::string md = certificate_markdown(r, info, checks);
  CHECK_THAT(md, Contains("| mean KLD | 8.5e-07 ± "));
  CHECK_THAT(md, Contains("| kld_mean | ≤ 1e-06 | 8.5e-07 | PASS |"));
  CHECK_THAT(md, !Contains("| mean KLD | 0.000000"));
  CHECK_THAT(svg_certificate_summary(r, info, checks), Contains("mean KLD 8.5e-07 ± "));
}

// ---- figures read back ---------------------------------------------------------------------------
// The Δp histogram (certify_figures.h: 60 bins over the symmetric 1-2-5 axis) read back through
// its own tick labels: a value's pixel is linear in the value between the first and the last
// x tick, a bar's height is linear in its count between the y ticks. The data are built with a
// known histogram (bin centres −2.95 … 2.95 percentage points, bin k holding 1 + 7k mod 5 tokens;
// the axis is then −3 … 3 in steps of 1), so every bar's left edge and count is known without
// the code under test; the legend's mean and RMS are the data's, summed here.
namespace {

struct SvgText {
  double x, y;
  int size;
  std::string anchor, body;
};

std::vector<SvgText> svg_texts(const std::string& svg) {
  static const std::regex re("<text x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" font-size=\"([0-9]+)\" text-anchor=\"(\\w+)\"[^>]*>([^<]*)</text>");
  std::vector<SvgText> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stoi((*it)[3]), (*it)[4], (*it)[5]});
  return out;
}

}  // namespace

TEST_CASE("the Δp figure reads back: 60 bars at the data's bins, heights = counts, legend = the data's mean and RMS") {
  std::vector<TokenRecord> recs;
  std::vector<int> mult(60);
  double sum = 0, sum_sq = 0;
  for (int k = 0; k < 60; k++) {
    mult[k] = 1 + (7 * k) % 5;
    const double c = -2.95 + 0.1 * k;  // percentage points
    for (int i = 0; i < mult[k]; i++) {
      TokenRecord t;
      t.pos = (int)recs.size() % 8;
      t.dp_next = c / 100;
      recs.push_back(t);
      sum += c, sum_sq += c * c;
    }
  }
  CertifyResult r;
  r.records = recs;
  r.summary = summarize(recs);
  const std::string svg = svg_delta_p(r);
  // x ticks: the "middle" labels in the tick font (11); y ticks: the "end" labels.
  std::vector<std::pair<double, double>> xt, yt;  // (value, pixel)
  for (const SvgText& t : svg_texts(svg)) {
    if (t.size == 11 && t.anchor == "middle") xt.push_back({std::stod(t.body), t.x});
    if (t.size == 11 && t.anchor == "end") yt.push_back({std::stod(t.body), t.y});
  }
  REQUIRE(xt.size() == 7);
  CHECK(xt.front().first == -3);
  CHECK(xt.back().first == 3);
  const double x_scale = (xt.back().second - xt.front().second) / 6.0;  // pixels per percentage point
  REQUIRE(x_scale > 50);
  for (const auto& [v, px] : xt) CHECK(std::abs(px - (xt.front().second + (v + 3) * x_scale)) < 0.11);
  REQUIRE(yt.size() >= 2);
  const double y_scale = (yt.front().second - yt.back().second) / (yt.back().first - yt.front().first);  // pixels per token
  REQUIRE(y_scale > 10);
  static const std::regex bar("<rect x=\"([-0-9.]+)\" y=\"[-0-9.]+\" width=\"[-0-9.]+\" height=\"([-0-9.]+)\" fill=\"#9ecae1\"/>");
  std::vector<std::pair<double, double>> bars;  // (left edge in percentage points, count)
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    bars.push_back({-3 + (std::stod((*it)[1]) - xt.front().second) / x_scale, std::stod((*it)[2]) / y_scale});
  REQUIRE(bars.size() == 60);
  for (int k = 0; k < 60; k++) {
    INFO("bar " << k);
    CHECK(std::abs(bars[k].first - (-3 + 0.1 * k)) < 0.01);
    CHECK(std::abs(bars[k].second - mult[k]) < 0.05);
  }
  const double n = (double)recs.size();
  char legend[96];
  std::snprintf(legend, sizeof legend, "mean %.3g (RMS %.3g)", sum / n, std::sqrt(sum_sq / n));
  CHECK_THAT(svg, Contains(legend));
  // The legend (mean, p1, p99) is set in the tick labels' font (certify_figures.h).
  int legend_labels = 0;
  for (const SvgText& t : svg_texts(svg)) legend_labels += t.anchor == "start" && t.size == 11;
  CHECK(legend_labels == 3);
}

// The summary page's header is one left-aligned column: the verdict title, the subtitle, the
// five file / protocol lines, the threshold column's header and its rows start at one x.
TEST_CASE("certificate summary page: the header block shares one left margin") {
  std::vector<TokenRecord> recs(4);
  for (int i = 0; i < 4; i++) recs[i].pos = i, recs[i].kld = 0.01 * (i + 1);
  CertifyResult r;
  r.records = recs;
  r.summary = summarize(recs);
  CertificateInfo info{"ref.gguf", "aa", "cand.gguf", "bb", "corpus.txt", "cc", "0.1.0", "Q8_0", false};
  const auto checks = check_thresholds(r, default_thresholds("Q8_0"));
  const std::string svg = svg_certificate_summary(r, info, checks);
  const std::string head = svg.substr(0, svg.find("<g transform"));  // before the four panels
  std::vector<double> left;
  for (const SvgText& t : svg_texts(head))
    if (t.anchor == "start" && t.x < 200) left.push_back(t.x);
  REQUIRE(left.size() == 2 + 5 + 1 + checks.size());
  for (double x : left) CHECK(x == left.front());
}
