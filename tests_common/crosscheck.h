#pragma once
// The cross-check against llama.cpp's F32 logits (reference/tests/test_crosscheck.cpp,
// distributed/tests/test_tp_crosscheck.cpp): the float64 shadow forward, the derived per-logit
// bound and the comparison of one run's logits with the committed fixture. THE BOUND is
// explained at the top of reference/tests/test_crosscheck.cpp.
// Header-only test support: include it in one test file per executable (its functions are
// inline); ORACLE_SOURCE_DIR must be defined (the committed fixtures' folder).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/synthetic.h"

namespace oracle::crosscheck {

inline constexpr double kU = 5.9604644775390625e-08;  // 2^-24
inline double g(double k) { return k * kU / (1.0 - k * kU); }

// The token sequence of every fixture (scripts/arch_crosscheck.sh writes the same).
inline std::vector<int> crosscheck_tokens() {
  std::vector<int> t;
  for (int i = 0; i < 40; i++) t.push_back((i * 97 + 13) % 384);
  return t;
}

// ---- the float64 shadow forward, exact or with float32 rounding noise -----------------------------
using Vecd = std::vector<double>;

struct Shadow {
  const Model& m;
  const Config& c;
  std::mt19937_64* rng = nullptr;  // null: exact arithmetic
  explicit Shadow(const Model& model, std::mt19937_64* noise = nullptr) : m(model), c(model.config), rng(noise) {}

  // One rounded float32 operation's result under the standard model.
  double r(double x) const {
    if (!rng) return x;
    const double d = (double)((*rng)() >> 11) * 0x1.0p-53;  // [0, 1)
    return x * (1.0 + (2.0 * d - 1.0) * kU);
  }

  double dot(const float* w, const Vecd& x) const {
    double y = 0;
    for (size_t k = 0; k < x.size(); k++) y = r(y + r((double)w[k] * x[k]));
    return y;
  }

  Vecd matvec(const float* w, const Vecd& in, int n_out, const float* bias = nullptr) const {
    Vecd out(n_out);
    for (int i = 0; i < n_out; i++) {
      out[i] = dot(w + (size_t)i * in.size(), in);
      if (bias) out[i] = r(out[i] + bias[i]);
    }
    return out;
  }

  Vecd rmsnorm(const Vecd& x, const float* w) const {
    double ss = 0;
    for (double v : x) ss = r(ss + r(v * v));
    const double rs = r(1.0 / r(std::sqrt(r(r(ss / (double)x.size()) + c.norm_eps))));
    Vecd out(x.size());
    for (size_t k = 0; k < x.size(); k++) out[k] = r(r(x[k] * rs) * w[k]);
    return out;
  }

  // ggml rope_yarn / ggml_rope_cache_init in double with libm (independent of rope_table.cpp).
  void rope_pair(int pos, int i, double* cs, double* sn) const {
    const RopeConfig& rc = c.rope;
    const int hd = c.head_dim;
    double extrap = pos * std::pow((double)c.rope_theta, -2.0 * i / hd);
    for (int k = 0; k < i + 2; k++) extrap = r(extrap);  // powf, then i float multiplies
    if (!rc.freq_factors.empty()) extrap = r(extrap / rc.freq_factors[i]);
    const double freq_scale = rc.scaling == RopeScaling::None ? 1.0 : 1.0 / rc.factor;
    double angle = r(freq_scale * extrap), mscale = rc.attn_factor;
    if (rc.scaling == RopeScaling::Yarn) {
      auto corr = [&](double n_rot) {
        return hd * std::log(rc.original_context / (n_rot * 2 * M_PI)) / (2 * std::log((double)c.rope_theta));
      };
      const double lo = std::max(0.0, std::floor(corr(rc.beta_fast)));
      const double hi = std::min(hd - 1.0, std::ceil(corr(rc.beta_slow)));
      const double y = (i - lo) / std::max(0.001, hi - lo);
      const double mix = 1.0 - std::min(1.0, std::max(0.0, y));
      angle = r(r(angle * (1 - mix)) + r(extrap * mix));
      mscale = r(mscale * (1.0 + 0.1 * std::log(1.0 / freq_scale)));
    }
    *cs = r(r(std::cos(angle)) * mscale);
    *sn = r(r(std::sin(angle)) * mscale);
  }

  void rope(Vecd& v, int n_heads, int pos) const {
    const int hd = c.head_dim;
    for (int i = 0; i < hd / 2; i++) {
      double cs, sn;
      rope_pair(pos, i, &cs, &sn);
      for (int h = 0; h < n_heads; h++) {
        const size_t a = (size_t)h * hd + 2 * i;
        const double x0 = v[a], x1 = v[a + 1];
        v[a] = r(r(x0 * cs) - r(x1 * sn));
        v[a + 1] = r(r(x0 * sn) + r(x1 * cs));
      }
    }
  }

  Vecd attention(const Vecd& q, const std::vector<Vecd>& K, const std::vector<Vecd>& V, int t) const {
    const int hd = c.head_dim, group = c.n_heads / c.n_kv_heads, n = t + 1;
    const double scale = r(1.0 / std::sqrt((double)hd));
    Vecd out((size_t)c.n_heads * hd);
    for (int h = 0; h < c.n_heads; h++) {
      const size_t qo = (size_t)h * hd, ko = (size_t)(h / group) * hd;
      Vecd s(n), p(n);
      for (int j = 0; j < n; j++) {
        double d = 0;
        for (int k = 0; k < hd; k++) d = r(d + r(q[qo + k] * K[j][ko + k]));
        s[j] = r(d * scale);
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (int j = 0; j < n; j++) sum = r(sum + (p[j] = r(std::exp(r(s[j] - mx)))));
      for (int d = 0; d < hd; d++) {
        double o = 0;
        for (int j = 0; j < n; j++) o = r(o + r(p[j] * V[j][ko + d]));
        out[qo + d] = r(o / sum);
      }
    }
    return out;
  }

  void add(Vecd& x, const Vecd& y) const {
    for (size_t k = 0; k < x.size(); k++) x[k] = r(x[k] + y[k]);
  }

  Vecd swiglu(const Vecd& gate, const Vecd& up) const {
    Vecd h(gate.size());
    for (size_t k = 0; k < h.size(); k++) h[k] = r(r(gate[k] / r(1.0 + r(std::exp(-gate[k])))) * up[k]);
    return h;
  }

  // (T, vocab) logits for tokens at positions 0..T-1.
  std::vector<Vecd> run(const std::vector<int>& tokens) const {
    const int T = (int)tokens.size(), q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
    std::vector<Vecd> x(T, Vecd(c.dim));
    for (int t = 0; t < T; t++)
      for (int k = 0; k < c.dim; k++) x[t][k] = m.weights.token_embedding.f32()[(size_t)tokens[t] * c.dim + k];
    for (int l = 0; l < c.n_layers; l++) {
      const LayerWeights& w = m.weights.layers[l];
      std::vector<Vecd> K(T), V(T), Q(T);
      for (int t = 0; t < T; t++) {
        const Vecd xb = rmsnorm(x[t], w.attn_norm);
        Q[t] = matvec(w.wq.f32(), xb, q_dim, w.bq);
        K[t] = matvec(w.wk.f32(), xb, kv_dim, w.bk);
        V[t] = matvec(w.wv.f32(), xb, kv_dim, w.bv);
        rope(Q[t], c.n_heads, t);
        rope(K[t], c.n_kv_heads, t);
      }
      for (int t = 0; t < T; t++) {
        add(x[t], matvec(w.wo.f32(), attention(Q[t], K, V, t), c.dim));
        const Vecd xb = rmsnorm(x[t], w.ffn_norm);
        add(x[t], matvec(w.w_down.f32(), swiglu(matvec(w.w_gate.f32(), xb, c.hidden_dim), matvec(w.w_up.f32(), xb, c.hidden_dim)), c.dim));
      }
    }
    std::vector<Vecd> logits;
    for (int t = 0; t < T; t++) logits.push_back(matvec(m.weights.classifier.f32(), rmsnorm(x[t], m.weights.final_norm), c.vocab_size));
    return logits;
  }
};

// Exact logits and the per-logit bound (see THE BOUND).
struct Reference {
  std::vector<Vecd> exact, bound;  // (T, vocab)
};

inline Reference reference_of(const Model& m, const std::vector<int>& tokens, int runs = 16) {
  Reference ref{Shadow(m).run(tokens), {}};
  std::vector<Vecd> sq(ref.exact.size(), Vecd(ref.exact[0].size(), 0.0));
  std::mt19937_64 rng(20240601);
  for (int n = 0; n < runs; n++) {
    const std::vector<Vecd> z = Shadow(m, &rng).run(tokens);
    for (size_t t = 0; t < z.size(); t++)
      for (size_t v = 0; v < z[t].size(); v++) sq[t][v] += (z[t][v] - ref.exact[t][v]) * (z[t][v] - ref.exact[t][v]);
  }
  ref.bound = sq;
  for (size_t t = 0; t < sq.size(); t++)
    for (size_t v = 0; v < sq[t].size(); v++) {
      const double sigma = std::sqrt(sq[t][v] / runs);
      const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(ref.exact[t][v]), 1e-30)) - 23);
      ref.bound[t][v] = std::max(15.0 * sigma, 4.0 * ulp);
    }
  return ref;
}

inline std::string fixture_dir() {
  const char* env = std::getenv("ORACLE_CROSSCHECK_DIR");
  return env && *env ? env : ORACLE_SOURCE_DIR "/golden/crosscheck";
}

inline std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  INFO("fixture " << path << " is missing (scripts/arch_crosscheck.sh writes it)");
  REQUIRE(f.good());
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// The presets of golden/crosscheck (scripts/arch_crosscheck.sh writes one fixture each).
inline const std::vector<const char*>& presets() {
  static const std::vector<const char*> names = {"tiny",      "gqa",       "qwen2-tiny",   "llama3-tiny",
                                                 "linear-tiny", "yarn-tiny", "llama31-tiny", "qwen25-yarn-tiny"};
  return names;
}

// A model's all-position logits (T, vocab) for the fixture's tokens: the plain forward,
// or one under tensor parallelism.
using RunLogits = std::function<std::vector<float>(const Model& m, const std::vector<int>& tokens)>;

inline std::vector<float> plain_logits(const Model& m, const std::vector<int>& tokens) {
  KvCache kv(m.config, {});
  ForwardOptions o;
  o.all_logits = true;
  return forward(m, kv, 0, tokens, o);
}

// One run's logits against the exact shadow (within bound / sqrt(2)) and `theirs` (within the
// bound), with the same argmax as theirs where the top-2 margin exceeds it; WARNs a summary.
inline void compare_run(const char* name, const std::string& label, const std::vector<float>& ours,
                        const std::vector<float>& theirs, const Reference& ref, bool with_llamacpp) {
  const int T = (int)ref.exact.size(), V = (int)ref.exact[0].size();
  REQUIRE(ours.size() == (size_t)T * V);
  REQUIRE(theirs.size() == (size_t)T * V);
  double max_diff = 0, bound_at_max = 0, max_ratio = 0, max_ours = 0;
  int argmax_checked = 0;
  for (int t = 0; t < T; t++) {
    int a_ours = 0, a_theirs = 0;
    Vecd sorted(ref.exact[t]);
    for (int v = 0; v < V; v++) {
      const size_t i = (size_t)t * V + v;
      const double B = ref.bound[t][v], diff = std::fabs((double)ours[i] - theirs[i]);
      INFO("position " << t << " token " << v << " ours " << ours[i] << " llama.cpp " << theirs[i] << " exact "
                       << ref.exact[t][v] << " bound " << B);
      REQUIRE(std::fabs(ours[i] - ref.exact[t][v]) <= B / std::sqrt(2.0));
      REQUIRE(diff <= B);
      if (diff > max_diff) max_diff = diff, bound_at_max = B;
      max_ratio = std::max(max_ratio, diff / B);
      max_ours = std::max(max_ours, std::fabs(ours[i] - ref.exact[t][v]) / B);
      if (ours[i] > ours[(size_t)t * V + a_ours]) a_ours = v;
      if (theirs[i] > theirs[(size_t)t * V + a_theirs]) a_theirs = v;
    }
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<double>());
    const double B_top = *std::max_element(ref.bound[t].begin(), ref.bound[t].end());
    if (sorted[0] - sorted[1] > 2 * B_top) {  // each of the two logits may move by B
      CHECK(a_ours == a_theirs);
      argmax_checked++;
    }
  }
  if (with_llamacpp)
    WARN(name << label << ": max |ours - llama.cpp| " << max_diff << " (bound there " << bound_at_max
              << "), max |ours - llama.cpp| / bound " << max_ratio << ", max |ours - exact| / bound " << max_ours
              << ", argmax compared at " << argmax_checked << " of " << T << " positions");
  CHECK(argmax_checked > T / 2);
}

struct NamedRun {
  std::string label;  // e.g. " --tp 3"; "" for the plain forward
  RunLogits run;
};

// Every preset, every run: compare_run against the shadow and (with_llamacpp) llama.cpp's fixture
// (without it, ours stands in for theirs: only the shadow is checked). The shadow and its bound are
// computed once per preset.
inline void crosscheck_presets(bool with_llamacpp, const std::vector<NamedRun>& runs = {{"", plain_logits}}) {
  const std::vector<int> tokens = crosscheck_tokens();
  for (const char* name : presets()) {
    INFO("preset " << name);
    const SyntheticPreset& p = synthetic_preset(name);
    const Model m = synthetic_model(p, kDefaultSeed, synthetic_byte_vocab(p.config.vocab_size));
    const Reference ref = reference_of(m, tokens);
    const std::vector<float> fixture =
        with_llamacpp ? read_f32(fixture_dir() + "/llamacpp_" + name + ".f32") : std::vector<float>{};
    for (const NamedRun& r : runs) {
      INFO("run" << r.label);
      const std::vector<float> ours = r.run(m, tokens);
      compare_run(name, r.label, ours, with_llamacpp ? fixture : ours, ref, with_llamacpp);
    }
  }
}

}  // namespace oracle::crosscheck
