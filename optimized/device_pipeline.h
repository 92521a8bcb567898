#pragma once
// The device pipeline interface (docs/design.md "Backends"): what the CLI's
// `--backend cuda-emu | cuda` runs, as one table of functions over
// optimized::Backend. Two backends implement it, both compiled from the same
// sources (optimized/*.cpp over kernels/*.cu) under the plain names
// oracle::optimized / oracle::kernels:
//   - "cuda-emu": oracle_optimized_emu, the kernels emulated on the host
//     (kernels/emu/cuda_emu.h), linked into `oracle` statically;
//   - "cuda": the real kernels, built only with CUDA into the plugin
//     liboracle_device_cuda.so beside the `oracle` binary, whose one exported
//     symbol (kDevicePluginEntry) returns its table; `oracle` loads it only when
//     `--backend cuda` is asked (tools/device_backend.cpp).
// This header names no kernels:: type and includes no CUDA header, so the
// tools include it without either kernel library's definitions.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/compute/forward.h"
#include "reference/generate/generate.h"
#include "numerics/profile.h"
#include "reference/model/model.h"

namespace oracle::optimized {

// Deterministic: every bit the reference's. Fast*: matmuls through cuBLAS at float32,
// TF32 or BF16 compute, held to the per-op bound (docs/cuda.md "Fast mode").
enum class DeviceMode { Deterministic, Fast, FastTf32, FastBf16 };
inline bool is_fast(DeviceMode m) { return m != DeviceMode::Deterministic; }
inline const char* mode_name(DeviceMode mode) {
  switch (mode) {
    case DeviceMode::Deterministic: return "deterministic";
    case DeviceMode::Fast: return "fast";
    case DeviceMode::FastTf32: return "fast-tf32";
    case DeviceMode::FastBf16: return "fast-bf16";
  }
  return "deterministic";
}

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

// One device pipeline: what the subcommands run on it. Every entry runs the
// numerics profile it is given (generate: GenerateOptions::numerics): canonical,
// or ggml (docs/numerics.md §5.2) in deterministic mode; a fast mode with ggml is
// refused (InputError, field "numerics").
struct DevicePipeline {
  const char* name;  // "cuda-emu" | "cuda"
  // "" when it can run here, else why not ("no CUDA GPU found").
  std::string (*unavailable)();
  // generate() on the device (reference/generate/generate.h generate_with): the
  // prompt prefilled in one call, every step's logits and the whole sampler chain
  // (optimized::DeviceSampler: every processor, greedy or the Philox draw, the
  // logprob report) on the device; stops, text and the result as the reference.
  // o.numerics picks the profile (ggml: deterministic mode only, else InputError "numerics").
  GenerationResult (*generate)(const Model& m, const Tokenizer& tok, const std::string& prompt,
                               const GenerateOptions& o, DeviceMode mode);
  // Fast mode's golden check: the greedy record's output ids teacher-forced
  // (prompt in one call, then each golden id); returns how many steps' device
  // argmax equal the golden id (of min(output_ids, logits_sha256) steps).
  int (*greedy_agreement)(const Model& m, const std::vector<int>& prompt, const std::vector<int>& ids, DeviceMode mode);
  // `tokens` fed to a fresh sequence in one call: every position's logits (n, vocab)
  // when all_logits, else the last row (oracle certify --backend).
  std::vector<float> (*logits)(const Model& m, const std::vector<int>& tokens, bool all_logits, DeviceMode mode,
                               num::NumericsProfile numerics);
  // Times one prefill of prompt_tokens then decode_tokens greedy steps; JSON
  // with tokens/s, the weight bytes a decode step reads and the achieved
  // bandwidth (and the GPU's peak, on the GPU). cuda_graphs: decode steps replayed
  // as captured graphs (else launched one by one; prefill is never graphed).
  nlohmann::json (*bench)(const Model& m, DeviceMode mode, bool cuda_graphs, int prompt_tokens, int decode_tokens,
                          num::NumericsProfile numerics);
  // Feeds tokens[0, prompt_tokens) in one call, then the rest one at a time,
  // sending every named intermediate to `trace` (oracle diff). Fast mode with
  // `fast_ops`: every fast matmul is also checked against its derived bound.
  void (*trace)(const Model& m, const std::vector<int>& tokens, int prompt_tokens, DeviceMode mode,
                num::NumericsProfile numerics, Trace& trace, std::vector<FastOpCheck>* fast_ops);
  // oracle kernels: the kernel case registry (optimized/kernel_cases.h) on this
  // pipeline. Every case of `set` ("check", "bench-tiny", "bench-model") whose op
  // is `op` ("" = all) is run once and judged, then, when reps > 0, run reps more
  // times under the clock. JSON {clock, emulated, cases: [...]} (docs/cli.md#kernels).
  nlohmann::json (*kernel_cases)(const std::string& set, const std::string& op, int reps);
  // The registry's op names (the --op filter's values).
  std::vector<std::string> (*kernel_case_ops)();
};

// This library's pipeline over the kernels it is built with: "cuda-emu" in
// oracle_optimized_emu, "cuda" in oracle_optimized_cuda (the plugin's).
const DevicePipeline& device_pipeline();

// ---- the CUDA plugin -----------------------------------------------------------------
// The file, beside the `oracle` binary, and its one exported symbol:
//   extern "C" const DevicePipeline* oracle_device_pipeline(std::uint64_t abi_key)
// which returns its pipeline when abi_key is its own device_abi_key(), else null
// (a plugin of another build: the types passed across differ).
inline constexpr const char* kDevicePluginFile = "liboracle_device_cuda.so";
inline constexpr const char* kDevicePluginEntry = "oracle_device_pipeline";
using DevicePluginEntry = const DevicePipeline* (*)(std::uint64_t abi_key);
// Bump kDevicePipelineAbi when DevicePipeline changes; the sizes catch most
// changes of the types that cross the boundary. 2: the numerics profile
// (num::NumericsProfile) passed to logits, bench and trace.
inline constexpr std::uint64_t kDevicePipelineAbi = 2;
constexpr std::uint64_t device_abi_key() {
  return kDevicePipelineAbi << 56 ^ (std::uint64_t)sizeof(DevicePipeline) << 44 ^ (std::uint64_t)sizeof(Model) << 32 ^
         (std::uint64_t)sizeof(GenerateOptions) << 20 ^ (std::uint64_t)sizeof(GenerationResult) << 8 ^
         (std::uint64_t)sizeof(Trace);
}

}  // namespace oracle::optimized
