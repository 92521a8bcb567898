// llm_oracle::Sampler over reference/sampling/sampler.h.
#include "llm_oracle/sampler.h"

#include "api/convert.h"
#include "reference/base/errors.h"

namespace llm_oracle {

namespace detail {

oracle::SamplerConfig to_internal(const SamplerConfig& c) {
  oracle::SamplerConfig s;
  s.preset = c.preset == Preset::Hf ? oracle::Preset::Hf : oracle::Preset::LlamaCpp;
  s.order = c.order;
  s.temperature = c.temperature, s.top_k = c.top_k, s.top_p = c.top_p, s.min_p = c.min_p;
  s.min_keep = c.min_keep;
  s.repetition_penalty = c.repetition_penalty, s.frequency_penalty = c.frequency_penalty;
  s.presence_penalty = c.presence_penalty, s.penalty_window = c.penalty_window;
  s.logit_bias = c.logit_bias, s.banned_tokens = c.banned_tokens, s.seed = c.seed;
  return s;
}

SamplerConfig from_internal(const oracle::SamplerConfig& s) {
  SamplerConfig c;
  c.preset = s.preset == oracle::Preset::Hf ? Preset::Hf : Preset::LlamaCpp;
  c.order = s.order;
  c.temperature = s.temperature, c.top_k = s.top_k, c.top_p = s.top_p, c.min_p = s.min_p;
  c.min_keep = s.min_keep;
  c.repetition_penalty = s.repetition_penalty, c.frequency_penalty = s.frequency_penalty;
  c.presence_penalty = s.presence_penalty, c.penalty_window = s.penalty_window;
  c.logit_bias = s.logit_bias, c.banned_tokens = s.banned_tokens, c.seed = s.seed;
  return c;
}

}  // namespace detail

SamplerConfig preset_config(Preset preset) {
  return detail::from_internal(oracle::preset_config(preset == Preset::Hf ? oracle::Preset::Hf : oracle::Preset::LlamaCpp));
}

struct Sampler::Impl {
  oracle::SamplerConfig config;
  oracle::SamplerChain chain;
  int vocab_size = 0;
};

Sampler::Sampler(const SamplerConfig& config, int vocab_size) : impl_(std::make_unique<Impl>()) {
  oracle::require_input(vocab_size > 0, "sampler", "vocab_size", "must be positive");
  impl_->config = detail::to_internal(config);
  oracle::validate(impl_->config, vocab_size);
  impl_->chain = oracle::build_chain(impl_->config);
  impl_->vocab_size = vocab_size;
}
Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

SampleResult Sampler::sample(std::span<const float> logits, std::span<const int> history, RngKey key) const {
  oracle::require_input((int)logits.size() == impl_->vocab_size, "sampler", "logits",
                        "expected " + std::to_string(impl_->vocab_size) + " logits, got " + std::to_string(logits.size()));
  oracle::SamplingContext ctx{history, oracle::rng::RngKey{impl_->config.seed, key.seq, key.position}};
  oracle::SampleResult r = oracle::sample(impl_->chain, logits, ctx);
  oracle::compute_probs(r.processed);  // the processed distribution (a greedy selector leaves probs unset)
  SampleResult out;
  out.token = r.token;
  for (const oracle::Candidate& c : r.processed.items) out.ids.push_back(c.id), out.probs.push_back(c.prob);
  return out;
}

std::string Sampler::name() const { return impl_->chain.name(); }

}  // namespace llm_oracle
