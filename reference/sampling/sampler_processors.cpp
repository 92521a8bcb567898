// The logit processors of the sampler chain. Each one is small, works on the
// candidate array in id order, and is float32 in a fixed order. The "hf" and
// "llamacpp" variants follow those engines' code (docs/sampling.md).
#include <algorithm>
#include <map>

#include "faults/fault.h"
#include "base/errors.h"
#include "numerics/numerics.h"
#include "reference/sampling/sampler.h"

namespace oracle {

namespace {

// Erase the candidates whose flag is 0, keeping id order.
void keep_only(Candidates& c, const std::vector<char>& keep) {
  size_t w = 0;
  for (size_t i = 0; i < c.items.size(); i++)
    if (keep[i]) c.items[w++] = c.items[i];
  c.items.resize(w);
}

// Flag the first n entries of `order` (a rank order of c.items).
void keep_top(std::vector<char>& keep, const std::vector<int>& order, int n) {
  for (int r = 0; r < n && r < (int)order.size(); r++) keep[order[r]] = 1;
}

Candidate* find_id(Candidates& c, int id) {
  auto it = std::lower_bound(c.items.begin(), c.items.end(), id,
                             [](const Candidate& a, int v) { return a.id < v; });
  return (it != c.items.end() && it->id == id) ? &*it : nullptr;
}

// ---- logit bias: logit = logit + bias ------------------------------------------------
class LogitBias : public Sampler {
 public:
  explicit LogitBias(std::vector<std::pair<int, float>> bias) : bias_(std::move(bias)) {}
  void apply(Candidates& c, const SamplingContext&) const override {
    for (const auto& [id, b] : bias_)
      if (Candidate* k = find_id(c, id)) k->logit = num::add_rn(k->logit, b);
  }
  std::string name() const override { return processor_name(Processor::LogitBias); }

 private:
  std::vector<std::pair<int, float>> bias_;
};

// ---- banned tokens: removed from the candidates ---------------------------------------
class Banned : public Sampler {
 public:
  explicit Banned(std::vector<int> ids) : ids_(std::move(ids)) { std::sort(ids_.begin(), ids_.end()); }
  void apply(Candidates& c, const SamplingContext&) const override {
    std::vector<char> keep(c.items.size(), 1);
    for (size_t i = 0; i < c.items.size(); i++)
      if (std::binary_search(ids_.begin(), ids_.end(), c.items[i].id)) keep[i] = 0;
    keep_only(c, keep);
  }
  std::string name() const override { return processor_name(Processor::Banned); }

 private:
  std::vector<int> ids_;
};

// ---- penalties over the last `window` history tokens ------------------------------------
// For each candidate seen count > 0 times (llama.cpp llama_sampler_penalties;
// HF RepetitionPenaltyLogitsProcessor gives the same bits for the repetition part):
//   logit = logit <= 0 ? logit * rep : logit / rep
//   logit = logit - (count * freq + presence)
class Penalties : public Sampler {
 public:
  Penalties(float rep, float freq, float pres, int window)
      : rep_(rep), freq_(freq), pres_(pres), window_(window) {}
  void apply(Candidates& c, const SamplingContext& ctx) const override {
    if (window_ == 0) return;
    size_t n = ctx.history.size();
    size_t first = (window_ < 0 || (size_t)window_ >= n) ? 0 : n - (size_t)window_;
    std::map<int, int> count;
    for (size_t i = first; i < n; i++) count[ctx.history[i]]++;
    if (fault::active(fault::Fault::PENALTY_COUNT_ONCE))
      for (auto& entry : count) entry.second = 1;  // FAULT: a repeated token is counted once
    for (const auto& [id, cnt] : count)
      if (Candidate* k = find_id(c, id)) k->logit = penalise(k->logit, cnt);
    if (fault::active(fault::Fault::PENALTIES_TOUCH_UNSEEN))
      for (Candidate& k : c.items)  // FAULT: unseen tokens get the presence penalty too
        if (!count.count(k.id)) k.logit = num::sub_rn(k.logit, pres_);
  }
  std::string name() const override { return processor_name(Processor::Penalties); }

 private:
  float penalise(float x, int cnt) const {
    x = x <= 0.0f ? num::mul_rn(x, rep_) : num::div_rn(x, rep_);
    return num::sub_rn(x, num::add_rn(num::mul_rn((float)cnt, freq_), pres_));
  }
  float rep_, freq_, pres_;
  int window_;
};

// ---- temperature: logit = logit / T (T <= 0: left to the greedy selector) ------------------
class Temperature : public Sampler {
 public:
  explicit Temperature(float t) : t_(t) {}
  void apply(Candidates& c, const SamplingContext&) const override {
    if (!(t_ > 0.0f)) return;
    for (Candidate& k : c.items) k.logit = num::div_rn(k.logit, t_);
  }
  std::string name() const override { return processor_name(Processor::Temperature); }

 private:
  float t_;
};

// ---- top-k ---------------------------------------------------------------------------------
// llamacpp: exactly k candidates, rank (logit desc, id asc).
// hf: k = max(k, min_keep); every candidate with logit >= the k-th largest
//     (TopKLogitsWarper masks `scores < topk(...)[-1]`, so boundary ties stay).
class TopK : public Sampler {
 public:
  TopK(int k, int min_keep, bool hf) : k_(k <= 0 ? 0 : hf ? std::max(k, min_keep) : k), hf_(hf) {}
  void apply(Candidates& c, const SamplingContext&) const override {
    if (k_ <= 0 || k_ >= (int)c.items.size()) return;
    std::vector<int> order = order_by_logit(c);
    std::vector<char> keep(c.items.size(), 0);
    keep_top(keep, order, k_);
    if (hf_) {
      float kth = c.items[order[k_ - 1]].logit;
      for (size_t i = 0; i < c.items.size(); i++)
        if (c.items[i].logit >= kth) keep[i] = 1;
    }
    keep_only(c, keep);
  }
  std::string name() const override { return processor_name(Processor::TopK); }
  // The k-th largest logit minus the token's (>= 0 when removed).
  RemovalMargin removal_margin(const Candidates& before, int at) const override {
    std::vector<int> order = order_by_logit(before);
    return {(double)before.items[order[k_ - 1]].logit - (double)before.items[at].logit, false};
  }

 private:
  int k_;
  bool hf_;
};

// ---- top-p (nucleus) -------------------------------------------------------------------------
// Probabilities: softmax of the current candidates; rank (prob desc, id asc);
// cumulative sums are sequential float32 adds in the stated order.
// llamacpp: keep ranks 0..i for the first i with cum >= p and i+1 >= min_keep.
// hf: scan ascending (the reverse rank order); drop while cum <= 1 - p; the top
//     min_keep ranks are always kept.
class TopP : public Sampler {
 public:
  TopP(float p, int min_keep, bool hf) : p_(p), min_keep_(min_keep), hf_(hf) {}
  void apply(Candidates& c, const SamplingContext&) const override {
    if (p_ >= 1.0f || c.items.empty()) return;
    compute_probs(c);
    std::vector<int> order = order_by_prob(c);
    std::vector<char> keep(c.items.size(), 0);
    if (hf_) mark_hf(c, order, keep);
    else mark_llamacpp(c, order, keep);
    keep_only(c, keep);
  }
  std::string name() const override { return processor_name(Processor::TopP); }
  // The mass ranked above the token minus p (the token is kept while the mass
  // above it is still < p), summed in rank order in double.
  RemovalMargin removal_margin(const Candidates& before, int at) const override {
    Candidates c = before;
    compute_probs(c);
    double above = 0.0;
    for (int i : order_by_prob(c)) {
      if (i == at) break;
      above += c.items[i].prob;
    }
    return {above - (double)p_, true};
  }

 private:
  void mark_llamacpp(const Candidates& c, const std::vector<int>& order, std::vector<char>& keep) const {
    int last = (int)order.size();
    float cum = 0.0f;
    for (int r = 0; r < (int)order.size(); r++) {
      cum = num::add_rn(cum, c.items[order[r]].prob);
      const bool reached = fault::active(fault::Fault::TOP_P_BOUNDARY_EXCLUSIVE) ? cum > p_ : cum >= p_;  // FAULT: >
      if (reached && r + 1 >= min_keep_) {
        last = r + 1;
        break;
      }
    }
    keep_top(keep, order, last);
  }
  void mark_hf(const Candidates& c, const std::vector<int>& order, std::vector<char>& keep) const {
    float threshold = num::sub_rn(1.0f, p_);
    float cum = 0.0f;
    for (int r = (int)order.size() - 1; r >= 0; r--) {
      cum = num::add_rn(cum, c.items[order[r]].prob);
      keep[order[r]] = !(cum <= threshold);
    }
    keep_top(keep, order, min_keep_);
  }
  float p_;
  int min_keep_;
  bool hf_;
};

// ---- min-p ---------------------------------------------------------------------------------------
// hf: probs = softmax(current); drop prob < min_p * max_prob (MinPLogitsWarper).
// llamacpp: drop logit < max_logit + log(min_p) (llama_sampler_min_p, log via
//           log_canonical). Both keep at least the top min_keep ranks.
class MinP : public Sampler {
 public:
  MinP(float p, int min_keep, bool hf) : p_(p), min_keep_(min_keep), hf_(hf) {}
  void apply(Candidates& c, const SamplingContext&) const override {
    if (p_ <= 0.0f || c.items.empty()) return;
    std::vector<char> keep(c.items.size());  // every entry is written below
    if (hf_) {
      compute_probs(c);
      float pmax = 0.0f;
      for (const Candidate& k : c.items) pmax = k.prob > pmax ? k.prob : pmax;
      float threshold = num::mul_rn(p_, pmax);
      for (size_t i = 0; i < c.items.size(); i++) keep[i] = !(c.items[i].prob < threshold);
      keep_top(keep, order_by_prob(c), min_keep_);
    } else {
      float m = -num::inf_f32();
      for (const Candidate& k : c.items) m = k.logit > m ? k.logit : m;
      float threshold = num::add_rn(m, num::log_canonical(p_));
      const bool strict = fault::active(fault::Fault::MIN_P_BOUNDARY_EXCLUSIVE);  // FAULT: drops logit == threshold
      for (size_t i = 0; i < c.items.size(); i++)
        keep[i] = strict ? c.items[i].logit > threshold : c.items[i].logit >= threshold;
      keep_top(keep, order_by_logit(c), std::max(min_keep_, 1));
    }
    keep_only(c, keep);
  }
  std::string name() const override { return processor_name(Processor::MinP); }
  // hf: min_p * p_max - p (probability); llamacpp: max + log(min_p) - logit.
  RemovalMargin removal_margin(const Candidates& before, int at) const override {
    Candidates c = before;
    if (hf_) {
      compute_probs(c);
      double pmax = 0.0;
      for (const Candidate& k : c.items) pmax = std::max(pmax, (double)k.prob);
      return {(double)p_ * pmax - (double)c.items[at].prob, true};
    }
    double m = -std::numeric_limits<double>::infinity();
    for (const Candidate& k : c.items) m = std::max(m, (double)k.logit);
    return {m + (double)num::log_canonical(p_) - (double)c.items[at].logit, false};
  }

 private:
  float p_;
  int min_keep_;
  bool hf_;
};

}  // namespace

// ---- factory ------------------------------------------------------------------------------
std::unique_ptr<Sampler> make_processor(Processor processor, const SamplerConfig& cfg) {
  const bool hf = cfg.preset == Preset::Hf;
  switch (processor.id()) {
    case Processor::LogitBias: return std::make_unique<LogitBias>(cfg.logit_bias);
    case Processor::Banned: return std::make_unique<Banned>(cfg.banned_tokens);
    case Processor::Penalties:
      return std::make_unique<Penalties>(cfg.repetition_penalty, cfg.frequency_penalty, cfg.presence_penalty,
                                         cfg.penalty_window);
    case Processor::Temperature: return std::make_unique<Temperature>(cfg.temperature);
    case Processor::TopK: return std::make_unique<TopK>(cfg.top_k, cfg.min_keep, hf);
    case Processor::TopP: return std::make_unique<TopP>(cfg.top_p, cfg.min_keep, hf);
    case Processor::MinP: return std::make_unique<MinP>(cfg.min_p, cfg.min_keep, hf);
  }
  throw InputError("sampler", "order", "unknown processor id " + std::to_string((int)processor.id()));
}

}  // namespace oracle
