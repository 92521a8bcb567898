// Ops: every kernel path gives the canonical bits of docs/numerics.md; the
// thread pool covers its range exactly; ops agree with float64 math to within
// float32 rounding (an independent check of the formulas themselves).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>
#include <stdexcept>
#include <vector>

#include "bit_compare.h"
#include "numerics/numerics.h"
#include "reference/compute/isa.h"
#include "reference/compute/ops.h"
#include "base/thread_pool.h"

using namespace oracle;
using oracle::test::first_bit_mismatch;

namespace {
std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// out (n_tok, n_out) straight from the spec: dot_canonical per output.
std::vector<float> matmul_spec(const std::vector<float>& x, const std::vector<float>& w, int n_tok,
                               int k, int n_out) {
  std::vector<float> out((size_t)n_tok * n_out);
  for (int t = 0; t < n_tok; t++)
    for (int i = 0; i < n_out; i++) out[(size_t)t * n_out + i] = num::dot_canonical(&w[(size_t)i * k], &x[(size_t)t * k], k);
  return out;
}
}  // namespace

TEST_CASE("ops::dot equals dot_canonical", "[ops]") {
  for (int n : {1, 7, 8, 15, 16, 17, 31, 48, 64, 172, 288}) {
    auto a = random_vec(n, 1 + n), b = random_vec(n, 100 + n);
    INFO("n = " << n);
    CHECK(num::f32_bits(ops::dot(a.data(), b.data(), n)) ==
          num::f32_bits(num::dot_canonical(a.data(), b.data(), n)));
  }
}

TEST_CASE("matmul: every ISA path this CPU has, every tile shape, equals dot_canonical", "[ops]") {
  for (isa::Isa path : isa::available_isas()) {
    const isa::Kernels& kern = isa::kernels_for(path);
    INFO("ISA path " << isa::isa_name(path));
    for (int k : {1, 5, 16, 17, 40, 172, 288})
      for (int n_tok : {1, 2, 3, 4, 5, 9, 67})
        for (int n_out : {1, 3, 4, 5, 13}) {
          auto x = random_vec((size_t)n_tok * k, k * 31 + n_tok), w = random_vec((size_t)n_out * k, k + n_out, 0.3f);
          auto want = matmul_spec(x, w, n_tok, k, n_out);
          std::vector<float> got(want.size()), full(want.size());
          kern.matmul_rows_f32(got.data(), x.data(), w.data(), n_tok, k, n_out, 0, n_out);
          ops::matmul(full.data(), x.data(), w.data(), n_tok, k, n_out, nullptr);
          INFO("k=" << k << " n_tok=" << n_tok << " n_out=" << n_out);
          CHECK(first_bit_mismatch(got, want) == "");
          CHECK(first_bit_mismatch(full, want) == "");
        }
  }
}

TEST_CASE("matmul: token rows are independent of how many are computed together", "[ops]") {
  int k = 288, n_out = 37, n_tok = 70;
  auto x = random_vec((size_t)n_tok * k, 5), w = random_vec((size_t)n_out * k, 6, 0.1f);
  std::vector<float> all((size_t)n_tok * n_out), one(n_out);
  ops::matmul(all.data(), x.data(), w.data(), n_tok, k, n_out, nullptr);
  for (int t = 0; t < n_tok; t++) {
    ops::matmul(one.data(), &x[(size_t)t * k], w.data(), 1, k, n_out, nullptr);
    INFO("token " << t);
    REQUIRE(first_bit_mismatch(one, std::span<const float>(&all[(size_t)t * n_out], n_out)) == "");
  }
}

TEST_CASE("matmul: 1, 2 and 3 threads give the same bits", "[ops][threads]") {
  int k = 172, n_out = 301, n_tok = 11;
  auto x = random_vec((size_t)n_tok * k, 8), w = random_vec((size_t)n_out * k, 9, 0.1f);
  std::vector<float> ref((size_t)n_tok * n_out);
  ops::matmul(ref.data(), x.data(), w.data(), n_tok, k, n_out, nullptr);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got(ref.size());
    ops::matmul(got.data(), x.data(), w.data(), n_tok, k, n_out, &pool);
    INFO("threads " << threads);
    CHECK(first_bit_mismatch(got, ref) == "");
  }
}

TEST_CASE("matmul agrees with float64 to float32 rounding", "[ops]") {
  int k = 288, n_out = 50;
  auto x = random_vec(k, 10), w = random_vec((size_t)n_out * k, 11);
  std::vector<float> out(n_out);
  ops::matmul(out.data(), x.data(), w.data(), 1, k, n_out, nullptr);
  for (int i = 0; i < n_out; i++) {
    double want = 0, mag = 0;
    for (int j = 0; j < k; j++) {
      want += (double)w[(size_t)i * k + j] * x[j];
      mag += std::fabs((double)w[(size_t)i * k + j] * x[j]);
    }
    CHECK(std::fabs(out[i] - want) <= mag * 1e-6);
  }
}

TEST_CASE("rmsnorm follows the spec and normalises", "[ops]") {
  int n = 288;
  auto x = random_vec(n, 12, 3.0f), w = random_vec(n, 13);
  std::vector<float> out(n);
  ops::rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
  float ss = num::dot_canonical(x.data(), x.data(), n);
  float r = num::div_rn(1.0f, num::sqrt_rn(num::add_rn(num::div_rn(ss, (float)n), 1e-5f)));
  double ss64 = 0;
  for (float v : x) ss64 += (double)v * v;
  double r64 = 1.0 / std::sqrt(ss64 / n + 1e-5);
  for (int k = 0; k < n; k++) {
    REQUIRE(num::f32_bits(out[k]) == num::f32_bits(num::mul_rn(num::mul_rn(x[k], r), w[k])));
    CHECK(std::fabs(out[k] - x[k] * r64 * w[k]) <= 1e-6 * std::fabs(x[k] * r64 * w[k]) + 1e-30);
  }
}

TEST_CASE("swiglu and residual follow the spec", "[ops]") {
  int n = 100;
  auto g = random_vec(n, 14, 8.0f), u = random_vec(n, 15), x = random_vec(n, 16);
  std::vector<float> h(n), x0 = x;
  ops::swiglu(h.data(), g.data(), u.data(), n);
  ops::residual(x.data(), u.data(), n);
  for (int k = 0; k < n; k++) {
    CHECK(num::f32_bits(h[k]) == num::f32_bits(num::mul_rn(num::silu_canonical(g[k]), u[k])));
    double silu = g[k] / (1.0 + std::exp(-(double)g[k]));
    CHECK(std::fabs(h[k] - silu * u[k]) <= 1e-6 * std::fabs(silu * u[k]) + 1e-30);
    CHECK(x[k] == x0[k] + u[k]);
  }
}

TEST_CASE("RoPE: position 0 is the identity, rotations match float64", "[ops][rope]") {
  int hd = 48, n_heads = 2, half = hd / 2;
  std::vector<float> freqs(half), c(half), s(half);
  ops::rope_freqs(freqs.data(), 10000.0f, hd);
  ops::rope_row(c.data(), s.data(), freqs.data(), hd, 0);
  auto v = random_vec(n_heads * hd, 17), v0 = v;
  ops::rope_apply(v.data(), n_heads, hd, c.data(), s.data());
  CHECK(first_bit_mismatch(v, v0) == "");
  for (int pos : {1, 7, 100, 511}) {
    ops::rope_row(c.data(), s.data(), freqs.data(), hd, pos);
    v = v0;
    ops::rope_apply(v.data(), n_heads, hd, c.data(), s.data());
    for (int i = 0; i < n_heads * half; i++) {
      double f = std::pow(10000.0, -2.0 * (i % half) / hd), a = (double)(float)((float)pos * (float)f);
      double x0 = v0[2 * i], x1 = v0[2 * i + 1];
      CHECK(std::fabs(v[2 * i] - (x0 * std::cos(a) - x1 * std::sin(a))) < 1e-5);
      CHECK(std::fabs(v[2 * i + 1] - (x0 * std::sin(a) + x1 * std::cos(a))) < 1e-5);
    }
  }
}

// ---- attention ---------------------------------------------------------------------
namespace {
struct AttnCase {
  int hd, n_pos, kv_dim, offset;
  std::vector<float> q, k, v;       // (hd), (n_pos, kv_dim), (n_pos, kv_dim)
  std::vector<const float*> ptrs;   // (2 * n_pos)
  ops::KvRows rows() {
    ptrs.clear();
    for (int j = 0; j < n_pos; j++) ptrs.push_back(&k[(size_t)j * kv_dim]);
    for (int j = 0; j < n_pos; j++) ptrs.push_back(&v[(size_t)j * kv_dim]);
    return {ptrs.data(), ptrs.data() + n_pos, offset};
  }
};
AttnCase make_case(int hd, int n_pos, uint32_t seed, float scale) {
  AttnCase a{hd, n_pos, 2 * hd, hd, random_vec(hd, seed, scale), random_vec((size_t)n_pos * 2 * hd, seed + 1, scale),
             random_vec((size_t)n_pos * 2 * hd, seed + 2), {}};
  return a;
}
}  // namespace

TEST_CASE("attention matches a float64 softmax", "[ops][attention]") {
  for (int n_pos : {1, 5, 32, 33, 64, 100, 257}) {
    auto a = make_case(48, n_pos, 20 + n_pos, 2.0f);
    std::vector<float> out(48), scratch(48);
    ops::attention(out.data(), a.q.data(), a.rows(), n_pos, 48, scratch.data());
    std::vector<double> sc(n_pos);
    double m = -1e300, sum = 0;
    for (int j = 0; j < n_pos; j++) {
      double d = 0;
      for (int i = 0; i < 48; i++) d += (double)a.q[i] * a.k[(size_t)j * 96 + 48 + i];
      sc[j] = d / std::sqrt(48.0);
      m = std::max(m, sc[j]);
    }
    for (auto& s : sc) sum += (s = std::exp(s - m));
    for (int d = 0; d < 48; d++) {
      double want = 0;
      for (int j = 0; j < n_pos; j++) want += sc[j] / sum * a.v[(size_t)j * 96 + 48 + d];
      INFO("n_pos " << n_pos << " d " << d);
      CHECK(std::fabs(out[d] - want) < 1e-5);
    }
  }
}

TEST_CASE("attention is stable for scores far beyond exp's range", "[ops][attention]") {
  int hd = 48, n_pos = 70;
  auto a = make_case(hd, n_pos, 60, 1.0f);
  for (int i = 0; i < hd; i++) a.q[i] = 10.0f;
  for (int j = 0; j < n_pos; j++)  // scores 0, ~693, ~1386 (exp overflows without max)
    for (int i = 0; i < hd; i++) a.k[(size_t)j * 2 * hd + hd + i] = 10.0f * (float)(j % 3) / (float)(1 + i % 2);
  std::vector<float> out(hd), scratch(hd);
  ops::attention(out.data(), a.q.data(), a.rows(), n_pos, hd, scratch.data());
  for (int d = 0; d < hd; d++) {  // only j % 3 == 2 survive, with equal weights
    double want = 0;
    int n = 0;
    for (int j = 2; j < n_pos; j += 3, n++) want += a.v[(size_t)j * 2 * hd + hd + d];
    CHECK(std::fabs(out[d] - want / n) < 1e-5);
  }
}

TEST_CASE("attention merges chunks of 32 in the spec's order", "[ops][attention]") {
  // Independent transcription of docs/numerics.md: partials per chunk, then merge.
  int hd = 8, n_pos = 75;
  auto a = make_case(hd, n_pos, 40, 3.0f);
  auto rows = a.rows();
  std::vector<float> out(hd), scratch(hd);
  ops::attention(out.data(), a.q.data(), rows, n_pos, hd, scratch.data());
  float M = 0, Ls = 0;
  std::vector<float> O(hd), oc(hd);
  for (int c = 0; c * 32 < n_pos; c++) {
    float mc, sc;
    ops::attention_chunk(a.q.data(), rows, c * 32, std::min(n_pos, c * 32 + 32), hd, &mc, &sc, oc.data());
    if (c == 0) { M = mc; Ls = sc; O = oc; continue; }
    float Mn = mc > M ? mc : M, x = num::exp_canonical(M - Mn), y = num::exp_canonical(mc - Mn);
    Ls = std::fma(sc, y, Ls * x);  // numerics v2: rescale (mul), accumulate the chunk (one fma)
    for (int d = 0; d < hd; d++) O[d] = std::fma(oc[d], y, O[d] * x);
    M = Mn;
  }
  for (int d = 0; d < hd; d++) O[d] = O[d] / Ls;
  CHECK(first_bit_mismatch(out, O) == "");
}

namespace {
// docs/numerics.md §4.1 transcribed for one query (scalar, float32 steps as written there;
// ggml: scores times 1/sqrt(hd), out times 1/L).
std::vector<float> spec_attention(const float* q, const std::vector<const float*>& k,
                                  const std::vector<const float*>& v, int n_pos, int hd, bool ggml) {
  const float scale = num::sqrt_rn((float)hd), inv = 1.0f / scale;
  float M = 0, L = 0;
  std::vector<float> O(hd), oc(hd);
  for (int j0 = 0; j0 < n_pos; j0 += 32) {
    const int j1 = std::min(n_pos, j0 + 32);
    std::vector<float> e;
    float mc = -INFINITY, sc = 0;
    for (int j = j0; j < j1; j++) {
      const float d = num::dot_canonical(q, k[j], hd);
      e.push_back(ggml ? d * inv : d / scale);
      if (e.back() > mc) mc = e.back();
    }
    std::fill(oc.begin(), oc.end(), 0.0f);
    for (int j = j0; j < j1; j++) {
      const float ej = num::exp_canonical(e[j - j0] - mc);
      sc = sc + ej;
      for (int d = 0; d < hd; d++) oc[d] = std::fma(ej, v[j][d], oc[d]);
    }
    if (j0 == 0) {
      M = mc, L = sc, O = oc;
      continue;
    }
    const float Mn = mc > M ? mc : M, a = num::exp_canonical(M - Mn), b = num::exp_canonical(mc - Mn);
    L = std::fma(sc, b, L * a);
    for (int d = 0; d < hd; d++) O[d] = std::fma(oc[d], b, O[d] * a);
    M = Mn;
  }
  for (int d = 0; d < hd; d++) O[d] = ggml ? O[d] * (1.0f / L) : O[d] / L;
  return O;
}
}  // namespace

TEST_CASE("attention_queries: each query's bits are the spec's, whatever its neighbours", "[ops][attention]") {
  std::mt19937 rng(77);
  for (int hd : {8, 16, 20, 64, 80})
    for (int nq : {1, 2, 3, 4, 5, 7, 12, 16, 17, 33})
      for (bool ggml : {false, true}) {
        const int max_pos = 1 + (int)(rng() % 100), kv_dim = 2 * hd;  // kv head 1 of 2
        auto kbuf = random_vec((size_t)max_pos * kv_dim, rng(), 3.0f), vbuf = random_vec((size_t)max_pos * kv_dim, rng());
        std::vector<const float*> ptrs, k, v;  // the cache's rows, then kv head 1's (the spec's view)
        for (int j = 0; j < max_pos; j++) ptrs.push_back(&kbuf[(size_t)j * kv_dim]), k.push_back(ptrs.back() + hd);
        for (int j = 0; j < max_pos; j++) ptrs.push_back(&vbuf[(size_t)j * kv_dim]), v.push_back(ptrs.back() + hd);
        const ops::KvRows rows{ptrs.data(), ptrs.data() + max_pos, hd};
        auto qbuf = random_vec((size_t)nq * hd, rng(), 3.0f);
        std::vector<float> obuf((size_t)nq * hd, -7.0f), scratch((size_t)std::min(nq, ops::kAttnQueries) * hd);
        std::vector<float*> out;
        std::vector<const float*> q;
        std::vector<int> n_pos;
        for (int i = 0; i < nq; i++) {  // neighbouring positions, ends inside and across chunks, repeats
          out.push_back(&obuf[(size_t)i * hd]), q.push_back(&qbuf[(size_t)i * hd]);
          n_pos.push_back(i == 0 ? max_pos : 1 + (int)(rng() % max_pos));
        }
        ops::attention_queries(out.data(), q.data(), n_pos.data(), nq, rows, hd, scratch.data(), ggml);
        for (int i = 0; i < nq; i++) {
          INFO("hd " << hd << " nq " << nq << " query " << i << " n_pos " << n_pos[i] << " ggml " << ggml);
          const std::vector<float> want = spec_attention(q[i], k, v, n_pos[i], hd, ggml);
          CHECK(first_bit_mismatch(std::span<const float>(out[i], hd), want) == "");
        }
      }
}

TEST_CASE("attention_heads: each query's bits are the spec's, across kv heads, warmed or not", "[ops][attention]") {
  std::mt19937 rng(78);
  for (int hd : {16, 64})
    for (int n_kv : {1, 2, 3, 4})
      for (int max_pos : {1, 31, 33, 97, 300, 700})  // 700 x 4 heads of 64: several warm windows
        for (bool warm : {false, true}) {
          const int kv_dim = n_kv * hd;
          auto kbuf = random_vec((size_t)max_pos * kv_dim, rng(), 3.0f);
          auto vbuf = random_vec((size_t)max_pos * kv_dim, rng());
          std::vector<const float*> keys, values;
          for (int j = 0; j < max_pos; j++) keys.push_back(&kbuf[(size_t)j * kv_dim]);
          for (int j = 0; j < max_pos; j++) values.push_back(&vbuf[(size_t)j * kv_dim]);
          std::vector<int> nq, head;  // per group: queries, kv head (in a shuffled order, one head twice)
          for (int g = 0; g < n_kv; g++) nq.push_back(1 + (int)(rng() % ops::kAttnQueries)), head.push_back(g);
          std::shuffle(head.begin(), head.end(), rng);
          nq.push_back(1 + (int)(rng() % 3)), head.push_back(head[0]);
          int total = 0;
          for (int n : nq) total += n;
          auto qbuf = random_vec((size_t)total * hd, rng(), 3.0f);
          std::vector<float> obuf((size_t)total * hd, -7.0f), scratch((size_t)ops::kAttnQueries * hd);
          std::vector<float*> out;
          std::vector<const float*> q;
          std::vector<int> n_pos;
          for (int i = 0; i < total; i++) {  // the last group's queries stop early: chunks none of it reaches
            out.push_back(&obuf[(size_t)i * hd]), q.push_back(&qbuf[(size_t)i * hd]);
            const int reach = i >= total - nq.back() ? std::min(40, max_pos) : max_pos;
            n_pos.push_back(i == 0 ? max_pos : 1 + (int)(rng() % reach));
          }
          std::vector<ops::AttnGroup> groups;
          for (size_t g = 0, at = 0; g < nq.size(); at += nq[g], g++)
            groups.push_back({&out[at], &q[at], &n_pos[at], nq[g], head[g] * hd});
          ops::attention_heads(groups.data(), (int)groups.size(), keys.data(), values.data(), hd, scratch.data(), warm,
                               false);
          for (size_t g = 0, at = 0; g < nq.size(); at += nq[g], g++) {
            std::vector<const float*> k, v;  // kv head head[g]'s rows (the spec's view)
            for (int j = 0; j < max_pos; j++) {
              k.push_back(keys[j] + head[g] * hd);
              v.push_back(values[j] + head[g] * hd);
            }
            for (int i = (int)at; i < (int)at + nq[g]; i++) {
              INFO("hd " << hd << " n_kv " << n_kv << " max_pos " << max_pos << " warm " << warm << " group " << g
                         << " query " << i << " n_pos " << n_pos[i]);
              const std::vector<float> want = spec_attention(q[i], k, v, n_pos[i], hd, false);
              CHECK(first_bit_mismatch(std::span<const float>(out[i], hd), want) == "");
            }
          }
        }
}

TEST_CASE("attention chunk partials are sequential sums of exp(score - max)", "[ops][attention]") {
  int hd = 16, n_pos = 20;
  auto a = make_case(hd, n_pos, 50, 2.0f);
  float m, s;
  std::vector<float> o(hd);
  ops::attention_chunk(a.q.data(), a.rows(), 3, 20, hd, &m, &s, o.data());
  std::vector<float> score;
  float mx = -INFINITY;
  for (int j = 3; j < 20; j++) {
    score.push_back(num::dot_canonical(a.q.data(), &a.k[(size_t)j * 32 + 16], hd) / num::sqrt_rn(16.0f));
    mx = std::max(mx, score.back());
  }
  float sum = 0;
  std::vector<float> oo(hd, 0.0f);
  for (int j = 3; j < 20; j++) {
    float e = num::exp_canonical(score[j - 3] - mx);
    sum += e;
    for (int d = 0; d < hd; d++) oo[d] = std::fma(e, a.v[(size_t)j * 32 + 16 + d], oo[d]);  // v2: one fma
  }
  CHECK(num::f32_bits(m) == num::f32_bits(mx));
  CHECK(num::f32_bits(s) == num::f32_bits(sum));
  CHECK(first_bit_mismatch(o, oo) == "");
}

// ---- thread pool ---------------------------------------------------------------------
TEST_CASE("ThreadPool covers [0, n) exactly once with fixed ranges", "[threads]") {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int n : {0, 1, 3, 100}) {
      std::vector<int> hits(n, 0);
      pool.parallel_for(n, [&](int b, int e) {
        for (int i = b; i < e; i++) hits[i]++;
      });
      for (int i = 0; i < n; i++) REQUIRE(hits[i] == 1);
    }
  }
}

TEST_CASE("ThreadPool::parallel_chunks covers [0, n) exactly once in whole chunks", "[threads]") {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int n : {0, 1, 7, 8, 9, 100, 1001}) {
      for (int chunk : {1, 3, 8, 2000}) {
        std::vector<int> hits(n, 0);
        std::vector<std::pair<int, int>> ranges;  // (begin, end) of every call
        std::mutex m;
        pool.parallel_chunks(n, chunk, [&](int b, int e) {
          for (int i = b; i < e; i++) hits[i]++;
          std::lock_guard<std::mutex> lock(m);
          ranges.push_back({b, e});
        });
        INFO("threads " << threads << " n " << n << " chunk " << chunk);
        for (int i = 0; i < n; i++) REQUIRE(hits[i] == 1);
        const bool one_call = threads == 1 || n <= chunk;  // run inline as one range
        for (auto [b, e] : ranges) {
          if (one_call) REQUIRE((b == 0 && e == n));
          else REQUIRE((b % chunk == 0 && e == std::min(n, b + chunk)));
        }
      }
    }
  }
  ThreadPool pool(2);  // an exception from a chunk reaches the caller
  CHECK_THROWS_AS(pool.parallel_chunks(64, 4, [](int b, int) {
                    if (b == 60) throw std::runtime_error("boom");
                  }),
                  std::runtime_error);
}

TEST_CASE("ThreadPool rethrows a worker's exception", "[threads]") {
  ThreadPool pool(2);
  CHECK_THROWS_AS(pool.parallel_for(10, [](int b, int) {
                    if (b > 0) throw std::runtime_error("boom");
                  }),
                  std::runtime_error);
  int count = 0;  // still usable afterwards
  pool.parallel_for(1, [&](int, int) { count++; });
  CHECK(count == 1);
}
