// Forward pass: real checkpoints reproduce llama2.c's greedy output; every
// head layout (GQA, MHA, MQA; tied and untied LM head) agrees with an
// independent float64 transcription; logits bits do not depend on prefill
// chunking, thread count or batching; trace names; input errors.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "bit_compare.h"
#include "forward_test_util.h"
#include "base/errors.h"
#include "base/huge_pages.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"

using namespace oracle;
using namespace oracle::test;

namespace {

// ---- greedy decoding as llama2.c's run.c does it ------------------------------
// Feeds `prompt` (starting with BOS), then argmax tokens; stops on BOS or when
// `steps` tokens after the first have been produced (run.c's -n). Returns those
// tokens (the prompt's after BOS, then the generated ones).
std::vector<int> greedy(const Model& m, const std::vector<int>& prompt, int steps) {
  KvCache kv(m.config, {});
  auto logits = forward(m, kv, 0, prompt);
  std::vector<int> out(prompt.begin() + 1, prompt.end());
  while ((int)out.size() < steps) {
    int next = num::argmax_lowest(logits.data(), m.config.vocab_size);
    if (next == 1) break;
    out.push_back(next);
    logits = forward(m, kv, 0, std::span<const int>(&next, 1));
  }
  return out;
}

std::vector<int> read_ids(const std::string& path) {
  std::ifstream f(path);
  INFO("fixture " << path);
  REQUIRE(f.good());
  return std::vector<int>(std::istream_iterator<int>(f), {});
}

// llama2.c tokenizer.bin pieces, for decoding ids the way run.c prints them.
std::vector<std::string> read_llama2c_pieces(const std::string& path, int n) {
  std::ifstream f(path, std::ios::binary);
  INFO("fixture " << path);
  REQUIRE(f.good());
  int max_len, len;
  float score;
  f.read((char*)&max_len, 4);
  std::vector<std::string> pieces(n);
  for (auto& p : pieces) {
    f.read((char*)&score, 4);
    f.read((char*)&len, 4);
    p.resize(len);
    f.read(p.data(), len);
  }
  return pieces;
}

std::string decode_like_run_c(const std::vector<std::string>& pieces, const std::vector<int>& ids) {
  std::string text;
  int prev = 1;
  for (int id : ids) {
    std::string p = pieces[id];
    if (prev == 1 && !p.empty() && p[0] == ' ') p.erase(0, 1);
    unsigned byte;
    if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%02X>", &byte) == 1) p = std::string(1, (char)byte);
    text += p;
    prev = id;
  }
  return text;
}

// ---- independent float64 forward (llama2.c's algorithm, plain double math) --------
struct Ref64 {
  const Model& m;
  std::vector<std::vector<double>> kc, vc;  // (n_layers) x (pos, kv_dim)
  // Any stored type: each row dequantized exactly (dequantize_row), then float64.
  static std::vector<float> row_of(const WeightMatrix& w, int i, int k) {
    std::vector<float> r(k);
    dequantize_row(w.type, w.data + (int64_t)i * dtype_row_bytes(w.type, k), k, r.data());
    return r;
  }
  std::vector<double> matvec(const WeightMatrix& w, const std::vector<double>& x, int rows) {
    std::vector<double> y(rows, 0.0);
    for (int i = 0; i < rows; i++) {
      std::vector<float> r = row_of(w, i, (int)x.size());
      for (size_t j = 0; j < x.size(); j++) y[i] += (double)r[j] * x[j];
    }
    return y;
  }
  std::vector<double> norm(const std::vector<double>& x, const float* w) {
    double ss = 0;
    for (double v : x) ss += v * v;
    double r = 1.0 / std::sqrt(ss / x.size() + m.config.norm_eps);
    std::vector<double> y(x.size());
    for (size_t k = 0; k < x.size(); k++) y[k] = x[k] * r * w[k];
    return y;
  }
  void rope(std::vector<double>& v, int pos) {
    int hd = m.config.head_dim;
    for (size_t i = 0; i < v.size() / 2; i++) {
      double f = std::pow((double)m.config.rope_theta, -2.0 * (double)(i % (hd / 2)) / hd);
      double a = pos * f, x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[2 * i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }
  std::vector<double> attend(const std::vector<double>& q, int l, int pos) {
    const Config& c = m.config;
    int hd = c.head_dim, kvd = c.n_kv_heads * hd, grp = c.n_heads / c.n_kv_heads;
    std::vector<double> out(q.size(), 0.0);
    for (int h = 0; h < c.n_heads; h++) {
      std::vector<double> s(pos + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= pos; j++) {
        double d = 0;
        for (int i = 0; i < hd; i++) d += q[h * hd + i] * kc[l][j * kvd + (h / grp) * hd + i];
        s[j] = d / std::sqrt((double)hd);
        mx = std::max(mx, s[j]);
      }
      for (auto& e : s) sum += (e = std::exp(e - mx));
      for (int j = 0; j <= pos; j++)
        for (int i = 0; i < hd; i++) out[h * hd + i] += s[j] / sum * vc[l][j * kvd + (h / grp) * hd + i];
    }
    return out;
  }
  std::vector<double> step(int token, int pos) {
    const Config& c = m.config;
    const Weights& W = m.weights;
    kc.resize(c.n_layers);
    vc.resize(c.n_layers);
    std::vector<float> e = row_of(W.token_embedding, token, c.dim);
    std::vector<double> x(e.begin(), e.end());
    for (int l = 0; l < c.n_layers; l++) {
      const LayerWeights& w = W.layers[l];
      auto xb = norm(x, w.attn_norm);
      auto q = matvec(w.wq, xb, c.n_heads * c.head_dim), k = matvec(w.wk, xb, c.n_kv_heads * c.head_dim);
      auto v = matvec(w.wv, xb, c.n_kv_heads * c.head_dim);
      rope(q, pos);
      rope(k, pos);
      kc[l].insert(kc[l].end(), k.begin(), k.end());
      vc[l].insert(vc[l].end(), v.begin(), v.end());
      auto o = matvec(w.wo, attend(q, l, pos), c.dim);
      for (int i = 0; i < c.dim; i++) x[i] += o[i];
      xb = norm(x, w.ffn_norm);
      auto g = matvec(w.w_gate, xb, c.hidden_dim), u = matvec(w.w_up, xb, c.hidden_dim);
      for (int i = 0; i < c.hidden_dim; i++) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      auto d = matvec(w.w_down, g, c.dim);
      for (int i = 0; i < c.dim; i++) x[i] += d[i];
    }
    return matvec(W.classifier, norm(x, W.final_norm), c.vocab_size);
  }
};

void check_against_f64(const Model& m, int n_tokens) {
  auto toks = test_tokens(m, n_tokens);
  auto got = run_fresh(m, toks, n_tokens);
  Ref64 ref{m, {}, {}};
  int V = m.config.vocab_size;
  double worst = 0;
  for (int t = 0; t < n_tokens; t++) {
    auto want = ref.step(toks[t], t);
    double scale = 1.0;
    for (double w : want) scale = std::max(scale, std::fabs(w));
    for (int i = 0; i < V; i++) worst = std::max(worst, std::fabs(got[(size_t)t * V + i] - want[i]) / scale);
  }
  INFO("worst error relative to the largest logit: " << worst);
  CHECK(worst < 2e-5);
}

// The logits of every position, run four ways, must be the same bits.
void check_chunk_invariance(const Model& m, int n_tokens) {
  auto toks = test_tokens(m, n_tokens, 3);
  auto one_pass = run_fresh(m, toks, n_tokens);
  for (int chunk : {1, 3, 7}) {
    INFO("chunk " << chunk);
    CHECK(first_bit_mismatch(run_fresh(m, toks, chunk), one_pass) == "");
  }
  INFO("2 threads");
  CHECK(first_bit_mismatch(run_fresh(m, toks, n_tokens, {}, 2), one_pass) == "");
  CHECK(first_bit_mismatch(run_fresh(m, toks, 5, {}, 2), one_pass) == "");
  // The pool's splits (matmul rows, attention's zigzag row order, SwiGLU rows) at
  // 3 and 4 threads and odd call sizes (chunks of 7 and 9, a 69-row tail ...).
  INFO("3 and 4 threads");
  CHECK(first_bit_mismatch(run_fresh(m, toks, n_tokens, {}, 3), one_pass) == "");
  CHECK(first_bit_mismatch(run_fresh(m, toks, 7, {}, 3), one_pass) == "");
  CHECK(first_bit_mismatch(run_fresh(m, toks, 9, {}, 4), one_pass) == "");
}

}  // namespace

// ============================================================================
// Real checkpoints against llama2.c
// ============================================================================
TEST_CASE("stories260K greedy 'Once upon a time' reproduces llama2.c's ids", "[forward][fixture]") {
  Model m = fixture_model("stories260K/stories260K.bin");
  auto want = read_ids(models("stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt"));
  REQUIRE(want.size() > 4);
  std::vector<int> prompt = {1, want[0], want[1], want[2], want[3]};  // BOS " Once upon a time"
  auto got = greedy(m, prompt, (int)want.size());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    INFO("token " << i);
    REQUIRE(got[i] == want[i]);
  }
}

TEST_CASE("stories260K greedy from BOS reproduces llama2.c's 256-step transcript", "[forward][fixture]") {
  Model m = fixture_model("stories260K/stories260K.bin");
  auto pieces = read_llama2c_pieces(models("stories260K/tok512.bin"), m.config.vocab_size);
  std::ifstream f(models("stories260K/expected_greedy_empty_prompt_256steps.txt"));
  REQUIRE(f.good());
  std::string want((std::istreambuf_iterator<char>(f)), {});
  while (!want.empty() && want.back() == '\n') want.pop_back();
  std::string got = decode_like_run_c(pieces, greedy(m, {1}, 256));
  CHECK(got == want);
}

// ============================================================================
// Head layouts against float64
// ============================================================================
TEST_CASE("forward matches float64: GQA tied (stories260K)", "[forward][f64]") {
  check_against_f64(fixture_model("stories260K/stories260K.bin"), 40);
}
TEST_CASE("forward matches float64: MHA (aidreams260K)", "[forward][f64]") {
  check_against_f64(fixture_model("aidreams260K/aidreams260K.bin"), 40);
}
TEST_CASE("forward matches float64: MQA and untied synthetic models", "[forward][f64]") {
  check_against_f64(small_synthetic(8, 1, true), 40);   // MQA, tied
  check_against_f64(small_synthetic(4, 2, false), 40);  // GQA, untied
  check_against_f64(small_synthetic(4, 4, false), 40);  // MHA, untied
  check_against_f64(small_synthetic(32, 1, false), 40);  // 32 query heads on one kv head: two query groups
}

// ============================================================================
// Invariance: chunking, threads, batching
// ============================================================================
TEST_CASE("prefill in one pass, token by token, in chunks of 3 and 7, and on 2 threads: same bits",
          "[forward][invariance]") {
  SECTION("stories260K (GQA)") { check_chunk_invariance(fixture_model("stories260K/stories260K.bin"), 70); }
  SECTION("aidreams260K (MHA)") { check_chunk_invariance(fixture_model("aidreams260K/aidreams260K.bin"), 70); }
  SECTION("MQA synthetic, untied") { check_chunk_invariance(small_synthetic(8, 1, false), 70); }
  SECTION("MQA, 32 heads (more than one query group a kv head)") {
    check_chunk_invariance(small_synthetic(32, 1, false), 70);
  }
}

TEST_CASE("last-position logits equal the last row of all_logits", "[forward]") {
  Model m = small_synthetic(4, 2, true);
  auto toks = test_tokens(m, 20);
  auto all = run_fresh(m, toks, 20);
  KvCache kv(m.config, {});
  auto last = forward(m, kv, 0, toks);
  REQUIRE(last.size() == (size_t)m.config.vocab_size);
  CHECK(first_bit_mismatch(last, std::span<const float>(all).last(m.config.vocab_size)) == "");
}

TEST_CASE("forward_batch: sequences joining and leaving equal each decoded alone", "[forward][batch]") {
  Model m = fixture_model("stories260K/stories260K.bin");
  int V = m.config.vocab_size, n_seqs = 4;
  std::vector<std::vector<int>> toks;
  std::vector<std::vector<float>> solo;  // (n_seqs) x (n, vocab)
  for (int s = 0; s < n_seqs; s++) {
    toks.push_back(test_tokens(m, 30 + 5 * s, s));
    solo.push_back(run_fresh(m, toks[s], 1));
  }
  // Sequence s joins at step 6*s with a prefill of 3 + s tokens, then decodes
  // one token per step until its tokens run out (then it leaves).
  KvCacheOptions ko;
  ko.max_seqs = n_seqs;
  KvCache kv(m.config, ko);
  for (int step = 0; step < 60; step++) {
    std::vector<int> seqs, next;
    for (int s = 0; s < n_seqs; s++) {
      int len = kv.length(s), pre = 3 + s;
      if (step == 6 * s) {
        auto l = forward(m, kv, s, std::span<const int>(toks[s]).first(pre));
        REQUIRE(first_bit_mismatch(l, std::span<const float>(solo[s]).subspan((size_t)(pre - 1) * V, V)) == "");
      } else if (step > 6 * s && len < (int)toks[s].size()) {
        seqs.push_back(s);
        next.push_back(toks[s][len]);
      }
    }
    if (seqs.empty()) continue;
    ForwardOptions o;
    o.threads = 1 + step % 2;
    auto l = forward_batch(m, kv, seqs, next, o);
    for (size_t i = 0; i < seqs.size(); i++) {
      int pos = kv.length(seqs[i]) - 1;
      INFO("step " << step << " seq " << seqs[i] << " pos " << pos);
      REQUIRE(first_bit_mismatch(std::span<const float>(l).subspan(i * V, V),
                                 std::span<const float>(solo[seqs[i]]).subspan((size_t)pos * V, V)) == "");
    }
  }
  for (int s = 0; s < n_seqs; s++) CHECK(kv.length(s) == (int)toks[s].size());
}

// ============================================================================
// Trace and errors
// ============================================================================
TEST_CASE("trace emits every named tensor per layer and position", "[forward][trace]") {
  Model m = small_synthetic(4, 2, true);
  auto toks = test_tokens(m, 5);
  std::map<std::string, int> count;
  std::vector<float> traced_logits;
  Trace tr;
  tr.emit = [&](const std::string& name, int pos, std::span<const float> v) {
    count[name]++;
    if (name == "logits") traced_logits.assign(v.begin(), v.end());
  };
  ForwardOptions o;
  o.trace = &tr;
  KvCache kv(m.config, {});
  auto logits = forward(m, kv, 0, toks, o);
  for (const char* n : {"attn_norm", "q", "k", "v", "attn_out", "attn_proj", "ffn_norm", "ffn_gate",
                        "ffn_up", "ffn_act", "ffn_out", "resid"})
    for (int l = 0; l < m.config.n_layers; l++) {
      INFO(n << " layer " << l);
      CHECK(count["blk." + std::to_string(l) + "." + n] == 5);
    }
  CHECK(count["output_norm"] == 1);
  CHECK(count["logits"] == 1);
  CHECK(first_bit_mismatch(traced_logits, logits) == "");
}

TEST_CASE("forward rejects bad input naming the field", "[forward][errors]") {
  Model m = small_synthetic(4, 2, true);
  KvCache kv(m.config, {});
  std::vector<int> bad = {3, m.config.vocab_size};
  CHECK_THROWS_WITH(forward(m, kv, 0, bad), Catch::Contains("token"));
  CHECK(kv.length(0) == 0);  // nothing appended
  std::vector<int> too_long(m.config.seq_len + 1, 3);
  CHECK_THROWS_WITH(forward(m, kv, 0, too_long), Catch::Contains("position"));
  CHECK_THROWS_WITH(forward(m, kv, 0, std::vector<int>{}), Catch::Contains("tokens"));
  KvCacheOptions ko;
  ko.max_seqs = 2;
  KvCache kv2(m.config, ko);
  std::vector<int> seqs = {1, 1}, toks = {3, 4};
  CHECK_THROWS_WITH(forward_batch(m, kv2, seqs, toks), Catch::Contains("seqs"));
  CHECK_THROWS_WITH(forward(m, kv2, 2, toks), Catch::Contains("seq"));
}

TEST_CASE("admission: activation_bytes is RunState's buffers, refused one byte past available", "[forward][errors]") {
  // Written out buffer by buffer from forward.cpp's RunState and head(), not from the estimate:
  // per row x, xb, proj (dim), att (heads * hd), act (hidden), q and att_local (this rank's query
  // rows), k and v (its kv rows), proj_local (its dim rows), gate and up (its hidden rows), rope
  // cos and sin (hd / 2); the K/V pointer table (2 (pos + 1) per row) and its offsets (long);
  // per logit row the normed input (dim), this rank's logits, and the gathered logits (ranks > 1).
  Config c;
  c.dim = 96, c.n_heads = 6, c.n_kv_heads = 3, c.head_dim = 16, c.hidden_dim = 260, c.vocab_size = 389;
  const std::vector<int> positions = {0, 7, 30};
  for (int ranks = 1; ranks <= 4; ranks++)
    for (int rank = 0; rank < ranks; rank++) {
      INFO(ranks << " ranks, rank " << rank);
      const int g = c.n_heads / c.n_kv_heads;
      const int kvh = split_range(c.n_kv_heads, rank, ranks).size();
      const uint64_t q_local = (uint64_t)kvh * g * c.head_dim, kv_local = (uint64_t)kvh * c.head_dim;
      const uint64_t dim_local = split_range(c.dim, rank, ranks).size();
      const uint64_t hid_local = split_range(c.hidden_dim, rank, ranks).size();
      const uint64_t voc_local = split_range(c.vocab_size, rank, ranks).size();
      uint64_t floats_per_row = 0;
      for (uint64_t w : {(uint64_t)c.dim, (uint64_t)c.dim, q_local, kv_local, kv_local, q_local,
                         (uint64_t)c.n_heads * c.head_dim, dim_local, (uint64_t)c.dim, hid_local, hid_local,
                         (uint64_t)c.hidden_dim, (uint64_t)c.head_dim / 2, (uint64_t)c.head_dim / 2})
        floats_per_row += w;
      const uint64_t pointers = 2 * (1 + 8 + 31);
      for (uint64_t logit_rows : {1, 2, 3}) {
        const uint64_t head_floats = logit_rows * (c.dim + voc_local + (ranks > 1 ? c.vocab_size : 0));
        const uint64_t want = (3 * floats_per_row + head_floats) * 4 + pointers * 8 + 3 * 8;
        const SliceLayout s = slice_layout(c, rank, ranks);
        const uint64_t got = activation_bytes(c, s, ranks, positions, logit_rows);
        CHECK(got == want);
        CHECK_NOTHROW(admit_activations(c, s, ranks, positions, logit_rows, MemoryAvailable{want, "test"}));
        try {
          admit_activations(c, s, ranks, positions, logit_rows, MemoryAvailable{want - 1, "test"});
          FAIL("one byte short was admitted");
        } catch (const InputError& e) {
          CHECK(e.field() == "tokens");
          CHECK_THAT(e.what(), Catch::Contains("needs " + std::to_string(want) + " bytes") &&
                                   Catch::Contains(std::to_string(want - 1) + " bytes"));
        }
      }
    }
  // Saturating: a position near INT_MAX on a huge vocabulary is more than 2^64 bytes, refused.
  c.vocab_size = 1 << 30;
  const std::vector<int> far = {0x7ffffff0};
  CHECK(activation_bytes(c, slice_layout(c, 0, 1), 1, far, UINT64_MAX / 2) == UINT64_MAX);
  CHECK_THROWS_WITH(admit_activations(c, slice_layout(c, 0, 1), 1, far, UINT64_MAX / 2,
                                      MemoryAvailable{UINT64_MAX - 1, "test"}),
                    Catch::Contains("more than 2^64 bytes"));
}

// ============================================================================
// Speed (hidden: run with `test_forward "[.bench]"`)
// ============================================================================
namespace {
// Copies every weight of `m` into one buffer on huge pages (base/huge_pages.h)
// and repoints the model at it (the bench's "huge pages" run).
struct HugeArena {
  FloatBuffer base;
  size_t used = 0;
  const float* put(const WeightMatrix& src, size_t n) { return put(src.f32(), n); }
  const float* put(const float* src, size_t n) {
    std::memcpy(base.get() + used, src, n * sizeof(float));
    used += n;
    return base.get() + used - n;
  }
};
void rehome_on_huge_pages(Model& m, HugeArena& a) {
  const Config& c = m.config;
  size_t qd = (size_t)c.n_heads * c.head_dim, kd = (size_t)c.n_kv_heads * c.head_dim, D = c.dim, F = c.hidden_dim;
  size_t per_layer = 2 * D + 2 * qd * D + 2 * kd * D + 3 * F * D;
  a.base = alloc_floats((size_t)c.vocab_size * D * 2 + D + c.n_layers * per_layer);
  Weights& w = m.weights;
  bool tied = w.classifier == w.token_embedding;
  w.token_embedding = a.put(w.token_embedding, (size_t)c.vocab_size * D);
  for (LayerWeights& l : w.layers) {
    l.attn_norm = a.put(l.attn_norm, D);
    l.wq = a.put(l.wq, qd * D);
    l.wk = a.put(l.wk, kd * D);
    l.wv = a.put(l.wv, kd * D);
    l.wo = a.put(l.wo, D * qd);
    l.ffn_norm = a.put(l.ffn_norm, D);
    l.w_gate = a.put(l.w_gate, F * D);
    l.w_down = a.put(l.w_down, D * F);
    l.w_up = a.put(l.w_up, F * D);
  }
  w.final_norm = a.put(w.final_norm, D);
  w.classifier = tied ? w.token_embedding : a.put(w.classifier, (size_t)c.vocab_size * D);
}

void bench_model(const Model& m, const char* label) {
  // Wall-clock rates, and rates per CPU second (std::clock: process CPU time),
  // which show what an unloaded machine would do when others share the cores.
  auto toks = test_tokens(m, 256);
  using clock = std::chrono::steady_clock;
  KvCache kv(m.config, {});
  forward(m, kv, 0, std::span<const int>(toks).first(1));
  auto t0 = clock::now();
  std::clock_t c0 = std::clock();
  for (int i = 1; i < 128; i++) forward(m, kv, 0, std::span<const int>(&toks[i], 1));
  double decode = 127 / std::chrono::duration<double>(clock::now() - t0).count();
  double decode_cpu = 127 / ((double)(std::clock() - c0) / CLOCKS_PER_SEC);
  ThreadPool pool(2);
  ForwardOptions o;
  o.pool = &pool;
  KvCache kv2(m.config, {});
  t0 = clock::now();
  c0 = std::clock();
  forward(m, kv2, 0, toks, o);
  double prefill = 256 / std::chrono::duration<double>(clock::now() - t0).count();
  double prefill_cpu = 256 / ((double)(std::clock() - c0) / CLOCKS_PER_SEC / 2);
  std::printf("[%s] decode 1 thread (positions 1..127): %.1f tokens/s wall, %.1f per CPU second\n", label, decode, decode_cpu);
  std::printf("[%s] prefill 2 threads (256 tokens): %.1f tokens/s wall, %.1f per 2 CPU seconds\n", label, prefill, prefill_cpu);
}
}  // namespace

TEST_CASE("bench: stories15m-shaped decode (1 thread) and 256-token prefill (2 threads)", "[.bench]") {
  Model m = synthetic_model(synthetic_preset("stories15m"), kDefaultSeed, Vocab{});
  bench_model(m, "4 KiB pages");
  HugeArena arena;
  rehome_on_huge_pages(m, arena);
  bench_model(m, "huge pages");
}
