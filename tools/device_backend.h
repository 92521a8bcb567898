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
#include "reference/model/model.h"

namespace oracle::tools {

enum class DeviceMode { Deterministic, Fast };

// One device pipeline: what the subcommands run on it.
struct DevicePipeline {
  const char* name;  // "cuda-emu" | "cuda"
  // "" when it can run here, else why not ("no CUDA GPU found").
  std::string (*unavailable)();
  // Greedy generation: the prompt prefilled in one call, then up to max_tokens
  // argmax (ties to the lowest id) steps; stops after any of stop_ids or when
  // the context is full.
  std::vector<int> (*greedy)(const Model& m, const std::vector<int>& prompt, int max_tokens,
                             const std::vector<int>& stop_ids, DeviceMode mode);
  // Golden transcript record `r` (tools/cmd_golden.cpp) re-run on the device:
  // greedy records only (temperature <= 0, no penalties, bias, bans or stop
  // strings; others set *skipped). Feeds r["prompt_ids"], then checks each of
  // the record's steps: the raw logits' SHA-256 and the argmax token. Stop
  // decisions are host-side and not re-checked. Returns the first difference or "".
  std::string (*golden_mismatch)(const nlohmann::json& r, const Model& m, DeviceMode mode, bool* skipped);
  // Times one prefill of prompt_tokens then decode_tokens greedy steps; JSON
  // with tokens/s, the weight bytes a decode step reads and the achieved
  // bandwidth (and the GPU's peak, on the GPU).
  nlohmann::json (*bench)(const Model& m, DeviceMode mode, int prompt_tokens, int decode_tokens);
  // Feeds tokens[0, prompt_tokens) in one call, then the rest one at a time,
  // sending every named intermediate to `trace` (oracle diff).
  void (*trace)(const Model& m, const std::vector<int>& tokens, int prompt_tokens, DeviceMode mode, Trace& trace);
};

// The emulated pipeline (always linked) and the GPU one (null without CUDA).
const DevicePipeline& device_pipeline_emu();
const DevicePipeline* device_pipeline_cuda();

// "reference" -> null; "cuda-emu" / "cuda" -> the pipeline if it can run here,
// else InputError(backend, "--backend", ...) (also: unknown name, no GPU).
const DevicePipeline* require_backend(const std::string& backend);
// "deterministic" | "fast" -> DeviceMode; InputError(mode, "--mode") otherwise.
DeviceMode parse_mode(const std::string& mode);
const char* mode_name(DeviceMode mode);

}  // namespace oracle::tools
