#pragma once
// The device pipeline (optimized::Backend) behind the CLI's `--backend` option
// (docs/diff.md). The binary links one kernel library: the host emulation when
// built without CUDA (backend "cuda-emu") or the real kernels (backend "cuda",
// ORACLE_TOOLS_CUDA). Asking for the other one is an input error (exit 2).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optimized/backend.h"
#include "reference/model/model.h"

namespace oracle::tools {

// "reference" -> false; "cuda"/"cuda-emu" -> true if this binary can run it,
// else InputError(backend, "--backend", ...) (also: unknown name, no GPU).
bool require_backend(const std::string& backend);
// "deterministic" | "fast" -> Mode; InputError(mode, "--mode") otherwise.
optimized::Mode parse_mode(const std::string& mode);

// Greedy generation on the device: the prompt prefilled in one call, then up to
// max_tokens argmax (ties to the lowest id) steps; stops after any of stop_ids.
std::vector<int> device_greedy(const Model& m, const std::vector<int>& prompt, int max_tokens, const std::vector<int>& stop_ids,
                               optimized::Mode mode);

// Golden transcript record `r` (tools/cmd_golden.cpp) re-run on the device:
// greedy records only (temperature <= 0, no penalties, bias, bans or stop
// strings; others set *skipped). Feeds r["prompt_ids"], then checks each of the
// record's steps: the raw logits' SHA-256 and the argmax token. Stop decisions
// are host-side and not re-checked. Returns the first difference or "".
std::string device_golden_mismatch(const nlohmann::json& r, const Model& m, optimized::Mode mode, bool* skipped);

// Times one prefill of prompt_tokens then decode_tokens greedy steps on the
// device; JSON with tokens/s, the weight bytes a decode step reads and the
// achieved bandwidth (and the GPU's peak, on the GPU).
nlohmann::json device_bench(const Model& m, const std::string& backend, optimized::Mode mode, int prompt_tokens,
                            int decode_tokens);

}  // namespace oracle::tools
