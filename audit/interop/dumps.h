#pragma once
// ============================================================================
// Logit and trace dumps as safetensors (docs/interop.md, "Dump format").
// Logits dump ("oracle-logits", version 1):
//   logits     F32 (steps, vocab)  row i = the raw logits token_ids[i] was chosen from
//   token_ids  I64 (steps)         the generated ids
//   prompt_ids I64 (n_prompt)      the prompt as run (BOS included)
//   __metadata__: format, version, model, model_sha256, tokenizer_sha256, numerics_version,
//                 prompt_ids (JSON), sampler (JSON), oracle_version, steps, vocab
// Trace dump ("oracle-trace", version 1): every tensor the forward pass traces
// (reference/compute/forward.h), one F32 (positions, width) tensor per op name
// ("blk.N.attn_norm", ..., "output_norm", "logits") over positions
// 0 .. n_prompt + steps - 2, plus prompt_ids / token_ids as above.
// Both are computed by one teacher-forced forward over prompt + generated ids,
// which gives the generation's logits bit for bit (the forward pass does not
// depend on chunking: docs/numerics.md).
// ============================================================================
#include <map>
#include <string>
#include <vector>

#include "audit/interop/tensor_compare.h"
#include "numerics/profile.h"
#include "reference/model/model.h"
#include "reference/model/safetensors_file.h"

namespace oracle {

struct DumpInfo {
  std::string model, model_sha256, tokenizer_sha256, sampler_json, oracle_version;
  std::vector<int> prompt_ids;  // (n_prompt)
};

// Logits that chose each of `tokens` after `prompt`: (tokens.size(), vocab).
// `trace` (optional) receives every traced tensor of that forward pass; `numerics`
// the forward pass's profile (a run under --numerics ggml dumps its own logits).
std::vector<float> teacher_forced_logits(const Model& m, const std::vector<int>& prompt,
                                         const std::vector<int>& tokens, std::vector<TraceEntry>* trace = nullptr,
                                         num::NumericsProfile numerics = num::NumericsProfile::Canonical);

SafetensorsFile logits_dump(const DumpInfo& info, const std::vector<int>& tokens, const std::vector<float>& logits,
                            int vocab);
SafetensorsFile trace_dump(const DumpInfo& info, const std::vector<int>& tokens,
                           const std::vector<TraceEntry>& trace);

// ---- reading (oracle compare) ---------------------------------------------------------------
struct LogitsInput {
  std::string path;
  std::vector<float> logits;    // (steps, vocab)
  int steps = 0, vocab = 0;
  std::vector<int> token_ids;   // (steps) or empty when not given
  std::vector<int> prompt_ids;  // (n_prompt) or empty when not given
  std::map<std::string, std::string> metadata;
};
// A safetensors dump (tensor "logits" (steps, vocab) or (1, steps, vocab); "token_ids"
// and "prompt_ids" when present) or a .npy array of logits.
LogitsInput read_logits_input(const std::string& path);
// Integer ids from a .npy file or a JSON array / comma-separated list in a text file.
std::vector<int> read_ids_file(const std::string& path);

// Trace tensors in canonical order: layer by layer (attn_norm, q, k, v, attn_out,
// attn_proj, ffn_norm, ffn_gate, ffn_up, ffn_act, ffn_out, resid), then output_norm,
// logits; each op's rows in position order. Unknown names: InputError.
std::vector<TraceEntry> read_trace_dump(const std::string& path, std::vector<int>* prompt_ids = nullptr,
                                        std::vector<int>* token_ids = nullptr);
// The same order for a recorded trace (positions ascending within an op).
std::vector<TraceEntry> canonical_trace_order(std::vector<TraceEntry> trace);

}  // namespace oracle
