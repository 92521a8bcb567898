#pragma once
// ============================================================================
// Sampler chain: small processors over a candidate array, run in a configured
// order, ending in a selector (greedy argmax or a Philox inverse-CDF draw).
// Everything is float32 in one fixed order (docs/sampling.md), so the chosen
// token and its probabilities are bit-exact across runs, threads and batch
// positions, like the forward pass.
// ============================================================================
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "numerics/philox.h"

namespace oracle {

// ---- candidates -------------------------------------------------------------
struct Candidate {
  int id = 0;
  float logit = 0.0f;  // processed so far
  float prob = 0.0f;   // valid only right after compute_probs()
};

// Always kept in increasing id order: filters erase, never reorder. Processors
// that need rank order build a sorted index internally (ties by lowest id).
struct Candidates {
  std::vector<Candidate> items;  // (n_alive)
  int selected = -1;             // index into items, set by a selector
};

Candidates candidates_from_logits(std::span<const float> logits);  // ids 0..n-1
// prob = softmax_canonical over the current logits, in id order.
void compute_probs(Candidates& c);
// The candidates' total order: larger value first, NaN after every number, then lower id.
// A strict weak ordering (std::sort's requirement): irreflexive, asymmetric, transitive.
bool ranks_before(float xa, int ia, float xb, int ib);
// Indices of c.items ordered by (logit desc, id asc) / (prob desc, id asc).
std::vector<int> order_by_logit(const Candidates& c);
std::vector<int> order_by_prob(const Candidates& c);

// ---- what a processor may look at ---------------------------------------------
struct SamplingContext {
  std::span<const int> history;  // (n_history) the sequence so far: prompt (with BOS) + generated
  rng::RngKey rng;               // keyed draw identity: (seed, seq id, position)
};

// How far past a filter's own boundary a removed candidate was (replay's
// "borderline" test, audit/replay/replay.h): a logit distance for top-k and llamacpp
// min-p, a probability-mass distance for top-p and hf min-p; +inf where there
// is no boundary to be near (banned, or a processor that removes nothing).
struct RemovalMargin {
  double distance = std::numeric_limits<double>::infinity();
  bool in_probability = false;
};

// A processor (or a selector, or a chain of them). One required operation.
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual void apply(Candidates& c, const SamplingContext& ctx) const = 0;
  virtual std::string name() const = 0;
  // For the candidate at index `at` of `before` (what apply() was given) that
  // apply() removed. Computed in double from the same rule apply() uses.
  virtual RemovalMargin removal_margin(const Candidates& before, int at) const { return {}; }
};

class SamplerChain : public Sampler {
 public:
  void add(std::unique_ptr<Sampler> s) { steps_.push_back(std::move(s)); }
  void apply(Candidates& c, const SamplingContext& ctx) const override;
  std::string name() const override;  // "chain(a,b,...)"
  const std::vector<std::unique_ptr<Sampler>>& steps() const { return steps_; }

 private:
  std::vector<std::unique_ptr<Sampler>> steps_;
};

// ---- configuration (serialisable: the replay log stores it) ------------------------
// Preset semantics: Hugging Face transformers or llama.cpp; they fix how top-k
// treats boundary ties, the top-p rule and the min-p space. Spelled "hf" and
// "llamacpp" only in JSON and on the command line (preset_name / parse_preset).
enum class Preset { LlamaCpp, Hf };
const char* preset_name(Preset p);
// InputError(file, field, ...) for anything but "llamacpp" and "hf".
Preset parse_preset(const std::string& name, const std::string& file, const std::string& field);

// The processors of a chain: an enum with one name table. The names
// ("logit_bias", "banned", "penalties", "temperature", "top_k", "top_p",
// "min_p") are spelled only in sampler_presets.cpp's table and read or written
// only at the boundary (JSON logs and golden records, the CLI, Python, foreign
// engine logs) through processor_name / parse_processor; inside the library an
// order is written with the enum: `config.order = {Processor::TopK, Processor::Temperature}`.
class Processor {
 public:
  enum Id : uint8_t { LogitBias, Banned, Penalties, Temperature, TopK, TopP, MinP };
  static constexpr int kCount = 7;
  constexpr Processor(Id id) : id_(id) {}
  constexpr Id id() const { return id_; }
  const char* name() const;
  bool operator==(const Processor&) const = default;

 private:
  Id id_;
};
const char* processor_name(Processor p);
// InputError(file, field, "unknown processor '<name>'") for a name not in the table.
Processor parse_processor(const std::string& name, const std::string& file, const std::string& field);

struct SamplerConfig {
  Preset preset = Preset::LlamaCpp;
  std::vector<Processor> order;    // empty = the preset's order
  float temperature = 1.0f;        // <= 0: greedy selection (argmax, ties lowest id)
  int top_k = 0;                   // <= 0: off
  float top_p = 1.0f;              // >= 1: off
  float min_p = 0.0f;              // <= 0: off
  int min_keep = 1;                // top-p / min-p / hf top-k never keep fewer
  float repetition_penalty = 1.0f; // 1: off
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int penalty_window = -1;         // last N history tokens; -1 all, 0 none
  std::vector<std::pair<int, float>> logit_bias;  // (id, added to the logit)
  std::vector<int> banned_tokens;
  uint64_t seed = 0;
  bool operator==(const SamplerConfig&) const = default;  // field by field (a cached chain's key)
};

std::vector<Processor> preset_order(Preset preset);
SamplerConfig preset_config(Preset preset);  // defaults + that preset's order
// Greedy selection with no processor that can move the argmax (repetition /
// frequency / presence penalties, logit bias, banned ids; top-k/top-p/min-p
// always keep the argmax): the configurations the device backends run.
bool plain_greedy(const SamplerConfig& config);
// Throws InputError("sampler", field, ...) on bad values / a processor listed twice.
void validate(const SamplerConfig& config, int vocab_size);
// Processors in order (config.order or the preset's), then the selector.
SamplerChain build_chain(const SamplerConfig& config);
std::unique_ptr<Sampler> make_processor(Processor processor, const SamplerConfig& config);
// "greedy" when temperature <= 0, else "draw" (Philox inverse CDF).
std::unique_ptr<Sampler> make_selector(const SamplerConfig& config);

void to_json(nlohmann::json& j, const SamplerConfig& c);
void from_json(const nlohmann::json& j, SamplerConfig& c);

// ---- one sampling decision ------------------------------------------------------------
struct SampleResult {
  int token = -1;
  Candidates processed;  // survivors after the chain, probs of the processed distribution
};

SampleResult sample(const SamplerChain& chain, std::span<const float> logits,
                    const SamplingContext& ctx);

}  // namespace oracle
