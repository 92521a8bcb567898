// Speculative decoding (reference/generate/speculative.h), through the production
// speculative_step itself — the function generate_speculative and the CLI run.
//
// Exact enumeration. For random target/draft tables p, q (one row per draft
// prefix, so row i of p is conditioned on drafts[0..i) as in a real verify
// pass), k in {2, 3}, vocabularies of 2-6 and a random first position t, every
// draft sequence x (weight prod q_i(x_i)) is fed to speculative_step with the
// Philox draws replaced by GridUniforms, a UniformSource: the same interface
// production passes PhiloxUniforms through. Each uniform u(key) is enumerated
// on a 2^20-point midpoint grid: 16 strata per key, refined by bisection at
// every point where the step's next request (or its result) changes — the
// step's decisions are monotone in u (a threshold u*q < p; an inverse CDF),
// so each class of the grid is an interval and every class is visited once.
// That gives the exact joint distribution of all emitted tokens (accepted
// drafts, then the replacement or the bonus), up to 1/F per class boundary.
//
// Checked against it:
//   lossless at every position j = 0..k, the bonus included: for every prefix
//   y_<j of accepted drafts, P(step reaches j with y_<j and emits v at j) =
//   P(step reaches j with y_<j) * p_{y_<j}(v);
//   known answer: every emitted sequence's probability equals the float64
//   formula of Leviathan et al. (accept min(1, p/q); residual max(0, p-q)/Z;
//   bonus from p_k) computed here from the same tables, not from the primitives;
//   keying: draft i's accept/resample draws use position t+i with purposes
//   SpecAccept/SpecResample, the bonus position t+k with purpose Sample, and no
//   uniform is requested twice in one step;
//   tokens.size() == accepted + 1.
// Tolerance (derivation): a class boundary is located within 1/F (F = 2^20);
// float32 rounding moves a threshold by at most (n+2) 2^-24 in u (u*q rounding;
// n-term float32 cumulative sums of the inverse CDF). A path has at most 2k+1
// draws and each draw has at most n boundaries, so any enumerated probability
// is off by at most (2k+1)(n/F + (n+2) 2^-24); a difference of two such
// quantities by twice that, and we allow another factor 2.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "property_tests/generators.h"
#include "numerics/numerics.h"
#include "reference/generate/speculative.h"

using namespace oracle;

namespace {

constexpr int kFine = 1 << 20;  // grid points per uniform
constexpr int kStrata = 16;     // coarse samples per uniform before refinement

float u_at(int j) { return (float)(((double)j + 0.5) / (double)kFine); }

struct Key {  // one uniform: (position, purpose); seed and seq are checked equal to first's
  uint32_t position, purpose;
  bool operator<(const Key& o) const { return position != o.position ? position < o.position : purpose < o.purpose; }
  bool operator==(const Key& o) const { return position == o.position && purpose == o.purpose; }
};

// The enumeration's uniform source: assigned keys return their grid value; the
// first unassigned key requested is recorded (and answered 0.5; the rest of
// that run is ignored). Also records keying errors.
class GridUniforms : public UniformSource {
 public:
  GridUniforms(const std::map<Key, int>& assigned, const rng::RngKey& first) : assigned_(assigned), first_(first) {}
  float operator()(const rng::RngKey& key, uint32_t purpose) const override {
    if (key.seed != first_.seed || key.seq != first_.seq) bad_identity = true;
    const Key k{key.position, purpose};
    for (const Key& r : requested)
      if (r == k) requested_twice = true;
    requested.push_back(k);
    auto it = assigned_.find(k);
    if (it != assigned_.end()) return u_at(it->second);
    if (!next) next = k;
    return 0.5f;
  }
  mutable std::optional<Key> next;  // first unassigned key
  mutable std::vector<Key> requested;
  mutable bool requested_twice = false, bad_identity = false;

 private:
  const std::map<Key, int>& assigned_;
  rng::RngKey first_;
};

// Random distribution tables: one p row and one q row per draft prefix.
struct Tables {
  int n = 0, k = 0;
  std::map<std::vector<int>, std::vector<float>> p, q;  // prefix -> (n)
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// softmax_canonical of logits in [-3, 3], each masked with probability 1/6,
// at least one alive. `near` (optional) mixes in another row's logits so that
// q is sometimes close to p.
std::vector<float> random_row(int n, uint64_t& s) {
  std::vector<float> x((size_t)n);
  for (float& v : x) v = (float)((int)(splitmix(s) % 25) - 12) / 4.0f;
  for (float& v : x)
    if (splitmix(s) % 6 == 0) v = -INFINITY;
  x[splitmix(s) % (uint64_t)n] = 0.0f;
  num::softmax_canonical(x.data(), n);
  return x;
}

void fill_tables(Tables& t, std::vector<int>& prefix, uint64_t& s, int q_mode) {
  t.p[prefix] = random_row(t.n, s);
  if ((int)prefix.size() < t.k) {
    t.q[prefix] = q_mode == 1 ? t.p[prefix] : random_row(t.n, s);  // q_mode 1: q == p everywhere
    for (int x = 0; x < t.n; x++) {
      prefix.push_back(x);
      fill_tables(t, prefix, s, q_mode);
      prefix.pop_back();
    }
  }
}

// The step's inputs for one draft sequence.
void step_inputs(const Tables& t, const std::vector<int>& drafts, std::vector<float>& p, std::vector<float>& q) {
  p.clear();
  q.clear();
  std::vector<int> prefix;
  for (int i = 0; i <= t.k; i++) {
    const auto& pr = t.p.at(prefix);
    p.insert(p.end(), pr.begin(), pr.end());
    if (i < t.k) {
      const auto& qr = t.q.at(prefix);
      q.insert(q.end(), qr.begin(), qr.end());
      prefix.push_back(drafts[(size_t)i]);
    }
  }
}

struct Enumeration {
  std::map<std::vector<int>, double> dist;  // emitted tokens -> probability
  long runs = 0;
  std::string keying_error;  // empty when every run keyed its draws correctly
};

// Result of one run with `assigned`: the tokens, or the next key it needs.
struct Outcome {
  std::optional<Key> next;
  std::vector<int> tokens;
  bool operator==(const Outcome& o) const { return next == o.next && (next || tokens == o.tokens); }
};

class Enumerator {
 public:
  Enumerator(const std::vector<float>& p, const std::vector<float>& q, const std::vector<int>& drafts, int n,
             rng::RngKey first, Enumeration& out)
      : p_(p), q_(q), drafts_(drafts), n_(n), first_(first), out_(out) {}

  void explore(std::map<Key, int>& assigned, double weight) {
    const Outcome o = run(assigned);
    if (!o.next) {
      out_.dist[o.tokens] += weight;
      return;
    }
    const Key key = *o.next;
    auto at = [&](int j) {
      assigned[key] = j;
      Outcome r = run(assigned);
      assigned.erase(key);
      return r;
    };
    const int stride = kFine / kStrata;
    std::vector<std::pair<int, Outcome>> samples{{0, at(0)}};
    for (int s = 0; s < kStrata; s++) samples.push_back({s * stride + stride / 2, at(s * stride + stride / 2)});
    samples.push_back({kFine - 1, at(kFine - 1)});
    std::vector<std::pair<int, Outcome>> starts{samples[0]};  // first grid point and outcome of each interval
    for (size_t i = 0; i + 1 < samples.size(); i++) bisect(samples[i], samples[i + 1], at, starts);
    struct Class {
      Outcome outcome;
      long points;
      int representative;
    };
    std::vector<Class> classes;
    for (size_t m = 0; m < starts.size(); m++) {
      const long len = (m + 1 < starts.size() ? starts[m + 1].first : kFine) - starts[m].first;
      bool merged = false;
      for (Class& c : classes)
        if (c.outcome == starts[m].second) c.points += len, merged = true;
      if (!merged) classes.push_back({starts[m].second, len, starts[m].first});
    }
    for (const Class& c : classes) {
      const double w = weight * (double)c.points / (double)kFine;
      if (!c.outcome.next) {
        out_.dist[c.outcome.tokens] += w;
        continue;
      }
      assigned[key] = c.representative;
      explore(assigned, w);
      assigned.erase(key);
    }
  }

 private:
  Outcome run(const std::map<Key, int>& assigned) {
    GridUniforms u(assigned, first_);
    const SpecStep s = speculative_step(p_, q_, drafts_, n_, first_, u);
    out_.runs++;
    check_keys(u, s);
    if (u.next) return Outcome{u.next, {}};
    return Outcome{std::nullopt, s.tokens};
  }

  // Draw i's keys: accept/resample at t+i, the bonus (Sample) at t+k; once each.
  void check_keys(const GridUniforms& u, const SpecStep& s) {
    if (!out_.keying_error.empty()) return;
    const uint32_t t = first_.position, k = (uint32_t)drafts_.size();
    if (u.bad_identity) out_.keying_error = "a draw used another seed or sequence id";
    if (u.requested_twice) out_.keying_error = "a uniform (position, purpose) was requested twice in one step";
    for (size_t r = 0; r < u.requested.size() && out_.keying_error.empty(); r++) {
      const Key& key = u.requested[r];
      const bool last = r + 1 == u.requested.size();
      if (key.position < t || key.position > t + k)
        out_.keying_error = "draw at position " + std::to_string(key.position) + " outside [t, t+k]";
      if (key.purpose == rng::kPurposeSample && (key.position != t + k || !last))
        out_.keying_error = "Sample draw at position " + std::to_string(key.position) + " (bonus must be at t+k)";
    }
    if (!u.next && out_.keying_error.empty()) {
      // Replay the decisions: request r is an accept at t+i for every accepted draft,
      // then one resample at the rejected position or the bonus at t+k.
      const size_t a = (size_t)s.accepted;
      std::vector<Key> want;
      for (size_t i = 0; i < a; i++) want.push_back({t + (uint32_t)i, rng::kPurposeSpecAccept});
      if (a < drafts_.size()) {
        want.push_back({t + (uint32_t)a, rng::kPurposeSpecAccept});
        want.push_back({t + (uint32_t)a, rng::kPurposeSpecResample});
      } else {
        want.push_back({t + k, rng::kPurposeSample});
      }
      if (!(want == u.requested)) out_.keying_error = "the draws requested do not follow accept(t+i).. then resample/bonus";
      if (s.tokens.size() != a + 1) out_.keying_error = "emitted " + std::to_string(s.tokens.size()) +
                                                        " tokens after " + std::to_string(a) + " acceptances";
    }
  }

  // Appends (j, outcome) at every j in (a, b] where the outcome changes.
  template <typename At>
  void bisect(const std::pair<int, Outcome>& a, const std::pair<int, Outcome>& b, At& at,
              std::vector<std::pair<int, Outcome>>& starts) {
    if (a.second == b.second) return;
    if (b.first - a.first == 1) {
      starts.push_back(b);
      return;
    }
    const int mid = a.first + (b.first - a.first) / 2;
    const std::pair<int, Outcome> m{mid, at(mid)};
    bisect(a, m, at, starts);
    bisect(m, b, at, starts);
  }

  const std::vector<float>& p_;
  const std::vector<float>& q_;
  const std::vector<int>& drafts_;
  int n_;
  rng::RngKey first_;
  Enumeration& out_;
};

// Enumerates every draft sequence (weight prod q) and every uniform.
Enumeration enumerate(const Tables& t, rng::RngKey first) {
  Enumeration e;
  std::vector<int> drafts((size_t)t.k, 0);
  std::vector<float> p, q;
  for (long code = 0;; code++) {  // drafts = the base-n digits of code
    long c = code;
    for (int i = 0; i < t.k; i++, c /= t.n) drafts[(size_t)i] = (int)(c % t.n);
    if (c > 0) break;
    double w = 1.0;
    std::vector<int> prefix;
    for (int i = 0; i < t.k; i++) {
      w *= (double)t.q.at(prefix)[(size_t)drafts[(size_t)i]];
      prefix.push_back(drafts[(size_t)i]);
    }
    if (w == 0.0) continue;
    step_inputs(t, drafts, p, q);
    std::map<Key, int> assigned;
    Enumeration one;
    Enumerator(p, q, drafts, t.n, first, one).explore(assigned, 1.0);
    e.runs += one.runs;
    if (e.keying_error.empty() && !one.keying_error.empty()) e.keying_error = one.keying_error;
    for (const auto& [y, pr] : one.dist) e.dist[y] += w * pr;
  }
  return e;
}

// Leviathan et al.'s step in float64 from the tables (the known answer).
std::map<std::vector<int>, double> formula(const Tables& t) {
  std::map<std::vector<int>, double> out;
  // Recursion over accepted prefixes: at prefix y (all accepted so far) with probability w.
  std::function<void(std::vector<int>&, double)> at = [&](std::vector<int>& y, double w) {
    const std::vector<float>& p = t.p.at(y);
    if ((int)y.size() == t.k) {  // bonus from p_k
      for (int v = 0; v < t.n; v++) {
        y.push_back(v);
        if (p[(size_t)v] > 0.0f) out[y] += w * p[(size_t)v];
        y.pop_back();
      }
      return;
    }
    const std::vector<float>& q = t.q.at(y);
    double reject = 0.0, z = 0.0;
    for (int x = 0; x < t.n; x++) {
      const double px = p[(size_t)x], qx = q[(size_t)x];
      if (qx > 0.0) reject += qx * (1.0 - std::min(1.0, px / qx));
      z += std::max(0.0, px - qx);
    }
    if (reject > 0.0 && z > 0.0)
      for (int v = 0; v < t.n; v++) {
        const double r = std::max(0.0, (double)p[(size_t)v] - (double)q[(size_t)v]) / z;
        y.push_back(v);
        if (r > 0.0) out[y] += w * reject * r;
        y.pop_back();
      }
    for (int x = 0; x < t.n; x++) {
      const double px = p[(size_t)x], qx = q[(size_t)x];
      if (qx <= 0.0) continue;
      y.push_back(x);
      at(y, w * qx * std::min(1.0, px / qx));
      y.pop_back();
    }
  };
  std::vector<int> y;
  at(y, 1.0);
  return out;
}

double tolerance(int n, int k) {
  return 4.0 * (2.0 * k + 1.0) * ((double)n / kFine + (double)(n + 2) * std::ldexp(1.0, -24));
}

// Lossless at position j: reach(prefix) * p_prefix(v) == emit(prefix, v).
std::string lossless_error(const Tables& t, const std::map<std::vector<int>, double>& dist, double tol) {
  for (int j = 0; j <= t.k; j++) {
    std::map<std::vector<int>, double> reach;
    std::map<std::vector<int>, std::vector<double>> emit;
    for (const auto& [y, pr] : dist) {
      if ((int)y.size() < j + 1) continue;
      std::vector<int> prefix(y.begin(), y.begin() + j);
      reach[prefix] += pr;
      auto& e = emit[prefix];
      e.resize((size_t)t.n, 0.0);
      e[(size_t)y[(size_t)j]] += pr;
    }
    for (const auto& [prefix, r] : reach) {
      auto it = t.p.find(prefix);
      if (it == t.p.end()) return "position " + std::to_string(j) + ": a prefix that is not an accepted draft prefix";
      for (int v = 0; v < t.n; v++) {
        const double want = r * (double)it->second[(size_t)v], got = emit[prefix][(size_t)v];
        if (std::fabs(got - want) > tol) {
          char b[256];
          std::snprintf(b, sizeof b, "position %d (prefix of %zu), token %d: P(emit) %.9f, P(reach) * p %.9f, tol %.3g",
                        j, prefix.size(), v, got, want, tol);
          return b;
        }
      }
    }
  }
  return "";
}

Tables gen_tables(oracle::prop::Shapes& shapes, int q_mode) {
  Tables t;
  t.n = *rc::gen::inRange(2, 7);
  t.k = *rc::gen::element(2, 3);
  uint64_t s = *rc::gen::arbitrary<uint64_t>();
  std::vector<int> prefix;
  fill_tables(t, prefix, s, q_mode);
  shapes.add("vocab", t.n);
  shapes.add("k", t.k);
  int alive = 0;
  for (float v : t.p.at({})) alive += v > 0.0f;
  shapes.add("alive ids in p_0", alive);
  return t;
}

// ---- model drafter rollback ------------------------------------------------------------------
std::vector<int> random_tokens(int n, uint64_t& s) {
  std::vector<int> t((size_t)n);
  for (int& v : t) v = 3 + 0x20 + (int)(splitmix(s) % 95);
  return t;
}

}  // namespace

TEST_CASE("property: speculative_step enumerated exactly", "[property][speculative]") {
  oracle::prop::Shapes shapes;

  oracle::prop::check("speculative_step: lossless at every position incl. the bonus, = float64 formula, keyed t+i",
                      1000, shapes, [&] {
    const Tables t = gen_tables(shapes, 0);
    const rng::RngKey first{*rc::gen::inRange<uint64_t>(0, 1u << 30), (uint32_t)*rc::gen::inRange(0, 64),
                            (uint32_t)*rc::gen::inRange(0, 4000)};
    shapes.add("first position", first.position);
    const Enumeration e = enumerate(t, first);
    shapes.add("step runs", e.runs);
    RC_LOG() << "keying: " << e.keying_error;
    RC_ASSERT(e.keying_error.empty());
    double total = 0.0;
    for (const auto& [y, pr] : e.dist) total += pr;
    const double tol = tolerance(t.n, t.k);
    RC_ASSERT(std::fabs(total - 1.0) <= tol);
    const std::string lossless = lossless_error(t, e.dist, tol);
    RC_LOG() << lossless;
    RC_ASSERT(lossless.empty());
    const auto want = formula(t);
    for (const auto& [y, pr] : want) {
      auto it = e.dist.find(y);
      const double got = it == e.dist.end() ? 0.0 : it->second;
      if (std::fabs(got - pr) > tol) RC_LOG() << "sequence of " << y.size() << ": enumerated " << got << ", formula " << pr;
      RC_ASSERT(std::fabs(got - pr) <= tol);
    }
    for (const auto& [y, pr] : e.dist) RC_ASSERT(want.count(y) == 1 || pr <= tol);
  });

  oracle::prop::check("speculative_step: q == p accepts all k drafts and draws the bonus from p_k", 500, shapes, [&] {
    const Tables t = gen_tables(shapes, 1);
    const rng::RngKey first{7, 0, (uint32_t)*rc::gen::inRange(0, 4000)};
    const Enumeration e = enumerate(t, first);
    RC_ASSERT(e.keying_error.empty());
    double full = 0.0;
    for (const auto& [y, pr] : e.dist)
      if ((int)y.size() == t.k + 1) full += pr;
    RC_ASSERT(std::fabs(full - 1.0) <= tolerance(t.n, t.k));
    RC_ASSERT(lossless_error(t, e.dist, tolerance(t.n, t.k)).empty());
  });
}

// A stale draft cache lowers acceptance but keeps the output exact, so only a
// direct comparison sees it: after rounds on histories that share a prefix and
// then diverge (rejections), the reused drafter's drafts and q rows equal a
// fresh drafter's bit for bit.
TEST_CASE("property: model drafter rollback", "[property][speculative]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("ModelDrafter after rounds on diverging histories == a fresh drafter (tokens, q bits)", 300,
                      shapes, [&] {
    Config c = *oracle::prop::gen_config();
    c.seq_len = 64;
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    SamplerConfig cfg = *oracle::prop::gen_sampler_config();
    KvCacheOptions kv;
    kv.paged = *rc::gen::arbitrary<bool>();
    kv.block_size = *oracle::prop::gen_block_size();
    ModelDrafter reused(model, cfg, kv);
    uint64_t s = *rc::gen::arbitrary<uint64_t>();
    std::vector<int> history = random_tokens(*rc::gen::inRange(1, 20), s);
    const int rounds = *rc::gen::inRange(2, 6), k = *rc::gen::inRange(1, 6);
    shapes.add("rounds", rounds);
    for (int r = 0; r < rounds; r++) {
      const rng::RngKey key{cfg.seed, 0, (uint32_t)history.size()};
      const Draft a = reused.propose(history, k, key);
      ModelDrafter fresh(model, cfg, kv);
      const Draft b = fresh.propose(history, k, key);
      RC_ASSERT(a.tokens == b.tokens);
      RC_ASSERT(a.q.size() == b.q.size());
      for (size_t i = 0; i < a.q.size(); i++) RC_ASSERT(num::f32_bits(a.q[i]) == num::f32_bits(b.q[i]));
      // next round: keep some drafts (accepted), then one other token (a rejection), maybe roll back further
      const int keep = (int)history.size() - (int)(splitmix(s) % 3);
      history.resize((size_t)std::max(1, keep));
      const int acc = a.tokens.empty() ? 0 : (int)(splitmix(s) % (a.tokens.size() + 1));
      history.insert(history.end(), a.tokens.begin(), a.tokens.begin() + acc);
      const std::vector<int> extra = random_tokens(1 + (int)(splitmix(s) % 3), s);
      history.insert(history.end(), extra.begin(), extra.end());
      if ((int)history.size() + k + 1 >= c.seq_len) break;
      shapes.add("history length", (long)history.size());
    }
  });
}
