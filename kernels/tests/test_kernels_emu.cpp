// Deterministic kernels on the host emulation vs the canonical op spec and the
// CPU reference (reference/compute/ops.h), tolerance 0, over many shapes.
// The op cases (matmul, RMSNorm, RoPE, elementwise, embedding, softmax,
// attention; compaction and matmul_stored in their own files) are the kernel
// case registry's (optimized/kernel_cases.h: seeded inputs; `spec` = loops written
// from docs/numerics.md §4 with numerics/numerics.h; `reference` =
// reference/compute/ops.h; the kernel); `oracle kernels --check` runs the same
// cases. Argmax, the sampler and speculative verification are checked here.
#include <algorithm>
#include <numeric>

#include "kernel_test_support.h"
#include "kernels/argmax.cuh"
#include "kernels/matmul.cuh"
#include "kernels/sampler.cuh"
#include "kernels/speculative.cuh"
#include "base/errors.h"
#include "reference/model/model.h"
#include "reference/sampling/sampler.h"
#include "reference/generate/speculative.h"

using namespace oracle;
using namespace oracle::kernels::test;
namespace k = oracle::kernels;

// ---- registry cases ----------------------------------------------------------------------
TEST_CASE("matmul_f32 kernel is bit-exact over shapes", "[emu][matmul]") { check_registry_op("matmul_f32"); }

TEST_CASE("dequantizing Q8_0 / Q4_0 GEMV kernels are bit-exact", "[emu][matmul]") {
  check_registry_op("matmul_q8_0");
  check_registry_op("matmul_q4_0");
  Dev<uint8_t> w(std::vector<uint8_t>(34));
  Dev<float> x(48), out(1);
  CHECK_THROWS_AS(k::matmul(out.get(), x.get(), {w.get(), DType::Q8_0}, 1, 48, 1), std::invalid_argument);
}

TEST_CASE("fast-mode GEMM is within its derived per-op bound", "[emu][matmul][fast]") { check_registry_op("gemm_fast"); }

TEST_CASE("rmsnorm kernel is bit-exact (in place)", "[emu][rmsnorm]") { check_registry_op("rmsnorm"); }

TEST_CASE("rope kernel is bit-exact with the shared host tables", "[emu][rope]") { check_registry_op("rope"); }

TEST_CASE("swiglu, residual, bias and embedding kernels are bit-exact", "[emu][elementwise]") {
  for (const char* op : {"swiglu", "residual", "bias", "embedding"}) check_registry_op(op);
}

TEST_CASE("softmax_rows kernel equals softmax_canonical", "[emu][softmax]") { check_registry_op("softmax"); }

TEST_CASE("paged attention kernels are bit-exact (prefill + decode batch, GQA, block sizes)", "[emu][attention]") {
  check_registry_op("attention");
}

TEST_CASE("the registry's benchmark cases match too (tiny shapes, every version)", "[emu][registry]") {
  for (const optimized::cases::KernelCase& c : optimized::cases::kernel_cases(optimized::cases::CaseSet::BenchTiny)) {
    const optimized::cases::CaseVerdict v = optimized::cases::check_case(c);
    for (const std::string& l : v.first) std::printf("%s\n", l.c_str());
    INFO(c.label);
    CHECK(v.pass());
    CHECK(c.bytes > 0);
  }
}

TEST_CASE("argmax_rows kernel equals argmax_lowest (ties, NaN, empty rows)", "[emu][argmax]") {
  std::mt19937 rng(700);
  for (int n : {1, 2, 15, 16, 17, 100, 512, 1000}) {
    const int R = 6;
    Floats x(n * R);
    for (float& v : x) v = (float)(int)(rng() % 7) - 3.0f;  // many ties
    const float nan = num::f32_from_bits(0x7fc00000u);
    for (int i = 0; i < n; i += 2) x[n + i] = nan;         // row 1: half NaN
    std::fill(&x[2 * n], &x[3 * n], nan);                   // row 2: all NaN -> -1
    x[3 * n + n - 1] = 100.0f;                              // row 3: max at the end
    for (int i = 0; i < n; i++) x[4 * n + i] = (i % 2) ? 0.0f : -0.0f;  // row 4: signed zeros
    Dev<float> dx(x);
    Dev<int> dout(R);
    k::argmax_rows(dout.get(), dx.get(), R, n);
    std::vector<int> got = dout.host();
    for (int r = 0; r < R; r++) {
      INFO("n=" << n << " row " << r);
      CHECK(got[r] == num::argmax_lowest(&x[(size_t)r * n], n));
    }
  }
}

// ---- sampler: temperature + Philox draw, greedy ---------------------------------------

TEST_CASE("device sampler equals the reference chain (temperature + draw, greedy)", "[emu][sampler]") {
  std::mt19937 rng(900);
  for (int n : {1, 7, 100, 512, 1000})
    for (float temp : {0.0f, 0.5f, 1.0f, 1.7f}) {
      const int R = 5;
      Floats logits = random_floats(rng, (size_t)n * R, 6.0f);
      for (int i = 0; i < n; i += 4) logits[(size_t)n + i] = -num::inf_f32();  // row 1: masked ids
      for (int i = 0; i < n; i++) logits[(size_t)2 * n + i] = (float)(i % 3);   // row 2: prob ties
      std::vector<int> seq = {0, 1, 2, 7, 3}, pos = {5, 9, 0, 1000, 17};
      SamplerConfig cfg;
      cfg.temperature = temp;
      cfg.seed = 0x1234567890abcdefULL + (uint64_t)n;
      SamplerChain chain = build_chain(cfg);
      Dev<float> dl(logits);
      Dev<int> dseq(seq), dpos(pos), ws(k::sample_workspace_ints(n, R)), dout(R);
      k::sample_rows(dout.get(), dl.get(), dseq.get(), dpos.get(), R, n, temp, cfg.seed, ws.get());
      std::vector<int> got = dout.host();
      Floats probs = dl.host();
      for (int r = 0; r < R; r++) {
        INFO("n=" << n << " T=" << temp << " row " << r);
        SamplingContext ctx{{}, rng::RngKey{cfg.seed, (uint32_t)seq[r], (uint32_t)pos[r]}};
        SampleResult want;
        try {
          want = sample(chain, std::span<const float>(&logits[(size_t)r * n], n), ctx);
        } catch (const InputError&) {  // nothing drawable (every logit -inf): the device says -1
          CHECK(got[r] == -1);
          continue;
        }
        CHECK(got[r] == want.token);
        if (temp > 0.0f) {
          Floats wp;
          for (const Candidate& c : want.processed.items) wp.push_back(c.prob);
          CHECK(count_bit_mismatches("sampler probs", wp, Floats(&probs[(size_t)r * n], &probs[(size_t)(r + 1) * n])) == 0);
        }
      }
    }
}

// ---- speculative verification ------------------------------------------------------------

namespace {
// A processed-like distribution: softmax of random logits with some ids masked to 0.
Floats random_distribution(std::mt19937& rng, int vocab, float scale) {
  Floats x = random_floats(rng, vocab, scale);
  for (int i = 0; i < vocab; i++)
    if (rng() % 5 == 0 && i != 0) x[i] = -num::inf_f32();
  num::softmax_canonical(x.data(), vocab);
  return x;
}
}  // namespace

TEST_CASE("device speculative verification equals speculative_step", "[emu][speculative]") {
  std::mt19937 rng(1000);
  int cases = 0, rejections = 0, bonuses = 0;
  for (int vocab : {7, 100, 512})
    for (int k : {0, 1, 3, 5})
      for (int trial = 0; trial < 6; trial++) {
        Floats p, q;
        std::vector<int> drafts;
        for (int i = 0; i <= k; i++) {
          Floats pi = random_distribution(rng, vocab, trial % 2 ? 8.0f : 2.0f);
          p.insert(p.end(), pi.begin(), pi.end());
          if (i == k) break;
          Floats qi = trial == 5 ? pi : random_distribution(rng, vocab, 3.0f);  // trial 5: q = p
          q.insert(q.end(), qi.begin(), qi.end());
          drafts.push_back((int)(rng() % vocab));
        }
        const uint64_t seed = 77 + (uint64_t)trial;
        const int seq = trial, position = 3 + 11 * trial;
        SpecStep want = speculative_step(p, q, drafts, vocab, rng::RngKey{seed, (uint32_t)seq, (uint32_t)position});
        Dev<float> dp(p), dq(q.empty() ? Floats(1) : q), wf(k::speculative_workspace_floats(k, vocab));
        Dev<int> dd(drafts.empty() ? std::vector<int>(1) : drafts), wi(k::speculative_workspace_ints(k, vocab)),
            dout(k + 2);
        k::speculative_verify(dout.get(), dp.get(), dq.get(), dd.get(), k, vocab, seed, seq, position, wf.get(),
                              wi.get());
        std::vector<int> out = dout.host();
        INFO("vocab=" << vocab << " k=" << k << " trial " << trial);
        REQUIRE(out[0] == want.accepted);
        CHECK(std::vector<int>(out.begin() + 1, out.begin() + 2 + out[0]) == want.tokens);
        cases++;
        rejections += want.accepted < k;
        bonuses += want.accepted == k;
      }
  INFO("cases " << cases << " with a rejection " << rejections << " ending in a bonus " << bonuses);
  CHECK(rejections > 10);  // both branches are exercised
  CHECK(bonuses > 10);
}
