// The whole deterministic device pipeline (optimized::Backend) on the emulated
// kernels against the CPU reference (oracle::forward / forward_batch): logits
// compared bit for bit at every step, greedy ids from the device argmax.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "kernels/tests/kernel_test_support.h"
#include "optimized/tests/device_test_support.h"
#include "optimized/backend.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "numerics/numerics.h"
#include "reference/model/synthetic.h"
#include "test_support.h"

using namespace oracle;
using oracle::kernels::test::count_bit_mismatches;

namespace {


std::vector<int> read_ids(const std::string& path) {
  std::ifstream f(path);
  INFO("fixture " << path << " is missing (set ORACLE_SHARED_DIR)");
  REQUIRE(f.good());
  return std::vector<int>(std::istream_iterator<int>(f), {});
}

bool same_bits(const std::string& label, const std::vector<float>& want, const std::vector<float>& got) {
  return count_bit_mismatches(label, want, got) == 0;
}

}  // namespace

TEST_CASE("device pipeline: 128 greedy tokens of stories260K, logits bit-identical every step",
          "[emu][pipeline]") {
  Model m = test::stories260k();
  const int vocab = m.config.vocab_size;
  auto t0 = std::chrono::steady_clock::now();
  optimized::Backend dev(m, {1, 16, 0});
  KvCache kv(m.config, {});
  int token = 1;  // BOS
  for (int step = 0; step < 128; step++) {
    auto want = forward(m, kv, 0, std::span<const int>(&token, 1));
    auto got = dev.forward(0, std::span<const int>(&token, 1));
    INFO("step " << step << " token " << token);
    REQUIRE(same_bits("step " + std::to_string(step), want, got));
    int next = dev.argmax_last()[0];
    REQUIRE(next == num::argmax_lowest(want.data(), vocab));
    token = next;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("device pipeline: 128 greedy steps (reference + device) in %.2f s\n", s);
}

TEST_CASE("device pipeline: prefill with all logits, then decode (block size 3)", "[emu][pipeline]") {
  Model m = test::stories260k();
  auto ids = read_ids(test::models("stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt"));
  REQUIRE(ids.size() >= 4);
  std::vector<int> prompt = {1, ids[0], ids[1], ids[2], ids[3]};  // BOS " Once upon a time"
  optimized::Backend dev(m, {1, 3, 0});
  KvCache kv(m.config, {});
  ForwardOptions all;
  all.all_logits = true;
  REQUIRE(same_bits("prefill", forward(m, kv, 0, prompt, all), dev.forward(0, prompt, true)));
  // llama2.c's greedy continuation, reproduced by the device argmax.
  int token = dev.argmax_last().back();
  for (int step = 0; step < 40; step++) {
    INFO("step " << step);
    REQUIRE(token == ids[4 + step]);
    auto want = forward(m, kv, 0, std::span<const int>(&token, 1));
    REQUIRE(same_bits("decode " + std::to_string(step), want, dev.forward(0, std::span<const int>(&token, 1))));
    token = dev.argmax_last()[0];
  }
}

TEST_CASE("device pipeline: continuous batch of 3 sequences equals the reference batch",
          "[emu][pipeline]") {
  Model m = test::stories260k();
  const int vocab = m.config.vocab_size;
  optimized::Backend dev(m, {3, 16, 0});
  KvCacheOptions ko;
  ko.paged = true;
  ko.max_seqs = 3;
  ko.prefix_cache = false;
  KvCache kv(m.config, ko);
  // Different prompt lengths so the sequences sit at different positions.
  std::vector<std::vector<int>> prompts = {{1}, {1, 40, 41, 42, 43, 44, 45}, {1, 300, 7}};
  for (int q = 0; q < 3; q++)
    REQUIRE(same_bits("prefill seq " + std::to_string(q), forward(m, kv, q, prompts[q]), dev.forward(q, prompts[q])));
  std::vector<int> seqs = {2, 0, 1}, tokens = {5, 6, 7};
  for (int step = 0; step < 24; step++) {
    INFO("step " << step);
    auto want = forward_batch(m, kv, seqs, tokens);
    REQUIRE(same_bits("batch step " + std::to_string(step), want, dev.forward_batch(seqs, tokens)));
    auto next = dev.argmax_last();
    for (size_t i = 0; i < seqs.size(); i++) REQUIRE(next[i] == num::argmax_lowest(&want[i * vocab], vocab));
    tokens = next;
  }
}

// ---- fast mode: bounded, not bit-exact ---------------------------------------------------
// Teacher-forced on the reference's greedy tokens so both see the same history.
// Bound (docs/cuda.md): per step, max |logit_fast - logit_ref| <= 1e-4 * max(1, max |logit_ref|).
TEST_CASE("device pipeline, fast mode: logits within the documented bound for 128 steps", "[emu][pipeline][fast]") {
  Model m = test::stories260k();
  const int vocab = m.config.vocab_size;
  optimized::BackendOptions fast;
  fast.mode = optimized::Mode::Fast;
  optimized::Backend dev(m, {1, 16, 0}, fast);
  KvCache kv(m.config, {});
  int token = 1, agree = 0;
  double worst_rel = 0.0;
  for (int step = 0; step < 128; step++) {
    auto want = forward(m, kv, 0, std::span<const int>(&token, 1));
    auto got = dev.forward(0, std::span<const int>(&token, 1));
    REQUIRE(got.size() == want.size());
    double max_abs = 1.0, max_diff = 0.0;
    for (int i = 0; i < vocab; i++) {
      max_abs = std::max(max_abs, (double)std::fabs(want[i]));
      max_diff = std::max(max_diff, (double)std::fabs(got[i] - want[i]));
    }
    worst_rel = std::max(worst_rel, max_diff / max_abs);
    const int ref_next = num::argmax_lowest(want.data(), vocab);
    agree += dev.argmax_last()[0] == ref_next;
    token = ref_next;
  }
  std::printf("fast mode: worst relative logit error %.3g, greedy agreement %d/128\n", worst_rel, agree);
  CHECK(worst_rel <= 1e-4);
  CHECK(worst_rel > 0.0);  // the fast path really takes another order
  CHECK(agree >= 126);
}

// ---- fast mode: the derived per-op bound (optimized/fast_audit.h) ------------------------
TEST_CASE("fast mode bound: b(K) known answers", "[emu][pipeline][fast]") {
  using kernels::FastPrecision;
  const double u = 0x1p-24;
  CHECK(optimized::fast_gemm_rel_bound(1, FastPrecision::F32) == u / (1 - u));
  CHECK(optimized::fast_gemm_rel_bound(4096, FastPrecision::F32) == 4096 * u / (1 - 4096 * u));
  // TF32 at K = 1: (1 + 2^-10)^2 (1 + 2u / (1 - 2u)) - 1 = 2^-9 + 2^-20 + 2^-23 + 2^-32 + O(2^-43).
  const double t1 = optimized::fast_gemm_rel_bound(1, FastPrecision::TF32);
  CHECK(std::fabs(t1 - (0x1p-9 + 0x1p-20 + 0x1p-23 + 0x1p-32)) < 1e-12);
  CHECK(optimized::fast_gemm_rel_bound(64, FastPrecision::TF32) > optimized::fast_gemm_rel_bound(64, FastPrecision::F32));
  // BF16 at K = 1: (1 + 2^-7)^2 (1 + 2u / (1 - 2u)) - 1 = 2^-6 + 2^-14 + 2^-23 + 2^-29 + O(2^-37).
  const double b1 = optimized::fast_gemm_rel_bound(1, FastPrecision::BF16);
  CHECK(std::fabs(b1 - (0x1p-6 + 0x1p-14 + 0x1p-23 + 0x1p-29)) < 1e-10);
}

TEST_CASE("fast mode: the emulated TF32/BF16 input rounding is round-to-nearest-even", "[emu][pipeline][fast]") {
  using kernels::round_mantissa;
  CHECK(round_mantissa(1.0f + 0x1p-11f, 10) == 1.0f);                     // a tie: to even
  CHECK(round_mantissa(1.0f + 0x1p-10f + 0x1p-11f, 10) == 1.0f + 0x1p-9f);  // a tie: to even (up)
  CHECK(round_mantissa(1.0f + 0x1p-11f + 0x1p-20f, 10) == 1.0f + 0x1p-10f);  // above half: up
  CHECK(round_mantissa(-1.0f - 0x1p-9f - 0x1p-12f, 7) == -1.0f);          // below half: magnitude down
  CHECK(round_mantissa(0x1.fffffep0f, 7) == 2.0f);                          // carries into the exponent
  CHECK(round_mantissa(3.0f, 7) == 3.0f);
  CHECK(std::isinf(round_mantissa(INFINITY, 7)));
  CHECK(std::isnan(round_mantissa(NAN, 10)));
}

TEST_CASE("fast mode bound: the audit passes the exact product and fails one perturbed element", "[emu][pipeline][fast]") {
  const int T = 2, K = 48, N = 3;
  std::vector<float> x(T * K), W(N * K), out(T * N);
  for (int i = 0; i < T * K; i++) x[i] = 0.25f * (float)((i * 7) % 13) - 1.5f;
  for (int i = 0; i < N * K; i++) W[i] = 0.125f * (float)((i * 5) % 11) - 0.625f;
  double mag01 = 0;  // sum |W[1,k] x[0,k]| (every product and sum here is exact in float)
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) {
      float acc = 0;
      for (int k = 0; k < K; k++) acc += W[i * K + k] * x[t * K + k];
      out[t * N + i] = acc;
    }
  for (int k = 0; k < K; k++) mag01 += std::fabs((double)W[K + k] * x[k]);
  optimized::DeviceBuffer<float> dx(x.size()), dW(W.size()), dout(out.size());
  dx.upload(x.data(), x.size()), dW.upload(W.data(), W.size()), dout.upload(out.data(), out.size());
  optimized::FastAudit exact(kernels::FastPrecision::F32);
  exact.check("op", dx.get(), dW.get(), dout.get(), T, K, N);
  CHECK(exact.within());
  CHECK(exact.ops().at("op").elements == T * N);
  CHECK(exact.ops().at("op").worst_ratio == 0.0);
  // Twice the allowance away on element (0, 1): caught.
  out[1] += (float)(2.5 * optimized::fast_gemm_rel_bound(K, kernels::FastPrecision::F32) * mag01);
  dout.upload(out.data(), out.size());
  optimized::FastAudit off(kernels::FastPrecision::F32);
  off.check("op", dx.get(), dW.get(), dout.get(), T, K, N);
  CHECK_FALSE(off.within());
  CHECK(off.ops().at("op").over == 1);
}

// The TF32 / BF16 stand-ins (inputs rounded) are within their own bounds, and beyond the
// F32 bound: the per-op bound tells the precisions apart.
TEST_CASE("fast mode bound: TF32 and BF16 matmuls within their bounds, not within F32's", "[emu][pipeline][fast]") {
  Model m = test::stories260k();
  for (kernels::FastPrecision p : {kernels::FastPrecision::TF32, kernels::FastPrecision::BF16}) {
    optimized::FastAudit own(p), f32(kernels::FastPrecision::F32);
    for (optimized::FastAudit* audit : {&own, &f32}) {
      optimized::BackendOptions fast;
      fast.mode = optimized::Mode::Fast;
      fast.precision = p;
      fast.audit = audit;
      optimized::Backend dev(m, {1, 16, 0}, fast);
      dev.forward(0, std::vector<int>{1, 403, 407, 261, 378, 430, 290, 305});
    }
    INFO("precision " << (int)p);
    CHECK(own.within());
    CHECK_FALSE(f32.within());
  }
}

// Catches FAST_GEMM_DROPS_LAST_K: a fast GEMM that is merely "close" fails its op's bound.
TEST_CASE("fast mode bound: every fast matmul of 40 steps of stories260K within its derived bound",
          "[emu][pipeline][fast]") {
  Model m = test::stories260k();
  optimized::FastAudit audit(kernels::FastPrecision::F32);
  optimized::BackendOptions fast;
  fast.mode = optimized::Mode::Fast;
  fast.audit = &audit;
  optimized::Backend dev(m, {1, 16, 0}, fast);
  const std::vector<int> prompt = {1, 403, 407, 261, 378, 430, 290, 305};
  dev.forward(0, prompt);
  int token = dev.argmax_last()[0];
  for (int step = 0; step < 40; step++) {
    dev.forward(0, std::span<const int>(&token, 1));
    token = dev.argmax_last()[0];
  }
  REQUIRE(audit.ops().size() == 8);  // q, k, v, output of attention; gate, up, down; the LM head
  for (const auto& [op, s] : audit.ops()) {
    std::printf("fast audit %-12s K=%4d elements=%8lld worst |err|/allowance %.3g\n", op.c_str(), s.K, s.elements,
                s.worst_ratio);
    CHECK(s.over == 0);
    CHECK(s.worst_ratio > 0.0);  // another order than the exact sum: the check is not vacuous
  }
  CHECK(audit.within());
}

// ---- stored weights kept as the file's blocks on the device (Q8_0, Q4_0; F16 via matmul_stored) ----
TEST_CASE("device pipeline: llama2xs Q8_0 / Q4_0 and stories260K F16 blocks with the dequantizing GEMV, bit-identical",
          "[emu][pipeline][quant]") {
  for (const char* file : {"gguf/llama2xs-q8_0.gguf", "gguf/llama2xs-q4_0.gguf", "gguf/stories260K-f16.gguf"}) {
    const std::string path = test::models(file);
    INFO("fixture " << path << " (set ORACLE_SHARED_DIR)");
    REQUIRE(test::have(path));
    LoadOptions lo;
    lo.compute_sha256 = false;
    Model m = load_model(path, lo);
    optimized::BackendOptions opt;
    opt.keep_quantized = true;
    optimized::Backend dev(m, {1, 16, 0}, opt);
    const int n_mats = 7 * m.config.n_layers + 1;
    std::printf("%s: %d of %d matrices stay quantized on the device\n", file, dev.model().quantized_matrices(), n_mats);
    CHECK(dev.model().quantized_matrices() >= 7 * m.config.n_layers);  // at least every layer matrix
    KvCache kv(m.config, {});
    int token = m.vocab.bos_id;
    for (int step = 0; step < 24; step++) {
      auto want = forward(m, kv, 0, std::span<const int>(&token, 1));
      INFO("step " << step);
      REQUIRE(same_bits(std::string(file) + " step " + std::to_string(step), want,
                        dev.forward(0, std::span<const int>(&token, 1))));
      token = dev.argmax_last()[0];
    }
  }
}

// ---- the ggml numerics profile (docs/cuda.md "The ggml profile on the device") ----------------------
// Backend with numerics Ggml vs forward / forward_batch with ForwardOptions::numerics Ggml: a prefill
// with all logits (block size 3), then a continuous batch of 3 sequences at different positions, on
// llama2xs Q4_0 (Q8_0 activations) and stories260K F16 (F16 activations); and the refusals.
TEST_CASE("device pipeline, ggml profile: prefill and continuous batch bit-identical to the reference",
          "[emu][pipeline][ggml]") {
  for (const char* file : {"gguf/llama2xs-q4_0.gguf", "gguf/stories260K-f16.gguf"}) {
    const std::string path = test::models(file);
    INFO("fixture " << path << " (set ORACLE_SHARED_DIR)");
    REQUIRE(test::have(path));
    LoadOptions lo;
    lo.compute_sha256 = false;
    Model m = load_model(path, lo);
    optimized::BackendOptions opt;
    opt.numerics = num::NumericsProfile::Ggml;
    optimized::Backend dev(m, {3, 3, 0}, opt);
    ForwardOptions fo, fo_all;
    fo.numerics = num::NumericsProfile::Ggml;
    fo_all = fo;
    fo_all.all_logits = true;
    KvCacheOptions ko;
    ko.paged = true;
    ko.max_seqs = 3;
    ko.prefix_cache = false;
    KvCache kv(m.config, ko);
    const std::vector<std::vector<int>> prompts = {{1}, {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49}, {1, 300, 7}};
    for (int q = 0; q < 3; q++)
      REQUIRE(same_bits(std::string(file) + " prefill " + std::to_string(q), forward(m, kv, q, prompts[q], fo_all),
                        dev.forward(q, prompts[q], true)));
    std::vector<int> seqs = {2, 0, 1}, tokens = {5, 6, 7};
    for (int step = 0; step < 40; step++) {  // seq 1 crosses an attention chunk (position 32)
      INFO("step " << step);
      const std::vector<float> want = forward_batch(m, kv, seqs, tokens, fo);
      REQUIRE(same_bits(std::string(file) + " batch step " + std::to_string(step), want, dev.forward_batch(seqs, tokens)));
      tokens = dev.argmax_last();
    }
    // the canonical pipeline differs (the profile is not a no-op)
    KvCache kv2(m.config, {});
    optimized::Backend canon(m, {1, 16, 0});
    CHECK_FALSE(same_bits("canonical vs ggml", forward(m, kv2, 0, prompts[1], fo), canon.forward(0, prompts[1])));
  }
  Model m = test::stories260k();
  optimized::BackendOptions fast;
  fast.numerics = num::NumericsProfile::Ggml;
  fast.mode = optimized::Mode::Fast;
  CHECK_THROWS_AS(optimized::Backend(m, {1, 16, 0}, fast), InputError);  // deterministic mode only
}

// ---- head layouts on synthetic models: MQA, MHA, GQA, untied LM head -----------------------------
namespace {
Model synthetic(int n_heads, int n_kv_heads, bool tied) {
  SyntheticPreset p;
  p.name = "emu-test";
  p.config.dim = 64;
  p.config.hidden_dim = 100;  // K = 100 for w_down: not a multiple of 16
  p.config.n_layers = 2;
  p.config.n_heads = n_heads;
  p.config.n_kv_heads = n_kv_heads;
  p.config.head_dim = 64 / n_heads;
  p.config.vocab_size = 97;
  p.config.seq_len = 160;
  p.config.tied_classifier = tied;
  return synthetic_model(p, 11, Vocab{});
}
}  // namespace

TEST_CASE("device pipeline: MQA / MHA / GQA synthetic models, chunked prefill + 60 decode steps",
          "[emu][pipeline]") {
  const int layouts[][3] = {{8, 1, 1}, {4, 4, 0}, {4, 2, 0}, {2, 1, 1}};
  for (auto& h : layouts) {
    Model m = synthetic(h[0], h[1], h[2] != 0);
    INFO("heads " << h[0] << " kv " << h[1] << " tied " << h[2]);
    optimized::Backend dev(m, {1, 7, 0});
    KvCache kv(m.config, {});
    std::vector<int> prompt(40);
    for (int i = 0; i < 40; i++) prompt[i] = (i * 37 + 5) % m.config.vocab_size;
    ForwardOptions all;
    all.all_logits = true;
    std::span<const int> p(prompt);
    REQUIRE(same_bits("prefill 0..17", forward(m, kv, 0, p.first(17), all), dev.forward(0, p.first(17), true)));
    REQUIRE(same_bits("prefill 17..40", forward(m, kv, 0, p.subspan(17), all), dev.forward(0, p.subspan(17), true)));
    int token = dev.argmax_last().back();
    for (int step = 0; step < 60; step++) {  // positions 40..99: chunks 1..3
      INFO("step " << step);
      auto want = forward(m, kv, 0, std::span<const int>(&token, 1));
      REQUIRE(same_bits("decode", want, dev.forward(0, std::span<const int>(&token, 1))));
      token = dev.argmax_last()[0];
    }
  }
}

// ---- architecture / RoPE-scaling presets: qwen2 biases, Llama 3 factors, linear, YaRN ------------
TEST_CASE("device pipeline: qwen2, llama3 rope_freqs, linear and YaRN presets, prefill + decode past "
          "the original context", "[emu][pipeline][arch]") {
  for (const char* name : {"qwen2-tiny", "llama3-tiny", "linear-tiny", "yarn-tiny"}) {
    INFO(name);
    const SyntheticPreset& p = synthetic_preset(name);
    Model m = synthetic_model(p, 11, Vocab{});
    optimized::Backend dev(m, {1, 5, 0});
    KvCache kv(m.config, {});
    std::vector<int> prompt(70);  // past yarn-tiny's original context (32)
    for (int i = 0; i < 70; i++) prompt[i] = (i * 53 + 3) % m.config.vocab_size;
    ForwardOptions all;
    all.all_logits = true;
    std::span<const int> pr(prompt);
    REQUIRE(same_bits("prefill 0..33", forward(m, kv, 0, pr.first(33), all), dev.forward(0, pr.first(33), true)));
    REQUIRE(same_bits("prefill 33..70", forward(m, kv, 0, pr.subspan(33), all), dev.forward(0, pr.subspan(33), true)));
    int token = dev.argmax_last().back();
    for (int step = 0; step < 12; step++) {
      auto want = forward(m, kv, 0, std::span<const int>(&token, 1));
      REQUIRE(same_bits("decode", want, dev.forward(0, std::span<const int>(&token, 1))));
      token = dev.argmax_last()[0];
    }
  }
}

// ---- trace: the same named intermediates, bit for bit (what `oracle diff` compares) ---------------
namespace {
struct TraceEntry {
  std::string name;
  int pos;
  std::vector<float> values;
};
Trace recorder(std::vector<TraceEntry>& out) {
  Trace t;
  t.emit = [&out](const std::string& name, int pos, std::span<const float> v) {
    out.push_back({name, pos, std::vector<float>(v.begin(), v.end())});
  };
  return t;
}
}  // namespace

TEST_CASE("device pipeline: trace names, positions and values equal oracle::forward's", "[emu][pipeline]") {
  Model m = test::stories260k();
  std::vector<TraceEntry> want, got;
  Trace tw = recorder(want), tg = recorder(got);
  optimized::BackendOptions bo;
  bo.trace = &tg;
  optimized::Backend dev(m, {1, 16, 0}, bo);
  KvCache kv(m.config, {});
  ForwardOptions fo;
  fo.trace = &tw;
  std::vector<int> prompt = {1, 40, 41, 42, 43};
  forward(m, kv, 0, prompt, fo);
  dev.forward(0, prompt);
  for (int token : {7, 8, 9}) {
    forward(m, kv, 0, std::span<const int>(&token, 1), fo);
    dev.forward(0, std::span<const int>(&token, 1));
  }
  REQUIRE(want.size() == got.size());
  REQUIRE(want.size() > 100);
  for (size_t i = 0; i < want.size(); i++) {
    INFO("entry " << i << " " << want[i].name << " pos " << want[i].pos);
    REQUIRE(got[i].name == want[i].name);
    REQUIRE(got[i].pos == want[i].pos);
    REQUIRE(same_bits(want[i].name, want[i].values, got[i].values));
  }
}

TEST_CASE("device pipeline: bad input throws InputError naming the field and leaves the cache unchanged",
          "[emu][pipeline]") {
  Model m = test::stories260k();
  optimized::Backend dev(m, {2, 16, 0});
  std::vector<int> ok = {1, 2, 3};
  dev.forward(0, ok);
  auto field_of = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  std::vector<int> bad_token = {1, m.config.vocab_size};
  CHECK_THAT(field_of([&] { dev.forward(0, bad_token); }), Catch::Contains("token"));
  std::vector<int> too_long(m.config.seq_len, 1);  // 3 + seq_len positions > context
  CHECK_THAT(field_of([&] { dev.forward(0, too_long); }), Catch::Contains("position"));
  std::vector<int> seqs = {0, 0}, toks = {1, 2};
  CHECK_THAT(field_of([&] { dev.forward_batch(seqs, toks); }), Catch::Contains("seqs"));
  CHECK(dev.kv().length(0) == 3);
  CHECK(dev.kv().length(1) == 0);
}
