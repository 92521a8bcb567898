#pragma once
// ============================================================================
// llm_oracle: the sampler chain (docs/sampling.md). Processors in the preset's
// order (or `order`), then greedy argmax (temperature <= 0) or a Philox
// inverse-CDF draw keyed by (seed, seq, position): the same token for the same
// key on every run, thread count and batch position.
// ============================================================================
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llm_oracle/errors.h"

namespace llm_oracle {

// Boundary-tie, top-p and min-p semantics of llama.cpp or Hugging Face.
enum class Preset { LlamaCpp, Hf };

struct SamplerConfig {
  Preset preset = Preset::LlamaCpp;
  std::vector<std::string> order;  // "logit_bias", "banned", "penalties", "temperature",
                                   // "top_k", "top_p", "min_p"; empty: the preset's order
  float temperature = 1.0f;        // <= 0: greedy
  int top_k = 0;                   // <= 0: off
  float top_p = 1.0f;              // >= 1: off
  float min_p = 0.0f;              // <= 0: off
  int min_keep = 1;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int penalty_window = -1;         // last N history tokens; -1 all, 0 none
  std::vector<std::pair<int, float>> logit_bias;
  std::vector<int> banned_tokens;
  uint64_t seed = 0;               // Philox key part 1
};
// The preset's defaults and processor order.
SamplerConfig preset_config(Preset preset);

// The draw's identity besides the seed: request id and the position the
// sampled token will occupy (Philox key parts 2 and 3).
struct RngKey {
  uint32_t seq = 0;
  uint32_t position = 0;
};

struct SampleResult {
  int token = -1;
  std::vector<int> ids;      // survivors after the processors, increasing id
  std::vector<float> probs;  // their probabilities in the processed distribution
};

class Sampler {
 public:
  // InputError("sampler", field, ...) for a bad value or an unknown name.
  Sampler(const SamplerConfig& config, int vocab_size);
  ~Sampler();
  Sampler(Sampler&&) noexcept;
  Sampler& operator=(Sampler&&) noexcept;
  // logits (vocab_size); history: the sequence so far (prompt with BOS + generated).
  SampleResult sample(std::span<const float> logits, std::span<const int> history, RngKey key) const;
  std::string name() const;  // "chain(top_k,...,draw)"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llm_oracle
