#pragma once
// The device pipelines behind the CLI's `--backend` option (docs/diff.md).
// Every `oracle` binary carries the host emulation of the kernels ("cuda-emu");
// a build with CUDA carries the real kernels ("cuda") as well. Both are the
// same sources (tools/device_pipeline.cpp over optimized::Backend) compiled
// once per kernel library, each in its own namespaces (kernels/CMakeLists.txt),
// so this header names no optimized:: type and includes no CUDA header.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/compute/forward.h"
#include "reference/generate/generate.h"
#include "reference/model/model.h"

namespace oracle::tools {

// Deterministic: every bit the reference's. Fast*: matmuls through cuBLAS at float32,
// TF32 or BF16 compute, held to the per-op bound (docs/cuda.md "Fast mode").
enum class DeviceMode { Deterministic, Fast, FastTf32, FastBf16 };
inline bool is_fast(DeviceMode m) { return m != DeviceMode::Deterministic; }

// Fast mode's per-op check (optimized/fast_audit.h, docs/cuda.md): every fast
// matmul of one matrix kind ("attn_q", ..., "output") against its derived bound.
struct FastOpCheck {
  std::string op;
  int K = 0;
  double rel_bound = 0;     // b(K, precision): allowance per unit of sum |W x|
  long long elements = 0;   // outputs checked
  long long over = 0;       // outputs beyond their allowance
  double worst_ratio = 0;   // max |error| / allowance
};

// One device pipeline: what the subcommands run on it.
struct DevicePipeline {
  const char* name;  // "cuda-emu" | "cuda"
  // "" when it can run here, else why not ("no CUDA GPU found").
  std::string (*unavailable)();
  // generate() on the device (reference/generate/generate.h generate_with): the
  // prompt prefilled in one call, every step's logits and the whole sampler chain
  // (optimized::DeviceSampler: every processor, greedy or the Philox draw, the
  // logprob report) on the device; stops, text and the result as the reference.
  GenerationResult (*generate)(const Model& m, const Tokenizer& tok, const std::string& prompt,
                               const GenerateOptions& o, DeviceMode mode);
  // Fast mode's golden check: the greedy record's output ids teacher-forced
  // (prompt in one call, then each golden id); returns how many steps' device
  // argmax equal the golden id (of min(output_ids, logits_sha256) steps).
  int (*greedy_agreement)(const Model& m, const std::vector<int>& prompt, const std::vector<int>& ids, DeviceMode mode);
  // `tokens` fed to a fresh sequence in one call: every position's logits (n, vocab)
  // when all_logits, else the last row (oracle certify --backend).
  std::vector<float> (*logits)(const Model& m, const std::vector<int>& tokens, bool all_logits, DeviceMode mode);
  // Times one prefill of prompt_tokens then decode_tokens greedy steps; JSON
  // with tokens/s, the weight bytes a decode step reads and the achieved
  // bandwidth (and the GPU's peak, on the GPU). cuda_graphs: decode steps replayed
  // as captured graphs (else launched one by one; prefill is never graphed).
  nlohmann::json (*bench)(const Model& m, DeviceMode mode, bool cuda_graphs, int prompt_tokens, int decode_tokens);
  // Feeds tokens[0, prompt_tokens) in one call, then the rest one at a time,
  // sending every named intermediate to `trace` (oracle diff). Fast mode with
  // `fast_ops`: every fast matmul is also checked against its derived bound.
  void (*trace)(const Model& m, const std::vector<int>& tokens, int prompt_tokens, DeviceMode mode, Trace& trace,
                std::vector<FastOpCheck>* fast_ops);
  // oracle kernels: the kernel case registry (optimized/kernel_cases.h) on this
  // pipeline. Every case of `set` ("check", "bench-tiny", "bench-model") whose op
  // is `op` ("" = all) is run once and judged, then, when reps > 0, run reps more
  // times under the clock. JSON {clock, emulated, cases: [...]} (docs/cli.md#kernels).
  nlohmann::json (*kernel_cases)(const std::string& set, const std::string& op, int reps);
  // The registry's op names (the --op filter's values).
  std::vector<std::string> (*kernel_case_ops)();
};

// The emulated pipeline (always linked) and the GPU one (null without CUDA).
const DevicePipeline& device_pipeline_emu();
const DevicePipeline* device_pipeline_cuda();

// "reference" -> null; "cuda-emu" / "cuda" -> the pipeline if it can run here,
// else InputError(backend, "--backend", ...) (also: unknown name, no GPU).
const DevicePipeline* require_backend(const std::string& backend);
// "deterministic" | "fast" | "fast-tf32" | "fast-bf16" -> DeviceMode; InputError(mode, "--mode") otherwise.
DeviceMode parse_mode(const std::string& mode);
const char* mode_name(DeviceMode mode);

}  // namespace oracle::tools
