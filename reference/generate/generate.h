#pragma once
// ============================================================================
// The generation loop: tokenize -> prefill -> [sample -> stream text through
// the detokenizer and stop matcher -> decode one token] until a stop.
// Sampling is keyed by (seed, seq_id, position) only, so a request produces
// the same ids, logprobs and text alone, next to any batch-mates, and with
// any thread count (docs/sampling.md, "Generation").
// ============================================================================
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reference/sampling/logprobs.h"
#include "reference/model/model.h"
#include "reference/compute/kv_cache.h"
#include "reference/compute/tensor_split.h"
#include "numerics/profile.h"
#include "reference/sampling/sampler.h"
#include "reference/tokenizer/tokenizer.h"

namespace oracle {

struct GenerateOptions {
  int max_tokens = 256;                    // generated tokens, >= 1 (the prompt is not counted)
  SamplerConfig sampler;                   // includes the seed
  uint32_t seq_id = 0;                     // RNG identity of the request (not a KV slot)
  std::vector<std::string> stop_strings;
  std::vector<int> stop_token_ids;         // in addition to EOS (and BOS if Config::stop_on_bos)
  bool stop_on_eos = true;
  bool add_bos = true;
  bool add_eos = false;                    // append EOS to the prompt (the vocabulary's add_eos_token)
  bool parse_special = false;              // control tokens written in the prompt become their ids
  int threads = 1;                         // forward pass threads: changes no bit
  int prefill_chunk = 0;                   // > 0: prefill in chunks of this many tokens (changes no bit)
  int logprobs_top_n = 5;                  // alternatives kept per step (raw and processed)
  KvCacheOptions kv;                       // contiguous (default) or paged; changes no bit
  const TensorSplit* split = nullptr;      // tensor parallelism (generate() only; forward.h): changes no bit
  num::NumericsProfile numerics = num::NumericsProfile::Canonical;  // ForwardOptions::numerics (batches: request 0's)
  std::function<void(const std::string&)> on_text;  // streamed text, in order
};

struct GenerationStep {
  int token = -1;
  std::string logits_sha256;  // SHA-256 of the raw logits as little-endian float32 bytes
  LogprobReport logprobs;
};

struct GenerationResult {
  std::vector<int> prompt_ids;   // (n_prompt) with BOS when added
  std::vector<int> output_ids;   // (n_steps) every sampled id, including the one that stopped
  std::string text;              // streamed text: stop tokens and stop strings excluded
  std::string finish_reason;     // "stop" (EOS, BOS, stop token, stop string) or "length"
  std::string stop_detail;       // "eos", "stop_token", "stop_string" or "length"
  int invalid_utf8_replaced = 0; // invalid byte runs from the model shown as U+FFFD in `text`
  KvMemoryReport kv_memory;      // the cache after generation (not part of the JSON record)
  int prefix_tokens_reused = 0;  // prompt tokens whose K/V came from the prefix cache
  SamplerConfig sampler;
  uint32_t seq_id = 0;
  std::vector<GenerationStep> steps;  // (n_steps)
  double prefill_seconds = 0.0;  // wall time of the prompt's forward pass(es) (not part of the JSON record)
  double decode_seconds = 0.0;   // wall time of the rest: sampling and one forward per token (not recorded)
};

// One request. InputError for an empty/too-long prompt or a bad sampler config.
GenerationResult generate(const Model& model, const Tokenizer& tokenizer, const std::string& prompt,
                          const GenerateOptions& options);

// ---- the same loop on another pipeline (optimized/device_pipeline.cpp) ---------------
struct SampledToken {
  int token = -1;
  LogprobReport logprobs;
};

// The forward pass and the sampling decision of one request, supplied by the caller.
class StepEngine {
 public:
  virtual ~StepEngine() = default;
  // Appends `tokens` to the request's sequence; returns the last position's logits (vocab).
  virtual std::vector<float> forward(std::span<const int> tokens) = 0;
  // The decision on the logits forward() last returned (ctx: history and RNG key;
  // top_n alternatives in the logprob report).
  virtual SampledToken sample(std::span<const float> logits, const SamplingContext& ctx, int top_n) = 0;
};

// generate() with the engine's forward pass and sampler: the same validation,
// prompt encoding, stops, text and result fields (prefill in one forward call;
// threads, prefill_chunk and kv are the engine's business; kv_memory stays empty).
GenerationResult generate_with(StepEngine& engine, const Model& model, const Tokenizer& tokenizer,
                               const std::string& prompt, const GenerateOptions& options);

// Several requests decoded together (prefill each, then one forward_batch per
// step over the requests still running). Each result equals generate() alone.
std::vector<GenerationResult> generate_batch(const Model& model, const Tokenizer& tokenizer,
                                             const std::vector<std::string>& prompts,
                                             const std::vector<GenerateOptions>& options);

// The forward passes and sampling decisions of a batch (request i is KV sequence i),
// supplied by the caller: generate_batch's reference engine, or the device's
// (optimized/device_batch.h).
class BatchEngine {
 public:
  virtual ~BatchEngine() = default;
  // Shares cached K/V of a prefix of `prompt` with the empty sequence `seq`; returns
  // how many leading prompt tokens need no forward pass (0 without a prefix cache).
  virtual int attach_prefix(int seq, std::span<const int> prompt) = 0;
  // Appends `tokens` to `seq`; returns the last position's logits (vocab).
  virtual std::vector<float> forward(int seq, std::span<const int> tokens) = 0;
  // One token per distinct sequence; returns (n_seqs, vocab) logits.
  virtual std::vector<float> forward_batch(std::span<const int> seqs, std::span<const int> tokens) = 0;
  // Request `seq`'s decision on `logits`, row `row` of what the last call returned.
  virtual SampledToken sample(int seq, int row, std::span<const float> logits, const SamplingContext& ctx,
                              int top_n) = 0;
};

// generate_batch with the engine's passes and decisions: the same requests, order of
// calls, stops and results (kv_memory stays empty).
std::vector<GenerationResult> generate_batch_with(BatchEngine& engine, const Model& model, const Tokenizer& tokenizer,
                                                  const std::vector<std::string>& prompts,
                                                  const std::vector<GenerateOptions>& options);

void to_json(nlohmann::json& j, const GenerationStep& s);
void from_json(const nlohmann::json& j, GenerationStep& s);
void to_json(nlohmann::json& j, const GenerationResult& r);
void from_json(const nlohmann::json& j, GenerationResult& r);

}  // namespace oracle
