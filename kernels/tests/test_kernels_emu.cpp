// Deterministic kernels on the host emulation vs the canonical op spec and the
// CPU reference (reference/compute/ops.h), tolerance 0, over many shapes.
// Each case: seeded inputs; `spec` = loops written from docs/numerics.md §4 with
// numerics/numerics.h; `reference` = reference/compute/ops.h; `kernel` = kernels/.
#include <algorithm>
#include <numeric>

#include "kernel_test_support.h"
#include "kernels/argmax.cuh"
#include "kernels/attention.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/embedding.cuh"
#include "kernels/matmul.cuh"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope.cuh"
#include "kernels/sampler.cuh"
#include "kernels/softmax.cuh"
#include "kernels/speculative.cuh"
#include "base/errors.h"
#include "reference/model/model.h"
#include "reference/compute/ops.h"
#include "reference/model/quant.h"
#include "reference/sampling/sampler.h"
#include "reference/generate/speculative.h"

using namespace oracle;
using namespace oracle::kernels::test;
namespace k = oracle::kernels;
using num::add_rn;
using num::div_rn;
using num::mul_rn;
using num::sub_rn;

// ---- matmul f32 ----------------------------------------------------------------
namespace {
Floats spec_matmul(const Floats& x, const Floats& W, int T, int K, int N) {  // out (T, N)
  Floats out((size_t)T * N);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) out[(size_t)t * N + i] = num::dot_canonical(&W[(size_t)i * K], &x[(size_t)t * K], K);
  return out;
}

OpCase matmul_case(int N, int K, int T, uint32_t seed) {
  return {shape_label("matmul_f32", {{"N", N}, {"K", K}, {"T", T}}), seed, [=](uint32_t s) {
            std::mt19937 rng(s);
            Floats W = random_floats(rng, (size_t)N * K, 1.0f), x = random_floats(rng, (size_t)T * K, 2.0f);
            OpOutputs o;
            o.spec = spec_matmul(x, W, T, K, N);
            o.reference.resize((size_t)T * N);
            ops::matmul(o.reference.data(), x.data(), W.data(), T, K, N, nullptr);
            Dev<float> dW(W), dx(x), dout((size_t)T * N);
            k::matmul_f32(dout.get(), dx.get(), dW.get(), T, K, N);
            o.kernel = dout.host();
            return o;
          }};
}
}  // namespace

TEST_CASE("matmul_f32 kernel is bit-exact over shapes", "[emu][matmul]") {
  std::vector<OpCase> cases;
  const int shapes[][3] = {{1, 1, 1},  {7, 5, 3},   {33, 17, 2}, {64, 64, 1}, {17, 100, 4},
                           {512, 64, 1}, {5, 300, 7}, {3, 16, 1},  {16, 15, 2}, {70, 288, 3}};
  uint32_t seed = 100;
  for (auto& s : shapes) cases.push_back(matmul_case(s[0], s[1], s[2], seed++));
  check_cases(cases);
}

// ---- matmul Q8_0 / Q4_0 -----------------------------------------------------------
namespace {
// Random blocks with finite fp16 scales (any quant bytes).
std::vector<uint8_t> random_quant_rows(std::mt19937& rng, DType t, int N, int K) {
  const int block_bytes = t == DType::Q8_0 ? 34 : 18;
  std::vector<uint8_t> w((size_t)N * (K / 32) * block_bytes);
  for (size_t b = 0; b < w.size(); b += block_bytes) {
    uint16_t d = num::f32_to_fp16(uniform(rng, 0.05f));
    w[b] = (uint8_t)(d & 0xff);
    w[b + 1] = (uint8_t)(d >> 8);
    for (int j = 2; j < block_bytes; j++) w[b + j] = (uint8_t)(rng() & 0xff);
  }
  return w;
}

// Spec dequantisation: w = mul_rn(fp16_to_f32(d), (float)q), ggml's layouts.
Floats spec_dequant(DType t, const std::vector<uint8_t>& w, int N, int K) {
  const int block_bytes = t == DType::Q8_0 ? 34 : 18;
  Floats out((size_t)N * K);
  for (size_t e = 0; e < out.size(); e++) {
    const uint8_t* b = &w[(e / 32) * block_bytes];
    float d = num::fp16_to_f32((uint16_t)(b[0] | (b[1] << 8)));
    int j = (int)(e % 32), q;
    if (t == DType::Q8_0) q = (int8_t)b[2 + j];
    else q = j < 16 ? (b[2 + j] & 15) - 8 : (b[2 + j - 16] >> 4) - 8;
    out[e] = mul_rn(d, (float)q);
  }
  return out;
}

OpCase quant_case(DType t, int N, int K, int T, uint32_t seed) {
  const char* name = t == DType::Q8_0 ? "matmul_q8_0" : "matmul_q4_0";
  return {shape_label(name, {{"N", N}, {"K", K}, {"T", T}}), seed, [=](uint32_t s) {
            std::mt19937 rng(s);
            std::vector<uint8_t> W = random_quant_rows(rng, t, N, K);
            Floats x = random_floats(rng, (size_t)T * K, 2.0f);
            OpOutputs o;
            o.spec = spec_matmul(x, spec_dequant(t, W, N, K), T, K, N);
            Floats deq((size_t)N * K);
            dequantize_row(t, W.data(), (int64_t)N * K, deq.data());
            o.reference.resize((size_t)T * N);
            ops::matmul(o.reference.data(), x.data(), deq.data(), T, K, N, nullptr);
            Dev<uint8_t> dW(W);
            Dev<float> dx(x), dout((size_t)T * N);
            if (t == DType::Q8_0) k::matmul_q8_0(dout.get(), dx.get(), dW.get(), T, K, N);
            else k::matmul_q4_0(dout.get(), dx.get(), dW.get(), T, K, N);
            o.kernel = dout.host();
            return o;
          }};
}
}  // namespace

TEST_CASE("dequantizing Q8_0 / Q4_0 GEMV kernels are bit-exact", "[emu][matmul]") {
  std::vector<OpCase> cases;
  const int shapes[][3] = {{9, 32, 1}, {13, 64, 3}, {40, 96, 2}, {3, 256, 5}, {1, 288, 1}};
  uint32_t seed = 200;
  for (auto& s : shapes) {
    cases.push_back(quant_case(DType::Q8_0, s[0], s[1], s[2], seed++));
    cases.push_back(quant_case(DType::Q4_0, s[0], s[1], s[2], seed++));
  }
  check_cases(cases);
  Dev<uint8_t> w(std::vector<uint8_t>(34));
  Dev<float> x(48), out(1);
  CHECK_THROWS_AS(k::matmul_q8_0(out.get(), x.get(), w.get(), 1, 48, 1), std::invalid_argument);
}

// ---- RMSNorm ---------------------------------------------------------------------------
namespace {
OpCase rmsnorm_case(int n, int T, float eps, uint32_t seed) {
  return {shape_label("rmsnorm", {{"n", n}, {"T", T}}), seed, [=](uint32_t s) {
            std::mt19937 rng(s);
            Floats x = random_floats(rng, (size_t)T * n, 3.0f), w = random_floats(rng, n, 1.5f);
            OpOutputs o;
            o.spec.resize(x.size());
            o.reference.resize(x.size());
            for (int t = 0; t < T; t++) {
              const float* xt = &x[(size_t)t * n];
              float ss = num::dot_canonical(xt, xt, n);
              float r = div_rn(1.0f, num::sqrt_rn(add_rn(div_rn(ss, (float)n), eps)));
              for (int i = 0; i < n; i++) o.spec[(size_t)t * n + i] = mul_rn(mul_rn(xt[i], r), w[i]);
              ops::rmsnorm(&o.reference[(size_t)t * n], xt, w.data(), n, eps);
            }
            Dev<float> dx(x), dw(w);
            k::rmsnorm(dx.get(), dx.get(), dw.get(), T, n, eps);  // in place
            o.kernel = dx.host();
            return o;
          }};
}
}  // namespace

TEST_CASE("rmsnorm kernel is bit-exact (in place)", "[emu][rmsnorm]") {
  std::vector<OpCase> cases;
  uint32_t seed = 300;
  for (int n : {1, 7, 16, 17, 64, 100, 288})
    for (int T : {1, 3, 9}) cases.push_back(rmsnorm_case(n, T, n % 2 ? 1e-6f : 1e-5f, seed++));
  check_cases(cases);
}

// ---- RoPE -------------------------------------------------------------------------------
namespace {
struct RopeTables {
  Floats cos_t, sin_t;  // (seq_len, head_dim/2)
};
RopeTables rope_tables(float theta, int head_dim, int seq_len) {
  RopeTables r{Floats((size_t)seq_len * head_dim / 2), Floats((size_t)seq_len * head_dim / 2)};
  for (int p = 0; p < seq_len; p++)
    for (int i = 0; i < head_dim / 2; i++)
      num::rope_cos_sin(p, num::rope_freq(theta, i, head_dim), &r.cos_t[(size_t)p * head_dim / 2 + i],
                        &r.sin_t[(size_t)p * head_dim / 2 + i]);
  return r;
}

void spec_rope(float* v, int heads, int hd, const float* c, const float* s) {
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < hd / 2; i++) {
      float* p = v + h * hd + 2 * i;
      float x0 = p[0], x1 = p[1];
      p[0] = sub_rn(mul_rn(x0, c[i]), mul_rn(x1, s[i]));
      p[1] = add_rn(mul_rn(x0, s[i]), mul_rn(x1, c[i]));
    }
}

OpCase rope_case(int n_heads, int n_kv, int hd, int T, float theta, uint32_t seed) {
  return {shape_label("rope", {{"heads", n_heads}, {"kv", n_kv}, {"hd", hd}, {"T", T}}), seed, [=](uint32_t s) {
            const int seq_len = 200;
            std::mt19937 rng(s);
            Floats q = random_floats(rng, (size_t)T * n_heads * hd, 2.0f);
            Floats kk = random_floats(rng, (size_t)T * n_kv * hd, 2.0f);
            std::vector<int> pos(T);
            for (int& p : pos) p = (int)(rng() % seq_len);
            RopeTables tab = rope_tables(theta, hd, seq_len);
            OpOutputs o;
            Floats sq = q, sk = kk, rq = q, rk = kk, freqs(hd / 2), c(hd / 2), sn(hd / 2);
            ops::rope_freqs(freqs.data(), theta, hd);
            for (int t = 0; t < T; t++) {
              const float* ct = &tab.cos_t[(size_t)pos[t] * hd / 2];
              const float* st = &tab.sin_t[(size_t)pos[t] * hd / 2];
              spec_rope(&sq[(size_t)t * n_heads * hd], n_heads, hd, ct, st);
              spec_rope(&sk[(size_t)t * n_kv * hd], n_kv, hd, ct, st);
              ops::rope_row(c.data(), sn.data(), freqs.data(), hd, pos[t]);
              ops::rope_apply(&rq[(size_t)t * n_heads * hd], n_heads, hd, c.data(), sn.data());
              ops::rope_apply(&rk[(size_t)t * n_kv * hd], n_kv, hd, c.data(), sn.data());
            }
            o.spec = sq;
            o.spec.insert(o.spec.end(), sk.begin(), sk.end());
            o.reference = rq;
            o.reference.insert(o.reference.end(), rk.begin(), rk.end());
            Dev<float> dq(q), dk(kk), dc(tab.cos_t), ds(tab.sin_t);
            Dev<int> dpos(pos);
            k::rope(dq.get(), dk.get(), dpos.get(), dc.get(), ds.get(), T, n_heads, n_kv, hd);
            o.kernel = dq.host();
            Floats kh = dk.host();
            o.kernel.insert(o.kernel.end(), kh.begin(), kh.end());
            return o;
          }};
}
}  // namespace

TEST_CASE("rope kernel is bit-exact with the shared host tables", "[emu][rope]") {
  std::vector<OpCase> cases;
  uint32_t seed = 400;
  const int heads[][2] = {{1, 1}, {4, 2}, {8, 1}, {8, 8}};
  for (int hd : {8, 64, 128})
    for (auto& h : heads)
      for (int T : {1, 5}) cases.push_back(rope_case(h[0], h[1], hd, T, hd == 128 ? 500000.0f : 10000.0f, seed++));
  check_cases(cases);
}

// ---- elementwise, embedding -------------------------------------------------------------
TEST_CASE("swiglu, residual, bias and embedding kernels are bit-exact", "[emu][elementwise]") {
  std::vector<OpCase> cases;
  uint32_t seed = 500;
  for (int n : {1, 5, 172, 257, 1000}) {
    cases.push_back({shape_label("swiglu", {{"n", n}}), seed++, [n](uint32_t s) {
                       std::mt19937 rng(s);
                       Floats g = random_floats(rng, n, 12.0f), u = random_floats(rng, n, 3.0f);
                       OpOutputs o;
                       for (int i = 0; i < n; i++)
                         o.spec.push_back(mul_rn(div_rn(g[i], add_rn(1.0f, num::exp_canonical(-g[i]))), u[i]));
                       o.reference.resize(n);
                       ops::swiglu(o.reference.data(), g.data(), u.data(), n);
                       Dev<float> dg(g), du(u);
                       k::swiglu(dg.get(), dg.get(), du.get(), n);  // in place over gate
                       o.kernel = dg.host();
                       return o;
                     }});
    cases.push_back({shape_label("residual", {{"n", n}}), seed++, [n](uint32_t s) {
                       std::mt19937 rng(s);
                       Floats x = random_floats(rng, n, 5.0f), y = random_floats(rng, n, 5.0f);
                       OpOutputs o;
                       for (int i = 0; i < n; i++) o.spec.push_back(add_rn(x[i], y[i]));
                       o.reference = x;
                       ops::residual(o.reference.data(), y.data(), n);
                       Dev<float> dx(x), dy(y);
                       k::residual_add(dx.get(), dy.get(), n);
                       o.kernel = dx.host();
                       return o;
                     }});
  }
  for (std::pair<int, int> wr : {std::pair{16, 1}, {64, 3}, {80, 7}}) {  // qwen2 q/k/v bias
    const int width = wr.first, rows = wr.second;  // not a structured binding: clang 14 cannot capture one
    cases.push_back({shape_label("bias", {{"width", width}, {"rows", rows}}), seed++, [width, rows](uint32_t s) {
                       std::mt19937 rng(s);
                       Floats y = random_floats(rng, (size_t)width * rows, 5.0f), b = random_floats(rng, width, 1.0f);
                       OpOutputs o;
                       for (int r = 0; r < rows; r++)
                         for (int k = 0; k < width; k++) o.spec.push_back(add_rn(y[(size_t)r * width + k], b[k]));
                       o.reference = y;
                       for (int r = 0; r < rows; r++) ops::add_bias(&o.reference[(size_t)r * width], b.data(), width);
                       Dev<float> dy(y), db(b);
                       k::add_bias_rows(dy.get(), db.get(), rows, width);
                       o.kernel = dy.host();
                       return o;
                     }});
  }
  cases.push_back({"embedding vocab=37 dim=19 T=6", seed++, [](uint32_t s) {
                     std::mt19937 rng(s);
                     const int vocab = 37, dim = 19;
                     Floats table = random_floats(rng, (size_t)vocab * dim, 1.0f);
                     std::vector<int> tok = {0, 36, 5, 5, 17, 1};
                     OpOutputs o;
                     for (int t : tok) o.spec.insert(o.spec.end(), &table[(size_t)t * dim], &table[(size_t)(t + 1) * dim]);
                     Dev<float> dt(table), dout(tok.size() * dim);
                     Dev<int> dtok(tok);
                     k::embedding(dout.get(), dt.get(), dtok.get(), (int)tok.size(), vocab, dim);
                     o.kernel = dout.host();
                     return o;
                   }});
  check_cases(cases);
}

// ---- softmax, argmax ------------------------------------------------------------------
namespace {
// Rows with a mix of finite values, -inf entries, a fully masked row, a NaN.
Floats softmax_rows_input(std::mt19937& rng, int n, int R) {
  Floats x = random_floats(rng, (size_t)n * R, 20.0f);
  const float ninf = -num::inf_f32();
  for (int r = 0; r < R; r++) {
    float* row = &x[(size_t)r * n];
    if (r % 4 == 1)
      for (int i = 0; i < n; i += 3) row[i] = ninf;
    if (r % 4 == 2) std::fill(row, row + n, ninf);
    if (r == 3) row[n / 2] = num::f32_from_bits(0x7fc00000u);
  }
  return x;
}
}  // namespace

TEST_CASE("softmax_rows kernel equals softmax_canonical", "[emu][softmax]") {
  std::vector<OpCase> cases;
  uint32_t seed = 600;
  for (int n : {1, 5, 16, 17, 100, 512})
    for (int R : {1, 4, 9})
      cases.push_back({shape_label("softmax", {{"n", n}, {"R", R}}), seed++, [n, R](uint32_t s) {
                         std::mt19937 rng(s);
                         Floats x = softmax_rows_input(rng, n, R);
                         OpOutputs o;
                         o.spec = x;
                         Floats sums(R);
                         for (int r = 0; r < R; r++) sums[r] = num::softmax_canonical(&o.spec[(size_t)r * n], n);
                         o.spec.insert(o.spec.end(), sums.begin(), sums.end());
                         Dev<float> dx(x), dsum(R);
                         k::softmax_rows(dx.get(), dsum.get(), R, n);
                         o.kernel = dx.host();
                         Floats ks = dsum.host();
                         o.kernel.insert(o.kernel.end(), ks.begin(), ks.end());
                         return o;
                       }});
  check_cases(cases);
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

// ---- attention over the paged KV cache -------------------------------------------------------
namespace {
struct AttnParams {
  k::AttentionVersion version;
  int n_heads, n_kv, hd, block_size;
  std::vector<int> seq_lens;  // tokens per sequence (all stored in the cache)
  int decode_seq;             // this sequence contributes all its positions as queries (prefill)
};

// Spec attention for one query (head_dim out), contiguous K/V (n_pos, kv_dim).
void spec_attention(float* out, const float* q, const float* K, const float* V, int n_pos, int kv_dim,
                    int off, int hd) {
  float M = 0, L = 0;
  Floats O(hd), oc(hd);
  const float scale = num::sqrt_rn((float)hd);
  for (int j0 = 0; j0 < n_pos; j0 += 32) {
    int j1 = std::min(n_pos, j0 + 32);
    float sc[32], m = -num::inf_f32(), s = 0;
    for (int j = j0; j < j1; j++) {
      sc[j - j0] = div_rn(num::dot_canonical(q, K + (size_t)j * kv_dim + off, hd), scale);
      if (sc[j - j0] > m) m = sc[j - j0];
    }
    std::fill(oc.begin(), oc.end(), 0.0f);
    for (int j = j0; j < j1; j++) {
      float e = num::exp_canonical(sub_rn(sc[j - j0], m));
      s = add_rn(s, e);
      for (int d = 0; d < hd; d++) oc[d] = add_rn(oc[d], mul_rn(e, V[(size_t)j * kv_dim + off + d]));
    }
    if (j0 == 0) {
      M = m, L = s, O = oc;
      continue;
    }
    float Mn = m > M ? m : M, a = num::exp_canonical(sub_rn(M, Mn)), b = num::exp_canonical(sub_rn(m, Mn));
    L = add_rn(mul_rn(L, a), mul_rn(s, b));
    for (int d = 0; d < hd; d++) O[d] = add_rn(mul_rn(O[d], a), mul_rn(oc[d], b));
    M = Mn;
  }
  for (int d = 0; d < hd; d++) out[d] = div_rn(O[d], L);
}

OpOutputs run_attention(const AttnParams& P, uint32_t s) {
  std::mt19937 rng(s);
  const int kv_dim = P.n_kv * P.hd, qdim = P.n_heads * P.hd, n_seqs = (int)P.seq_lens.size();
  // Per-sequence contiguous K/V, then queries: every position of `decode_seq`
  // (a prefill) plus the last position of every other sequence (decode).
  std::vector<Floats> K(n_seqs), V(n_seqs);
  for (int q = 0; q < n_seqs; q++) {
    K[q] = random_floats(rng, (size_t)P.seq_lens[q] * kv_dim, 1.5f);
    V[q] = random_floats(rng, (size_t)P.seq_lens[q] * kv_dim, 1.0f);
  }
  std::vector<int> qseq, qpos;
  for (int q = 0; q < n_seqs; q++)
    for (int p = (q == P.decode_seq ? 0 : P.seq_lens[q] - 1); p < P.seq_lens[q]; p++) qseq.push_back(q), qpos.push_back(p);
  const int T = (int)qseq.size();
  Floats Q = random_floats(rng, (size_t)T * qdim, 1.5f);
  OpOutputs o;
  o.spec.resize((size_t)T * qdim);
  o.reference.resize((size_t)T * qdim);
  Floats scratch(P.hd);
  const int group = P.n_heads / P.n_kv;
  for (int t = 0; t < T; t++) {
    const int q = qseq[t];
    std::vector<const float*> kr(qpos[t] + 1), vr(qpos[t] + 1);
    for (int j = 0; j <= qpos[t]; j++) kr[j] = &K[q][(size_t)j * kv_dim], vr[j] = &V[q][(size_t)j * kv_dim];
    for (int h = 0; h < P.n_heads; h++) {
      const int off = (h / group) * P.hd;
      const float* qh = &Q[(size_t)t * qdim + h * P.hd];
      spec_attention(&o.spec[(size_t)t * qdim + h * P.hd], qh, K[q].data(), V[q].data(), qpos[t] + 1, kv_dim, off, P.hd);
      ops::KvRows rows{kr.data(), vr.data(), off};
      ops::attention(&o.reference[(size_t)t * qdim + h * P.hd], qh, rows, qpos[t] + 1, P.hd, scratch.data());
    }
  }
  // Paged layout: logical blocks mapped to a shuffled set of pool blocks.
  const int bs = P.block_size;
  int max_blocks = 0;
  for (int len : P.seq_lens) max_blocks = std::max(max_blocks, (len + bs - 1) / bs);
  std::vector<int> pool_ids(n_seqs * max_blocks);
  std::iota(pool_ids.begin(), pool_ids.end(), 0);
  std::shuffle(pool_ids.begin(), pool_ids.end(), rng);
  Dev<float> kpool((size_t)n_seqs * max_blocks * bs * kv_dim), vpool((size_t)n_seqs * max_blocks * bs * kv_dim);
  Dev<int> table(pool_ids);
  k::PagedKvLayer kv{kpool.get(), vpool.get(), table.get(), bs, max_blocks, kv_dim};
  for (int q = 0; q < n_seqs; q++) {  // store each sequence through the kernel
    std::vector<int> sseq(P.seq_lens[q], q), spos(P.seq_lens[q]);
    std::iota(spos.begin(), spos.end(), 0);
    Dev<float> dk(K[q]), dv(V[q]);
    Dev<int> ds(sseq), dp(spos);
    k::kv_store(kv, dk.get(), dv.get(), ds.get(), dp.get(), P.seq_lens[q]);
  }
  const int max_pos = *std::max_element(qpos.begin(), qpos.end());
  k::AttentionShape shape{P.n_heads, P.n_kv, P.hd};
  Dev<float> dq(Q), dout((size_t)T * qdim), ws(k::attention_workspace_floats(T, shape, max_pos));
  Dev<int> dseq(qseq), dpos(qpos);
  k::attention(dout.get(), dq.get(), kv, dseq.get(), dpos.get(), T, max_pos, shape, ws.get(), nullptr, P.version);
  o.kernel = dout.host();
  return o;
}
}  // namespace

TEST_CASE("paged attention kernels are bit-exact (prefill + decode batch, GQA, block sizes)", "[emu][attention]") {
  std::vector<OpCase> cases;
  uint32_t seed = 800;
  const int heads[][3] = {{2, 2, 8}, {4, 2, 64}, {8, 2, 16}, {8, 1, 8}, {4, 4, 128}, {2, 1, 256}};  // 256: no tile
  for (auto version : {k::AttentionVersion::Naive, k::AttentionVersion::Tiled})
    for (auto& h : heads)
      for (int bs : {1, 3, 16}) {
        AttnParams p{version, h[0], h[1], h[2], bs, {1, 31, 33, 70}, (int)(seed % 4)};
        const long v = version == k::AttentionVersion::Tiled ? 2 : 1;
        cases.push_back({shape_label("attention", {{"v", v}, {"heads", h[0]}, {"kv", h[1]}, {"hd", h[2]}, {"block", bs}}),
                         seed++, [p](uint32_t s) { return run_attention(p, s); }});
      }
  check_cases(cases);
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
