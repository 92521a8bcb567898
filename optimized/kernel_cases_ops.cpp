// Kernel cases (optimized/kernel_cases.h): RMSNorm, RoPE, SwiGLU, residual, bias,
// embedding and softmax. Each case states its bytes (device reads + writes of one
// call) and flops; `spec` is the loop written from docs/numerics.md §4 over
// numerics.h, `reference` the reference/compute/ops.h function.
#include <algorithm>
#include <memory>

#include "kernels/elementwise.cuh"
#include "kernels/embedding.cuh"
#include "kernels/rmsnorm.cuh"
#include "reference/compute/qmatmul_ggml.h"
#include "kernels/rope.cuh"
#include "kernels/softmax.cuh"
#include "optimized/kernel_cases.h"
#include "reference/compute/ops.h"

namespace oracle::optimized::cases {
namespace k = oracle::kernels;
using num::add_rn;
using num::div_rn;
using num::mul_rn;
using num::sub_rn;
namespace {

std::string dims(const std::string& op, std::initializer_list<std::pair<const char*, long>> d) {
  std::string s = op;
  for (auto& [name, v] : d) s += std::string(" ") + name + "=" + std::to_string(v);
  return s;
}

// ---- RMSNorm (in place): bytes = 4 (2 T n + n), flops = 4 T n + 3 T (dot, scale, weight; mean, eps, rsqrt) ----
struct RmsState {
  int n, T;
  float eps;
  Floats x, w;
  Dev<float> dx, dw;
  RmsState(int n_, int T_, float e, Floats xs, Floats ws)
      : n(n_), T(T_), eps(e), x(std::move(xs)), w(std::move(ws)), dx(x), dw(w) {}
  CaseResult result() {
    Expected spec{"spec", Floats(x.size())}, ref{"reference", Floats(x.size())};
    for (int t = 0; t < T; t++) {
      const float* xt = &x[(size_t)t * n];
      const float ss = num::dot_canonical(xt, xt, n);
      const float r = div_rn(1.0f, num::sqrt_rn(add_rn(div_rn(ss, (float)n), eps)));
      for (int i = 0; i < n; i++) spec.values[(size_t)t * n + i] = mul_rn(mul_rn(xt[i], r), w[i]);
      ops::rmsnorm(&ref.values[(size_t)t * n], xt, w.data(), n, eps);
    }
    return {{spec, ref}, dx.host(), {}};
  }
};

KernelCase rmsnorm_case(int n, int T, float eps, uint32_t seed) {
  return {"rmsnorm", dims("rmsnorm", {{"n", n}, {"T", T}}), seed, Tolerance::Exact, 4.0 * (2.0 * T * n + n),
          4.0 * T * n + 3.0 * T, [=](uint32_t s) {
            std::mt19937 rng(s);
            Floats x = random_floats(rng, (size_t)T * n, 3.0f), w = random_floats(rng, n, 1.5f);
            auto st = std::make_shared<RmsState>(n, T, eps, std::move(x), std::move(w));
            return CaseRun{[st] { k::rmsnorm(st->dx.get(), st->dx.get(), st->dw.get(), st->T, st->n, st->eps); },
                           [st] { return st->result(); }};
          }};
}

// ---- RMSNorm of the ggml profile (in place): reference rmsnorm_ggml (float64 sum of squares) ----
struct RmsGgmlState : RmsState {
  using RmsState::RmsState;
  CaseResult result() {
    Expected ref{"reference", Floats(x.size())};
    for (int t = 0; t < T; t++) ops::rmsnorm_ggml(&ref.values[(size_t)t * n], &x[(size_t)t * n], w.data(), n, eps);
    return {{ref}, dx.host(), {}};
  }
};

KernelCase rmsnorm_ggml_case(int n, int T, float eps, uint32_t seed) {
  return {"rmsnorm_ggml", dims("rmsnorm_ggml", {{"n", n}, {"T", T}}), seed, Tolerance::Exact, 4.0 * (2.0 * T * n + n),
          4.0 * T * n + 3.0 * T, [=](uint32_t s) {
            std::mt19937 rng(s);
            Floats x = random_floats(rng, (size_t)T * n, 3.0f), w = random_floats(rng, n, 1.5f);
            auto st = std::make_shared<RmsGgmlState>(n, T, eps, std::move(x), std::move(w));
            return CaseRun{[st] { k::rmsnorm_ggml(st->dx.get(), st->dx.get(), st->dw.get(), st->T, st->n, st->eps); },
                           [st] { return st->result(); }};
          }};
}

// ---- RoPE (in place over q and k, the shared host tables) --------------------------------------------
// bytes = 4 (2 T (heads + kv) hd + T hd) + 4 T (q, k read and written; a cos and a sin row per token; pos);
// flops = 3 T (heads + kv) hd (6 per rotated pair).
struct RopeShape {
  int heads, kv, hd, T;
  float theta;
};
constexpr int kRopeSeqLen = 200;

void spec_rope(float* v, int heads, int hd, const float* c, const float* s) {
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < hd / 2; i++) {
      float* p = v + h * hd + 2 * i;
      const float x0 = p[0], x1 = p[1];
      p[0] = sub_rn(mul_rn(x0, c[i]), mul_rn(x1, s[i]));
      p[1] = add_rn(mul_rn(x0, s[i]), mul_rn(x1, c[i]));
    }
}

struct RopeState {
  RopeShape r;
  Floats q, kk, cos_t, sin_t;  // tables (seq_len, hd / 2)
  std::vector<int> pos;
  Dev<float> dq, dk, dc, ds;
  Dev<int> dpos;
  RopeState(RopeShape rs, Floats q_, Floats k_, Floats c, Floats s, std::vector<int> p)
      : r(rs), q(std::move(q_)), kk(std::move(k_)), cos_t(std::move(c)), sin_t(std::move(s)), pos(std::move(p)),
        dq(q), dk(kk), dc(cos_t), ds(sin_t), dpos(pos) {}
  CaseResult result() {
    const int hd = r.hd, half = hd / 2;
    Floats sq = q, sk = kk, rq = q, rk = kk, freqs(half), c(half), sn(half);
    ops::rope_freqs(freqs.data(), r.theta, hd);
    for (int t = 0; t < r.T; t++) {
      const float* ct = &cos_t[(size_t)pos[t] * half];
      const float* st = &sin_t[(size_t)pos[t] * half];
      spec_rope(&sq[(size_t)t * r.heads * hd], r.heads, hd, ct, st);
      spec_rope(&sk[(size_t)t * r.kv * hd], r.kv, hd, ct, st);
      ops::rope_row(c.data(), sn.data(), freqs.data(), hd, pos[t]);
      ops::rope_apply(&rq[(size_t)t * r.heads * hd], r.heads, hd, c.data(), sn.data());
      ops::rope_apply(&rk[(size_t)t * r.kv * hd], r.kv, hd, c.data(), sn.data());
    }
    sq.insert(sq.end(), sk.begin(), sk.end());
    rq.insert(rq.end(), rk.begin(), rk.end());
    Floats got = dq.host(), kh = dk.host();
    got.insert(got.end(), kh.begin(), kh.end());
    return {{{"spec", sq}, {"reference", rq}}, got, {}};
  }
};

std::shared_ptr<RopeState> rope_state(const RopeShape& r, uint32_t s) {
  std::mt19937 rng(s);
  Floats q = random_floats(rng, (size_t)r.T * r.heads * r.hd, 2.0f);
  Floats kk = random_floats(rng, (size_t)r.T * r.kv * r.hd, 2.0f);
  std::vector<int> pos(r.T);
  for (int& p : pos) p = (int)(rng() % kRopeSeqLen);
  const size_t half = (size_t)r.hd / 2;
  Floats c(kRopeSeqLen * half), sn(kRopeSeqLen * half);
  for (int p = 0; p < kRopeSeqLen; p++)
    for (size_t i = 0; i < half; i++)
      num::rope_cos_sin(p, num::rope_freq(r.theta, (int)i, r.hd), &c[p * half + i], &sn[p * half + i]);
  return std::make_shared<RopeState>(r, std::move(q), std::move(kk), std::move(c), std::move(sn), std::move(pos));
}

KernelCase rope_case(RopeShape r, uint32_t seed) {
  const double elems = (double)r.T * (r.heads + r.kv) * r.hd;
  return {"rope", dims("rope", {{"heads", r.heads}, {"kv", r.kv}, {"hd", r.hd}, {"T", r.T}}), seed, Tolerance::Exact,
          4.0 * (2.0 * elems + (double)r.T * r.hd) + 4.0 * r.T, 3.0 * elems, [r](uint32_t s) {
            auto st = rope_state(r, s);
            return CaseRun{[st] {
                             const RopeShape& p = st->r;
                             k::rope(st->dq.get(), st->dk.get(), st->dpos.get(), st->dc.get(), st->ds.get(), p.T,
                                     p.heads, p.kv, p.hd);
                           },
                           [st] { return st->result(); }};
          }};
}

// ---- elementwise: two float inputs, in place over the first ---------------------------------------------
// swiglu  h = gate / (1 + exp(-gate)) * up: bytes 12 n, flops 5 n (exp counted as one);
// residual x += y:                        bytes 12 n, flops n;
// bias    y[r, :] += b (rows x width):     bytes 4 (2 rows width + width), flops rows width.
enum class Elementwise { Swiglu, Residual, Bias };

struct PairState {
  Elementwise op;
  int n, rows;  // n elements of the first input (rows x width for bias; width = second's size)
  Floats a, b;
  Dev<float> da, db;
  PairState(Elementwise o, int rows_, Floats a_, Floats b_)
      : op(o), n((int)a_.size()), rows(rows_), a(std::move(a_)), b(std::move(b_)), da(a), db(b) {}
  void launch() {
    if (op == Elementwise::Swiglu) k::swiglu(da.get(), da.get(), db.get(), n);
    else if (op == Elementwise::Residual) k::residual_add(da.get(), db.get(), n);
    else k::add_bias_rows(da.get(), db.get(), rows, (int)b.size());
  }
  CaseResult result() {
    Expected spec{"spec", Floats(a.size())}, ref{"reference", a};
    const int width = (int)b.size();
    for (int i = 0; i < n; i++)
      spec.values[i] = op == Elementwise::Swiglu ? mul_rn(div_rn(a[i], add_rn(1.0f, num::exp_canonical(-a[i]))), b[i])
                       : op == Elementwise::Residual ? add_rn(a[i], b[i])
                                                     : add_rn(a[i], b[i % width]);
    if (op == Elementwise::Swiglu) ops::swiglu(ref.values.data(), a.data(), b.data(), n);
    if (op == Elementwise::Residual) ops::residual(ref.values.data(), b.data(), n);
    if (op == Elementwise::Bias)
      for (int r = 0; r < rows; r++) ops::add_bias(&ref.values[(size_t)r * width], b.data(), width);
    return {{spec, ref}, da.host(), {}};
  }
};

KernelCase pair_case(Elementwise op, int n, int rows, uint32_t seed) {
  const char* name = op == Elementwise::Swiglu ? "swiglu" : op == Elementwise::Residual ? "residual" : "bias";
  const double total = op == Elementwise::Bias ? (double)n * rows : n;
  const std::string label = op == Elementwise::Bias ? dims(name, {{"width", n}, {"rows", rows}}) : dims(name, {{"n", n}});
  return {name, label, seed, Tolerance::Exact, op == Elementwise::Bias ? 4.0 * (2.0 * total + n) : 12.0 * n,
          op == Elementwise::Swiglu ? 5.0 * n : total, [=](uint32_t s) {
            std::mt19937 rng(s);
            const float sa = op == Elementwise::Swiglu ? 12.0f : 5.0f, sb = op == Elementwise::Swiglu ? 3.0f
                                                                           : op == Elementwise::Residual ? 5.0f : 1.0f;
            Floats a = random_floats(rng, (size_t)total, sa), b = random_floats(rng, n, sb);
            auto st = std::make_shared<PairState>(op, rows, std::move(a), std::move(b));
            return CaseRun{[st] { st->launch(); }, [st] { return st->result(); }};
          }};
}

// ---- embedding: bytes = 4 (2 T dim) + 4 T (rows read and written, the ids), flops 0 ---------------------
struct EmbedState {
  int vocab, dim;
  Floats table;
  std::vector<int> tok;
  Dev<float> dt, dout;
  Dev<int> dtok;
  EmbedState(int v, int d, Floats t, std::vector<int> ids)
      : vocab(v), dim(d), table(std::move(t)), tok(std::move(ids)), dt(table), dout(tok.size() * d), dtok(tok) {}
  CaseResult result() {
    Expected spec{"spec", {}};
    for (int t : tok) spec.values.insert(spec.values.end(), &table[(size_t)t * dim], &table[(size_t)(t + 1) * dim]);
    return {{spec}, dout.host(), {}};
  }
};

KernelCase embedding_case(int vocab, int dim, std::vector<int> tok, uint32_t seed) {
  const double T = (double)tok.size();
  return {"embedding", dims("embedding", {{"vocab", vocab}, {"dim", dim}, {"T", (long)tok.size()}}), seed,
          Tolerance::Exact, 4.0 * 2.0 * T * dim + 4.0 * T, 0.0, [=](uint32_t s) {
            std::mt19937 rng(s);
            auto st = std::make_shared<EmbedState>(vocab, dim, random_floats(rng, (size_t)vocab * dim, 1.0f), tok);
            return CaseRun{[st] { k::embedding(st->dout.get(), st->dt.get(), st->dtok.get(), (int)st->tok.size(),
                                               st->vocab, st->dim); },
                           [st] { return st->result(); }};
          }};
}

// ---- softmax_rows (in place, row sums out): bytes = 4 (2 R n + R), flops = 4 R n (sub, exp, add, div) ----
// Rows mix finite values, -inf entries, a fully masked row and a NaN. spec: softmax_canonical.
Floats softmax_input(std::mt19937& rng, int n, int R) {
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

struct SoftmaxState {
  int n, R;
  Floats x;
  Dev<float> dx, dsum;
  SoftmaxState(int n_, int R_, Floats xs) : n(n_), R(R_), x(std::move(xs)), dx(x), dsum((size_t)R_) {}
  CaseResult result() {
    Expected spec{"spec", x};
    Floats sums(R);
    for (int r = 0; r < R; r++) sums[r] = num::softmax_canonical(&spec.values[(size_t)r * n], n);
    spec.values.insert(spec.values.end(), sums.begin(), sums.end());
    Floats got = dx.host(), ks = dsum.host();
    got.insert(got.end(), ks.begin(), ks.end());
    return {{spec}, got, {}};
  }
};

KernelCase softmax_case(int n, int R, uint32_t seed) {
  return {"softmax", dims("softmax", {{"n", n}, {"R", R}}), seed, Tolerance::Exact, 4.0 * (2.0 * R * n + R),
          4.0 * R * n, [=](uint32_t s) {
            std::mt19937 rng(s);
            auto st = std::make_shared<SoftmaxState>(n, R, softmax_input(rng, n, R));
            return CaseRun{[st] { k::softmax_rows(st->dx.get(), st->dsum.get(), st->R, st->n); },
                           [st] { return st->result(); }};
          }};
}

void add_check(std::vector<KernelCase>& out) {
  uint32_t seed = 300;
  for (int n : {1, 7, 16, 17, 64, 100, 288})
    for (int T : {1, 3, 9}) out.push_back(rmsnorm_case(n, T, n % 2 ? 1e-6f : 1e-5f, seed++));
  for (int n : {1, 17, 64, 288, 576})
    for (int T : {1, 4}) out.push_back(rmsnorm_ggml_case(n, T, n % 2 ? 1e-6f : 1e-5f, seed++));
  seed = 400;
  const int heads[][2] = {{1, 1}, {4, 2}, {8, 1}, {8, 8}};
  for (int hd : {8, 64, 128})
    for (auto& h : heads)
      for (int T : {1, 5}) out.push_back(rope_case({h[0], h[1], hd, T, hd == 128 ? 500000.0f : 10000.0f}, seed++));
  seed = 500;
  for (int n : {1, 5, 172, 257, 1000}) {
    out.push_back(pair_case(Elementwise::Swiglu, n, 1, seed++));
    out.push_back(pair_case(Elementwise::Residual, n, 1, seed++));
  }
  for (auto [width, rows] : {std::pair{16, 1}, {64, 3}, {80, 7}})  // qwen2 q/k/v bias
    out.push_back(pair_case(Elementwise::Bias, width, rows, seed++));
  out.push_back(embedding_case(37, 19, {0, 36, 5, 5, 17, 1}, seed++));
  seed = 600;
  for (int n : {1, 5, 16, 17, 100, 512})
    for (int R : {1, 4, 9}) out.push_back(softmax_case(n, R, seed++));
}

// One case per op: tiny, or llama-3-8B's decode step (dim 4096, 32 + 8 heads of 128,
// hidden 14336, the 128256-entry vocabulary's softmax).
void add_bench(std::vector<KernelCase>& out, bool model) {
  const int dim = model ? 4096 : 64, hidden = model ? 14336 : 172, vocab = model ? 128256 : 512;
  out.push_back(rmsnorm_case(dim, 1, 1e-5f, 1));
  out.push_back(rmsnorm_ggml_case(dim, 1, 1e-5f, 8));
  out.push_back(rope_case(model ? RopeShape{32, 8, 128, 1, 500000.0f} : RopeShape{4, 2, 16, 1, 10000.0f}, 2));
  out.push_back(pair_case(Elementwise::Swiglu, hidden, 1, 3));
  out.push_back(pair_case(Elementwise::Residual, dim, 1, 4));
  out.push_back(pair_case(Elementwise::Bias, dim, 1, 5));
  out.push_back(embedding_case(model ? 1024 : 37, dim, {0, 5, 17, 1}, 6));
  out.push_back(softmax_case(vocab, 1, 7));
}

}  // namespace

void add_op_cases(std::vector<KernelCase>& out, CaseSet set) {
  if (set == CaseSet::Check) add_check(out);
  else add_bench(out, set == CaseSet::BenchModel);
}

}  // namespace oracle::optimized::cases
