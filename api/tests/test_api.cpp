// The public C++ API (include/llm_oracle/) adds no arithmetic: each wrapper
// gives the bits of the reference function it wraps (ops, the forward pass,
// the sampler), the Neox RoPE layout equals the interleaved one on permuted
// pairs, and bad arguments are InputErrors naming the op and the field.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "fixture.h"
#include "llm_oracle/llm_oracle.h"
#include "numerics/numerics.h"
#include "reference/compute/forward.h"
#include "reference/compute/ops.h"
#include "reference/model/quantize_rows.h"

namespace {
std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (oracle::num::f32_bits(a[i]) != oracle::num::f32_bits(b[i])) return false;
  return true;
}
}  // namespace

TEST_CASE("api ops give the reference's bits", "[api]") {
  const int rows = 3, n = 96;
  const std::vector<float> x = random_vec(rows * n, 1), w = random_vec(n, 2);
  std::vector<float> got(rows * n), want(rows * n);
  llm_oracle::ops::rmsnorm(got.data(), x.data(), w.data(), rows, n, 1e-5f);
  for (int r = 0; r < rows; r++) oracle::ops::rmsnorm(&want[r * n], &x[r * n], w.data(), n, 1e-5f);
  CHECK(same_bits(got, want));

  llm_oracle::ops::softmax(got.data(), x.data(), rows, n);
  want = x;
  for (int r = 0; r < rows; r++) oracle::num::softmax_canonical(&want[r * n], n);
  CHECK(same_bits(got, want));

  // Q4_0 weights: the API's matmul == the reference's qmatmul == dequantize + dot_canonical.
  const int K = 64, N = 5;
  const std::vector<float> wf = random_vec(N * K, 3), xv = random_vec(K, 4);
  std::vector<uint8_t> q(N * llm_oracle::row_bytes(llm_oracle::DType::Q4_0, K));
  llm_oracle::ops::quantize_rows(q.data(), wf.data(), llm_oracle::DType::Q4_0, N, K);
  std::vector<float> deq(N * K), out(N), ref(N);
  llm_oracle::ops::dequantize_rows(deq.data(), q.data(), llm_oracle::DType::Q4_0, N, K);
  llm_oracle::ops::matmul(out.data(), xv.data(), q.data(), llm_oracle::DType::Q4_0, 1, K, N, 2);
  for (int i = 0; i < N; i++) ref[i] = oracle::num::dot_canonical(&deq[i * K], xv.data(), K);
  CHECK(same_bits(out, ref));
}

TEST_CASE("api rope: neox layout is the interleaved rotation of permuted pairs", "[api]") {
  const int hd = 8, heads = 2;
  const std::vector<float> x = random_vec(heads * hd, 5);
  std::vector<float> inter(heads * hd);  // x's neox pairs (i, i + hd/2) moved to (2i, 2i+1)
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < hd / 2; i++) inter[h * hd + 2 * i] = x[h * hd + i], inter[h * hd + 2 * i + 1] = x[h * hd + i + hd / 2];
  llm_oracle::ops::RopeParams p;
  p.head_dim = hd;
  const int pos = 7;
  std::vector<float> neox = x;
  p.layout = llm_oracle::ops::RopeLayout::Neox;
  llm_oracle::ops::rope(neox.data(), &pos, 1, heads, p);
  p.layout = llm_oracle::ops::RopeLayout::Interleaved;
  llm_oracle::ops::rope(inter.data(), &pos, 1, heads, p);
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < hd / 2; i++) {
      CHECK(oracle::num::f32_bits(neox[h * hd + i]) == oracle::num::f32_bits(inter[h * hd + 2 * i]));
      CHECK(oracle::num::f32_bits(neox[h * hd + i + hd / 2]) == oracle::num::f32_bits(inter[h * hd + 2 * i + 1]));
    }
  p.factor = 2.0f;  // a factor without scaling would be ignored: refused
  CHECK_THROWS_AS(llm_oracle::ops::rope(inter.data(), &pos, 1, heads, p), llm_oracle::InputError);
}

TEST_CASE("api Model::logits equals forward() on a fresh cache", "[api]") {
  const std::string path = oracle::test::fixture("stories260K/stories260K.bin");
  const llm_oracle::Model m = llm_oracle::Model::load(path);
  const std::vector<int> ids = m.tokenize("Once upon a time");
  const std::vector<float> got = m.logits(ids, 2);
  oracle::Model ref = oracle::load_model(path);
  oracle::KvCache kv(ref.config, {});
  oracle::ForwardOptions fo;
  fo.all_logits = true;
  CHECK(same_bits(got, oracle::forward(ref, kv, 0, ids, fo)));
  const llm_oracle::ForwardResult t = m.trace(ids);
  CHECK(same_bits(t.logits, got));
  CHECK(t.trace.front().name == "blk.0.attn_norm");
  CHECK(t.trace.back().name == "logits");
}

TEST_CASE("api errors name the op and the field", "[api]") {
  std::vector<float> x(4);
  try {
    llm_oracle::ops::rmsnorm(x.data(), x.data(), x.data(), 1, 0, 1e-5f);
    FAIL("no error");
  } catch (const llm_oracle::InputError& e) {
    CHECK(e.file() == "ops.rmsnorm");
    CHECK(e.field() == "n");
  }
  CHECK_THROWS_AS(llm_oracle::Model::load("/nonexistent.gguf"), llm_oracle::InputError);
  CHECK_THROWS_AS(llm_oracle::parse_dtype("q4_z"), llm_oracle::InputError);
  CHECK(llm_oracle::parse_dtype("q4_k") == llm_oracle::DType::Q4_K);
}
