#pragma once
// ============================================================================
// llm_oracle::Model — a checkpoint (GGUF, llama2.c .bin, safetensors folder)
// loaded as the reference loads it: weights memory-mapped in their stored
// type, every metadata key honoured or refused with InputError(file, field).
// A Model is immutable; every call uses a fresh KV cache, so calls are
// independent and may run from several threads at once.
// ============================================================================
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llm_oracle/errors.h"
#include "llm_oracle/sampler.h"
#include "llm_oracle/types.h"

namespace llm_oracle {

namespace detail {
struct ModelAccess;  // api/: the internal model behind a Model
}  // namespace detail

struct LoadOptions {
  int context = 0;                 // 0: the file's context length
  bool allow_context_extension = false;
  std::string tokenizer;           // empty: embedded, else tok<vocab>.bin / tokenizer.bin beside a .bin
};

struct ModelInfo {
  std::string path, format, architecture, sha256;
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int vocab_size = 0, context = 0;
  float rope_theta = 0.0f, norm_eps = 0.0f;
  DType weight_type = DType::F32;  // blk.0's attention q matrix, as stored
  int bos_id = -1, eos_id = -1;
};

// One traced tensor at one position (the names `oracle diff` compares:
// "blk.L.attn_norm", "blk.L.q", "blk.L.k", "blk.L.v", "blk.L.attn_out",
// "blk.L.attn_proj", "blk.L.ffn_norm", "blk.L.ffn_gate", "blk.L.ffn_up",
// "blk.L.ffn_act", "blk.L.ffn_out", "blk.L.resid", "output_norm", "logits").
struct TraceTensor {
  std::string name;
  int pos = 0;
  std::vector<float> values;
};

struct ForwardResult {
  std::vector<float> logits;        // (n, vocab)
  std::vector<TraceTensor> trace;   // execution order
};

struct ChatMessage {
  std::string role, content;
};

struct GenerateConfig {
  int max_tokens = 64;
  SamplerConfig sampler;           // temperature <= 0: greedy
  uint32_t seq_id = 0;             // RNG identity of the request
  std::vector<std::string> stop;   // stop strings (EOS always stops)
  bool add_special = true;         // BOS / EOS as the vocabulary says (as `oracle run`)
  bool parse_special = true;       // control tokens written in the prompt become their ids
  int threads = 1;
};

struct Generation {
  std::vector<int> prompt_ids, output_ids;
  std::string text, finish_reason;          // "stop" or "length"
  std::vector<std::string> logits_sha256;   // per step, as `oracle run --json` records
};

class Model {
 public:
  // InputError(file, field, ...) for anything the reference cannot read exactly.
  static Model load(const std::string& path, const LoadOptions& options = {});
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  Model(const Model&);
  Model& operator=(const Model&);

  ModelInfo info() const;
  // Teacher-forced forward of `ids` at positions 0..n-1: (n, vocab) logits,
  // row t the prediction after ids[0..t]. threads >= 1 changes no bit.
  std::vector<float> logits(std::span<const int> ids, int threads = 1) const;
  // logits() and every named intermediate tensor at every position.
  ForwardResult trace(std::span<const int> ids, int threads = 1) const;
  // add_special: BOS / EOS as the vocabulary says (llama.cpp's add_special).
  std::vector<int> tokenize(const std::string& text, bool add_special = true, bool parse_special = false) const;
  std::string detokenize(std::span<const int> ids) const;
  // The prompt text of a conversation in the model's chat template (or
  // `format`: "chatml", "llama3", ...), the assistant's turn opened.
  std::string chat_prompt(const std::vector<ChatMessage>& messages, const std::string& format = "") const;
  Generation generate(const std::string& prompt, const GenerateConfig& config = {}) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
  explicit Model(std::shared_ptr<const Impl> impl);
  friend struct detail::ModelAccess;
};

}  // namespace llm_oracle
