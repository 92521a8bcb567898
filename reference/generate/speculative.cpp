// Speculative decoding: the accept / resample rule, the drafters and the
// draft -> verify -> rollback loop. docs/speculative.md.
#include "reference/generate/speculative.h"

#include <algorithm>

#include "faults/fault.h"
#include "base/errors.h"
#include "numerics/numerics.h"

namespace oracle {

// ---- processed distribution ------------------------------------------------------------
ProcessedDistribution::ProcessedDistribution(const SamplerConfig& config)
    : config_(config), greedy_(config.temperature <= 0.0f) {
  for (Processor p : config.order.empty() ? preset_order(config.preset) : config.order)
    processors_.add(make_processor(p, config));
}

std::vector<float> ProcessedDistribution::operator()(std::span<const float> logits,
                                                     std::span<const int> history) const {
  Candidates c = candidates_from_logits(logits);
  processors_.apply(c, SamplingContext{history, {}});
  require_input(!c.items.empty(), "sampler", "banned_tokens", "every candidate was removed");
  std::vector<float> out(logits.size(), 0.0f);  // (vocab)
  if (greedy_) {  // the greedy selector's choice: argmax_lowest over processed logits in id order
    std::vector<float> x(c.items.size());       // (n_alive)
    for (size_t i = 0; i < x.size(); i++) x[i] = c.items[i].logit;
    int sel = num::argmax_lowest(x.data(), (int)x.size());
    require_input(sel >= 0, "sampler", "logits", "every logit is NaN");
    out[(size_t)c.items[(size_t)sel].id] = 1.0f;
    return out;
  }
  compute_probs(c);
  for (const Candidate& k : c.items) out[(size_t)k.id] = k.prob;
  return out;
}

// ---- the three decisions ----------------------------------------------------------------
int draw_inverse_cdf(std::span<const float> probs, float u) {
  Candidates c;
  c.items.resize(probs.size());
  for (size_t i = 0; i < probs.size(); i++) c.items[i] = Candidate{(int)i, 0.0f, probs[i]};
  const std::vector<int> order = order_by_prob(c);  // (prob desc, id asc)
  float total = 0.0f;
  for (int i : order) total = num::add_rn(total, probs[(size_t)i]);
  const float target = num::mul_rn(u, total);
  float run = 0.0f;
  int chosen = -1;
  for (int i : order) {
    if (probs[(size_t)i] > 0.0f) chosen = i;  // fallback: the last non-zero entry
    run = num::add_rn(run, probs[(size_t)i]);
    if (run > target) break;
  }
  return chosen;
}

// u * q < p  <=>  u < p / q, without a division. For q > 0 and u < 1 the
// product rounds below q, so p >= q always accepts; p = 0 never does. With u on
// the 2^-24 grid, P(accept) = min(1, p/q) up to 2^-24 plus one rounding of u*q.
bool accept_draft(float p_x, float q_x, float u) {
  if (fault::active(fault::Fault::SPEC_ACCEPT_BY_P)) return u < p_x;  // FAULT: ignores q (p, not min(1, p/q))
  return num::mul_rn(u, q_x) < p_x;
}

std::vector<float> residual(std::span<const float> p, std::span<const float> q) {
  std::vector<float> r(p.size());  // (vocab)
  for (size_t i = 0; i < p.size(); i++) {
    const float d = num::sub_rn(p[i], q[i]);
    r[i] = d > 0.0f ? d : 0.0f;
  }
  if (fault::active(fault::Fault::SPEC_RESAMPLE_FROM_P))
    r.assign(p.begin(), p.end());  // FAULT: resample from p instead of max(0, p - q)
  return r;
}

// ---- one speculative step ---------------------------------------------------------------
// At position t_i = first.position + i, with p_i, q_i the processed target and
// draft distributions and x_i the draft (x_i ~ q_i):
//   accept x_i with probability min(1, p_i(x_i) / q_i(x_i))  [uniform: purpose SpecAccept]
//   on the first rejection emit y ~ normalise(max(0, p_i - q_i)) and stop
//                                                             [uniform: purpose SpecResample]
//   after k acceptances emit a bonus y ~ p_k                  [uniform: purpose Sample]
// Lossless: P(emit y at t_i) = q(y) min(1, p(y)/q(y)) + P(reject) r(y)
//   = min(p(y), q(y)) + (1 - sum_x min(p, q)) max(0, p(y) - q(y)) / sum_x max(0, p - q)
//   = min(p(y), q(y)) + max(0, p(y) - q(y)) = p(y),
// because sum_x max(0, p - q) = 1 - sum_x min(p, q). The bonus draw is the one
// plain sampling makes at t_k, so k = 0 is plain sampling draw for draw.
SpecStep speculative_step(std::span<const float> p, std::span<const float> q,
                          std::span<const int> drafts, int vocab, const rng::RngKey& first) {
  return speculative_step(p, q, drafts, vocab, first, PhiloxUniforms{});
}

SpecStep speculative_step(std::span<const float> p, std::span<const float> q,
                          std::span<const int> drafts, int vocab, const rng::RngKey& first,
                          const UniformSource& uniform) {
  using fault::Fault;
  const size_t v = (size_t)vocab, k = drafts.size();
  SpecStep s;
  bool rejected = false;  // only with the fault SPEC_REJECT_NO_STOP does the loop go on after one
  for (size_t i = 0; i <= k; i++) {
    rng::RngKey key = first;
    if (!fault::active(Fault::SPEC_RNG_SAME_POSITION)) key.position = first.position + (uint32_t)i;  // FAULT: not
    const std::span<const float> p_i = p.subspan(i * v, v);
    if (i == k) {  // every draft accepted: the bonus token
      if (rejected) break;
      const size_t row = fault::active(Fault::SPEC_BONUS_FROM_LAST_DRAFT_ROW) && k > 0 ? k - 1 : k;  // FAULT
      s.tokens.push_back(draw_inverse_cdf(p.subspan(row * v, v), uniform(key, rng::kPurposeSample)));
      break;
    }
    const std::span<const float> q_i = q.subspan(i * v, v);
    const int x = drafts[i];
    if (accept_draft(p_i[(size_t)x], q_i[(size_t)x], uniform(key, rng::kPurposeSpecAccept))) {
      s.tokens.push_back(x);
      s.accepted++;
      continue;
    }
    const float u = uniform(key, rng::kPurposeSpecResample);
    int y = draw_inverse_cdf(residual(p_i, q_i), u);
    if (y < 0) y = draw_inverse_cdf(p_i, u);  // residual all zero: only reachable by rounding
    s.tokens.push_back(y);
    rejected = true;
    if (!fault::active(Fault::SPEC_REJECT_NO_STOP)) break;  // FAULT: keeps testing the later drafts
  }
  return s;
}

// ---- model drafter ------------------------------------------------------------------------
// ---- sequence runners ---------------------------------------------------------------------
ReferenceSequence::ReferenceSequence(const Model& model, const KvCacheOptions& kv, const ForwardOptions& fo)
    : model_(model), kv_(model.config, kv), fo_(fo) {}

std::vector<float> ReferenceSequence::forward(std::span<const int> tokens, bool all_logits) {
  ForwardOptions fo = fo_;
  fo.all_logits = all_logits;
  return oracle::forward(model_, kv_, 0, tokens, fo);
}

// ---- model drafter ------------------------------------------------------------------------
ModelDrafter::ModelDrafter(const Model& model, const SamplerConfig& config, const KvCacheOptions& kv,
                           const ForwardOptions& fo)
    : ModelDrafter(std::make_unique<ReferenceSequence>(model, kv, fo), config) {}

ModelDrafter::ModelDrafter(std::unique_ptr<SequenceRunner> seq, const SamplerConfig& config)
    : seq_(std::move(seq)), dist_(config) {}

// Rollback: keep the longest cached prefix shared with `history` (at most
// t - 1 tokens, so at least one token is run), then run the rest in one pass.
std::vector<float> ModelDrafter::catch_up(std::span<const int> history) {
  size_t keep = 0;
  const bool by_length = fault::active(fault::Fault::DRAFT_ROLLBACK_KEEPS_REJECTED);  // FAULT: tokens not compared
  while (keep < cached_.size() && keep + 1 < history.size() && (by_length || cached_[keep] == history[keep])) keep++;
  seq_->truncate((int)keep);
  cached_.resize(keep);
  passes_++;
  const std::span<const int> rest = history.subspan(keep);
  cached_.insert(cached_.end(), rest.begin(), rest.end());
  return seq_->forward(rest, false);
}

// x_i ~ q_i by the inverse CDF with uniform (seed, seq, t + i, 0, SpecDraft).
Draft ModelDrafter::propose(std::span<const int> history, int k, const rng::RngKey& first) {
  Draft d;
  k = std::min(k, seq_->model().config.seq_len - (int)history.size() + 1);  // last fed position t+k-2
  if (k <= 0) return d;
  std::vector<int> ext(history.begin(), history.end());  // (t + i) history then drafts
  std::vector<float> logits = catch_up(history);         // (vocab)
  for (int i = 0; i < k; i++) {
    if (i > 0) {
      passes_++;
      cached_.push_back(ext.back());
      logits = seq_->forward(std::span<const int>(&ext.back(), 1), false);
    }
    const std::vector<float> q = dist_(logits, ext);
    rng::RngKey key = first;
    key.position = first.position + (uint32_t)i;
    const int x = draw_inverse_cdf(q, rng::uniform_at(key, 0, rng::kPurposeSpecDraft));
    d.tokens.push_back(x);
    d.q.insert(d.q.end(), q.begin(), q.end());
    ext.push_back(x);
  }
  return d;
}

// ---- n-gram (prompt lookup) drafter ----------------------------------------------------------
Draft NgramDrafter::propose(std::span<const int> history, int k, const rng::RngKey&) {
  Draft d;
  const int t = (int)history.size();
  for (int n = std::min(max_ngram_, t - 1); n >= 1 && d.tokens.empty(); n--) {
    const std::span<const int> suffix = history.subspan((size_t)(t - n));
    for (int start = t - n - 1; start >= 0; start--) {  // latest earlier occurrence first
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + start)) continue;
      for (int j = start + n; j < t && (int)d.tokens.size() < k; j++) d.tokens.push_back(history[(size_t)j]);
      break;
    }
  }
  d.q.assign(d.tokens.size() * (size_t)vocab_, 0.0f);  // (n, vocab) one-hot rows
  for (size_t i = 0; i < d.tokens.size(); i++) d.q[i * (size_t)vocab_ + (size_t)d.tokens[i]] = 1.0f;
  return d;
}

// ---- the generation loop --------------------------------------------------------------------
double SpecMetrics::expected_tokens_per_pass(double a, int k) {
  if (a >= 1.0) return (double)(k + 1);
  double a_pow = 1.0;  // a^(k+1)
  for (int i = 0; i <= k; i++) a_pow *= a;
  return (1.0 - a_pow) / (1.0 - a);
}

static void check_options(const Model& target, std::span<const int> prompt, const SpecOptions& o) {
  const Config& c = target.config;
  require_input(!prompt.empty(), "speculative", "prompt", "needs at least one token");
  require_input((int)prompt.size() < c.seq_len, "speculative", "prompt",
                std::to_string(prompt.size()) + " tokens leave no room in a context of " + std::to_string(c.seq_len));
  for (int id : prompt) require_input(id >= 0 && id < c.vocab_size, "speculative", "prompt", "token id out of range");
  require_input(o.k >= 1 && o.k <= o.k_max, "speculative", "k", "must be in [1, k_max]");
  require_input(o.max_tokens >= 1, "speculative", "max_tokens", "must be >= 1");
  validate(o.sampler, c.vocab_size);
}

// The verify pass: one forward (all_logits) over the tokens the cache lacks —
// the last history token(s) and the m drafts — and the target's processed
// distribution of each position t .. t+m, row i conditioned on ext[0 .. t+i).
static std::vector<float> verify(SequenceRunner& target, std::span<const int> ext, size_t t,
                                 const ProcessedDistribution& dist) {
  const size_t start = (size_t)target.length(), v = (size_t)target.model().config.vocab_size;
  const std::vector<float> logits = target.forward(ext.subspan(start), true);  // (ext - start, vocab)
  std::vector<float> p;  // (m + 1, vocab)
  for (size_t pos = t; pos <= ext.size(); pos++) {
    const size_t row = pos - 1 - start;  // the row that predicts position `pos`
    const std::vector<float> p_row = dist(std::span<const float>(logits).subspan(row * v, v), ext.first(pos));
    p.insert(p.end(), p_row.begin(), p_row.end());
  }
  return p;
}

SpecStep SequenceRunner::verify_round(std::span<const int> ext, size_t t, const Draft& d, const rng::RngKey& first,
                                      const ProcessedDistribution& dist) {
  const std::vector<float> p = verify(*this, ext, t, dist);  // (m + 1, vocab)
  return speculative_step(p, d.q, d.tokens, model().config.vocab_size, first);
}

// Appends the step's tokens to the history and the output, up to a stop token.
static void emit(SpecResult& r, std::vector<int>& history, const std::vector<int>& tokens,
                 const SpecOptions& o, int seq_len) {
  for (int y : tokens) {
    history.push_back(y);
    r.output_ids.push_back(y);
    r.metrics.emitted++;
    if (std::find(o.stop_token_ids.begin(), o.stop_token_ids.end(), y) != o.stop_token_ids.end()) {
      r.finish_reason = "stop";
      return;
    }
  }
  if ((int)r.output_ids.size() >= o.max_tokens || (int)history.size() >= seq_len) r.finish_reason = "length";
}

static int next_k(int k, const SpecStep& s, size_t drafted, const SpecOptions& o) {
  if (!o.adaptive_k || drafted == 0) return k;
  if (s.accepted == (int)drafted) return std::min(k + 1, o.k_max);
  return s.accepted == 0 ? std::max(k - 1, 1) : k;
}

// Invariant at the top of a round: the target cache holds a prefix of the
// history (all but its last token after the first round); the history never
// exceeds seq_len tokens. Rollback is KvCache::truncate to history + accepted.
SpecResult generate_speculative(const Model& target, Drafter& drafter, std::span<const int> prompt,
                                const SpecOptions& o) {
  check_options(target, prompt, o);
  ReferenceSequence seq(target, o.kv, o.forward);
  return generate_speculative_with(seq, drafter, prompt, o);
}

SpecResult generate_speculative_with(SequenceRunner& target, Drafter& drafter, std::span<const int> prompt,
                                     const SpecOptions& o) {
  check_options(target.model(), prompt, o);
  require_input(target.length() == 0, "speculative", "target", "the target sequence must start empty");
  const int vocab = target.model().config.vocab_size, seq_len = target.model().config.seq_len;
  const ProcessedDistribution dist(o.sampler);
  std::vector<int> ext(prompt.begin(), prompt.end());  // (t + m) the history, then this round's drafts
  SpecResult r;
  r.metrics.accepted_histogram.assign((size_t)o.k_max + 1, 0);
  int k = o.k;
  while (r.finish_reason.empty()) {
    const size_t t = ext.size();
    const int room = std::min(seq_len - (int)t, o.max_tokens - (int)r.output_ids.size());  // >= 1
    const rng::RngKey first{o.sampler.seed, o.seq_id, (uint32_t)t};
    const Draft d = drafter.propose(ext, std::min(k, room - 1), first);
    require_input(d.q.size() == d.tokens.size() * (size_t)vocab, drafter.name(), "vocab_size",
                  "the drafter's vocabulary differs from the target's (" + std::to_string(vocab) + ")");
    ext.insert(ext.end(), d.tokens.begin(), d.tokens.end());
    const SpecStep s = target.verify_round(ext, t, d, first, dist);
    ext.resize(t);
    target.truncate((int)t + s.accepted);
    r.metrics.rounds++;
    r.metrics.drafted += (long)d.tokens.size();
    r.metrics.accepted += s.accepted;
    r.metrics.evaluated += s.accepted + (s.accepted < (int)d.tokens.size() ? 1 : 0);
    r.metrics.accepted_histogram[(size_t)s.accepted]++;
    k = next_k(k, s, d.tokens.size(), o);
    emit(r, ext, s.tokens, o, seq_len);
  }
  r.metrics.draft_passes = drafter.passes();
  return r;
}

}  // namespace oracle
