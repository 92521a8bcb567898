// llm_oracle::Sampler over reference/sampling/sampler.h.
#include "llm_oracle/sampler.h"

#include "api/convert.h"
#include "base/errors.h"

namespace llm_oracle {

namespace detail {

namespace {
// The fields both structs spell alike (the preset and the processor names are converted by the callers).
template <class From, class To>
void copy_fields(const From& f, To& t) {
  t.temperature = f.temperature, t.top_k = f.top_k, t.top_p = f.top_p, t.min_p = f.min_p;
  t.min_keep = f.min_keep;
  t.repetition_penalty = f.repetition_penalty, t.frequency_penalty = f.frequency_penalty;
  t.presence_penalty = f.presence_penalty, t.penalty_window = f.penalty_window;
  t.logit_bias = f.logit_bias, t.banned_tokens = f.banned_tokens, t.seed = f.seed;
}
}  // namespace

oracle::SamplerConfig to_internal(const SamplerConfig& c) {
  oracle::SamplerConfig s;
  s.preset = c.preset == Preset::Hf ? oracle::Preset::Hf : oracle::Preset::LlamaCpp;
  copy_fields(c, s);
  for (const std::string& name : c.order) s.order.push_back(oracle::parse_processor(name, "sampler", "order"));
  return s;
}

SamplerConfig from_internal(const oracle::SamplerConfig& s) {
  SamplerConfig c;
  c.preset = s.preset == oracle::Preset::Hf ? Preset::Hf : Preset::LlamaCpp;
  copy_fields(s, c);
  for (oracle::Processor p : s.order) c.order.push_back(p.name());
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
