#pragma once
// ============================================================================
// Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a cheap
// drafter proposes k tokens, the target model scores all of them in one
// forward pass, and a rejection rule keeps the output distributed exactly as
// the target's processed distribution p (lossless in distribution).
//
//   speculative_step()      the accept / resample rule on given p, q, drafts
//   ModelDrafter            a second model (same vocabulary) with its own KvCache
//   NgramDrafter            prompt lookup: deterministic drafts, q one-hot
//   generate_speculative()  draft -> verify -> accept -> roll back, repeated
//
// Every uniform is a Philox draw keyed by (seed, seq, position, draw=0,
// purpose) — see "RNG" in docs/speculative.md. Greedy configs turn p and q
// into one-hot vectors, so greedy speculative output equals plain greedy
// output bit for bit for every k and drafter.
// ============================================================================
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/model.h"
#include "numerics/philox.h"
#include "reference/sampling/sampler.h"

namespace oracle {

// ---- processed distribution over the whole vocabulary --------------------------
// The config's processors (its order, no selector) on one logits row, then the
// probabilities the draw selector would use: softmax_canonical of the
// surviving processed logits, 0 for every id the chain removed. A greedy
// config (temperature <= 0) gives the one-hot vector of the greedy choice.
class ProcessedDistribution {
 public:
  explicit ProcessedDistribution(const SamplerConfig& config);
  // history: tokens at positions 0 .. t-1 when `logits` predicts position t.
  std::vector<float> operator()(std::span<const float> logits, std::span<const int> history) const;  // (vocab)
  const SamplerConfig& config() const { return config_; }

 private:
  SamplerConfig config_;
  SamplerChain processors_;
  bool greedy_ = false;
};

// ---- the three decisions of one position (pure; tests enumerate them) ----------
// Inverse CDF exactly as the sampler's draw selector: (prob desc, id asc)
// order, target = u * sequential float32 total, first running sum > target,
// fallback the last non-zero entry. -1 if every entry is 0.
int draw_inverse_cdf(std::span<const float> probs, float u);
// Accept draft x with probability min(1, p(x)/q(x)): u * q(x) < p(x).
bool accept_draft(float p_x, float q_x, float u);
// The unnormalised residual max(0, p - q); draw_inverse_cdf normalises it.
std::vector<float> residual(std::span<const float> p, std::span<const float> q);  // (vocab)

// ---- one speculative step --------------------------------------------------------
// Where the step's uniforms come from: u(key, purpose) for the position in
// key.position. Production draws Philox (PhiloxUniforms); tests substitute a
// grid of u values through this same interface to enumerate the step exactly.
class UniformSource {
 public:
  virtual ~UniformSource() = default;
  virtual float operator()(const rng::RngKey& key, uint32_t purpose) const = 0;
};

// rng::uniform_at(key, draw 0, purpose): the draws every pipeline makes.
class PhiloxUniforms : public UniformSource {
 public:
  float operator()(const rng::RngKey& key, uint32_t purpose) const override {
    return rng::uniform_at(key, 0, purpose);
  }
};

struct SpecStep {
  std::vector<int> tokens;  // (accepted + 1) accepted drafts, then the replacement or bonus
  int accepted = 0;
};

// p: (k+1, vocab) target processed distributions at positions t .. t+k, row i
//    conditioned on drafts[0..i); q: (k, vocab) draft processed distributions
//    at t .. t+k-1; drafts: (k); first.position = t.
SpecStep speculative_step(std::span<const float> p, std::span<const float> q,
                          std::span<const int> drafts, int vocab, const rng::RngKey& first);
// The same step with the uniforms taken from `uniforms` (the overload above
// passes PhiloxUniforms).
SpecStep speculative_step(std::span<const float> p, std::span<const float> q,
                          std::span<const int> drafts, int vocab, const rng::RngKey& first,
                          const UniformSource& uniforms);

// A drafter's proposal (drafters below).
struct Draft {
  std::vector<int> tokens;  // (n) proposed ids for positions t .. t+n-1
  std::vector<float> q;     // (n, vocab) the distribution each was drawn from
};

// ---- one KV sequence of one model -----------------------------------------------------
// What the speculative loop runs its target on and ModelDrafter its draft model on:
// the reference (ReferenceSequence: forward() over a KvCache) or the device
// (optimized::DeviceSequence: Backend + DeviceKv), the same bits either way.
class SequenceRunner {
 public:
  virtual ~SequenceRunner() = default;
  virtual const Model& model() const = 0;
  virtual int length() const = 0;
  virtual void truncate(int n) = 0;  // keep the first n positions
  // Appends `tokens`; (n, vocab) logits of every position when all_logits, else (1, vocab).
  virtual std::vector<float> forward(std::span<const int> tokens, bool all_logits) = 0;
  // One round's verify pass and rule: appends ext[length() ..) (the history's
  // uncached tail, then the drafts; ext = history of t tokens + d.tokens) in one
  // all-logits pass, takes the target's processed distribution p of positions
  // t .. t + m from it (row i conditioned on ext[0 .. t + i)) and applies
  // speculative_step(p, d.q, d.tokens, vocab, first). This default does both on
  // the host; optimized::DeviceSequence does them on the device (same bits).
  virtual SpecStep verify_round(std::span<const int> ext, size_t t, const Draft& d, const rng::RngKey& first,
                                const ProcessedDistribution& dist);
};

class ReferenceSequence : public SequenceRunner {
 public:
  ReferenceSequence(const Model& model, const KvCacheOptions& kv, const ForwardOptions& fo = {});
  const Model& model() const override { return model_; }
  int length() const override { return kv_.length(0); }
  void truncate(int n) override { kv_.truncate(0, n); }
  std::vector<float> forward(std::span<const int> tokens, bool all_logits) override;

 private:
  const Model& model_;
  KvCache kv_;
  ForwardOptions fo_;
};

// ---- drafters -----------------------------------------------------------------------

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to k tokens to follow `history` (t = history.size(); first.position = t).
  virtual Draft propose(std::span<const int> history, int k, const rng::RngKey& first) = 0;
  virtual long passes() const { return 0; }  // forward passes made so far
  virtual std::string name() const = 0;
};

// A second model sharing the target's vocabulary. Its KvCache follows the
// history: each propose() truncates it to the longest prefix it shares with
// `history` (rollback of rejected drafts), then catches up.
class ModelDrafter : public Drafter {
 public:
  ModelDrafter(const Model& model, const SamplerConfig& config, const KvCacheOptions& kv,
               const ForwardOptions& fo = {});
  // The draft model on another runner (the device's); `seq` starts empty.
  ModelDrafter(std::unique_ptr<SequenceRunner> seq, const SamplerConfig& config);
  Draft propose(std::span<const int> history, int k, const rng::RngKey& first) override;
  long passes() const override { return passes_; }
  std::string name() const override { return "model:" + seq_->model().path; }

 private:
  std::vector<float> catch_up(std::span<const int> history);  // (vocab) logits for t
  std::unique_ptr<SequenceRunner> seq_;
  std::vector<int> cached_;  // (seq_->length()) the token ids the draft cache holds
  ProcessedDistribution dist_;
  long passes_ = 0;
};

// Prompt lookup: the latest earlier occurrence of the history's last n tokens
// (n = max_ngram down to 1) and the tokens that followed it. Deterministic, so
// q is one-hot and the acceptance probability is min(1, p(x)/1) = p(x).
class NgramDrafter : public Drafter {
 public:
  NgramDrafter(int max_ngram, int vocab) : max_ngram_(max_ngram), vocab_(vocab) {}
  Draft propose(std::span<const int> history, int k, const rng::RngKey& first) override;
  std::string name() const override { return "ngram:" + std::to_string(max_ngram_); }

 private:
  int max_ngram_, vocab_;
};

// ---- the generation loop ------------------------------------------------------------
struct SpecOptions {
  int k = 4;                    // drafted tokens per round, >= 1
  bool adaptive_k = false;      // k+1 after a fully accepted round, k-1 after a rejected first draft
  int k_max = 16;               // adaptive bound
  int max_tokens = 64;          // generated tokens (the prompt is not counted)
  SamplerConfig sampler;        // the target's processors and the seed
  uint32_t seq_id = 0;          // RNG identity of the request
  std::vector<int> stop_token_ids;  // generation ends after emitting one of these
  KvCacheOptions kv;            // the target's cache (paged or contiguous)
  ForwardOptions forward;       // threads / pool (all_logits is set internally)
};

struct SpecMetrics {
  long rounds = 0;          // target verify passes (the prompt prefill is not counted)
  long drafted = 0, accepted = 0, emitted = 0;
  long evaluated = 0;       // drafts the rule tested: accepted + rejected (not those after a rejection)
  long draft_passes = 0;    // drafter forward passes (0 for n-gram)
  std::vector<long> accepted_histogram;  // (k_max + 1) rounds by accepted count
  // alpha: the per-draft acceptance probability, estimated over tested drafts.
  double acceptance_rate() const { return evaluated ? (double)accepted / (double)evaluated : 0.0; }
  double tokens_per_pass() const { return rounds ? (double)emitted / (double)rounds : 0.0; }
  // (1 - a^(k+1)) / (1 - a): tokens a round emits when each draft is accepted
  // independently with probability a (a = 1 -> k + 1).
  static double expected_tokens_per_pass(double a, int k);
};

struct SpecResult {
  std::vector<int> output_ids;  // generated ids, including a stop token that ended it
  std::string finish_reason;    // "stop" or "length"
  SpecMetrics metrics;
};

// prompt: ids with BOS when wanted (>= 1 token). InputError on bad options.
SpecResult generate_speculative(const Model& target, Drafter& drafter, std::span<const int> prompt,
                                const SpecOptions& options);
// The same loop with the target's passes and rollbacks on `target` (an empty
// sequence; options.kv and options.forward are then the runner's business).
SpecResult generate_speculative_with(SequenceRunner& target, Drafter& drafter, std::span<const int> prompt,
                                     const SpecOptions& options);

}  // namespace oracle
