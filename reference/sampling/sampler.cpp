// Sampler chain core: candidate helpers, the chain, the two selectors
// (greedy, Philox inverse-CDF draw) and sample(). docs/sampling.md.
#include "reference/sampling/sampler.h"

#include <algorithm>

#include "faults/fault.h"
#include "base/errors.h"
#include "numerics/numerics.h"

namespace oracle {

// ---- candidate helpers ------------------------------------------------------------
Candidates candidates_from_logits(std::span<const float> logits) {
  Candidates c;
  c.items.resize(logits.size());
  for (size_t i = 0; i < logits.size(); i++) c.items[i] = Candidate{(int)i, logits[i], 0.0f};
  return c;
}

void compute_probs(Candidates& c) {
  std::vector<float> x(c.items.size());  // (n_alive)
  for (size_t i = 0; i < x.size(); i++) x[i] = c.items[i].logit;
  float m = num::max_fixed_order(x.data(), (int)x.size());
  if (fault::active(fault::Fault::SOFTMAX_CANONICAL_NO_MAX) && m > -num::inf_f32())
    m = 0.0f;  // FAULT: no max-subtraction (exp overflows for large logits)
  num::softmax_canonical_shifted(x.data(), (int)x.size(), m);
  for (size_t i = 0; i < x.size(); i++) c.items[i].prob = x[i];
}

bool ranks_before(float xa, int ia, float xb, int ib) {
  bool na = xa != xa, nb = xb != xb;
  if (na != nb) return nb;
  if (!na && xa != xb) return xa > xb;
  return ia < ib;
}

static std::vector<int> order_by(const Candidates& c, bool by_prob) {
  std::vector<int> idx(c.items.size());
  for (size_t i = 0; i < idx.size(); i++) idx[i] = (int)i;
  const auto& it = c.items;
  std::sort(idx.begin(), idx.end(), [&](int a, int b) {
    float xa = by_prob ? it[a].prob : it[a].logit;
    float xb = by_prob ? it[b].prob : it[b].logit;
    return ranks_before(xa, it[a].id, xb, it[b].id);
  });
  return idx;
}

std::vector<int> order_by_logit(const Candidates& c) { return order_by(c, false); }
std::vector<int> order_by_prob(const Candidates& c) { return order_by(c, true); }

// ---- the chain --------------------------------------------------------------------
void SamplerChain::apply(Candidates& c, const SamplingContext& ctx) const {
  for (const auto& s : steps_) s->apply(c, ctx);
}

std::string SamplerChain::name() const {
  std::string n = "chain(";
  for (size_t i = 0; i < steps_.size(); i++) n += (i ? "," : "") + steps_[i]->name();
  return n + ")";
}

// ---- selectors ------------------------------------------------------------------------
static void require_candidates(const Candidates& c) {
  require_input(!c.items.empty(), "sampler", "banned_tokens", "every candidate was removed");
}

// Greedy: argmax_lowest over the processed logits in id order (ties -> lowest
// id, NaN never wins). Probabilities are filled for the logprob report.
class GreedySelector : public Sampler {
 public:
  void apply(Candidates& c, const SamplingContext&) const override {
    require_candidates(c);
    std::vector<float> x(c.items.size());  // (n_alive)
    for (size_t i = 0; i < x.size(); i++) x[i] = c.items[i].logit;
    c.selected = num::argmax_lowest(x.data(), (int)x.size());
    require_input(c.selected >= 0, "sampler", "logits", "every logit is NaN");
    compute_probs(c);
  }
  std::string name() const override { return "greedy"; }
};

// Inverse CDF: probs in (prob desc, id asc) order; total = their sequential
// float32 sum; target = u * total with u = Philox uniform (draw 0, purpose
// sample); pick the first candidate whose running sum exceeds target (strict >,
// so zero-probability candidates are never picked); if rounding leaves none,
// the last candidate with non-zero probability.
class DrawSelector : public Sampler {
 public:
  void apply(Candidates& c, const SamplingContext& ctx) const override {
    require_candidates(c);
    compute_probs(c);
    std::vector<int> order = order_by_prob(c);
    float total = 0.0f;
    for (int i : order) total = num::add_rn(total, c.items[i].prob);
    float u = rng::uniform_at(ctx.rng, 0, rng::kPurposeSample);
    float target = num::mul_rn(u, total);
    float run = 0.0f;
    c.selected = -1;
    for (int i : order) {
      if (c.items[i].prob > 0.0f) c.selected = i;  // fallback: last non-zero
      run = num::add_rn(run, c.items[i].prob);
      if (run > target) break;
    }
    require_input(c.selected >= 0, "sampler", "logits", "no candidate has a non-zero probability");
  }
  std::string name() const override { return "draw"; }
};

std::unique_ptr<Sampler> make_selector(const SamplerConfig& config) {
  if (config.temperature <= 0.0f) return std::make_unique<GreedySelector>();
  return std::make_unique<DrawSelector>();
}

// ---- one decision -------------------------------------------------------------------
SampleResult sample(const SamplerChain& chain, std::span<const float> logits,
                    const SamplingContext& ctx) {
  SampleResult r;
  r.processed = candidates_from_logits(logits);
  chain.apply(r.processed, ctx);
  require_input(r.processed.selected >= 0, "sampler", "order", "the chain has no selector");
  r.token = r.processed.items[r.processed.selected].id;
  return r;
}

}  // namespace oracle
