#pragma once
// ============================================================================
// Engine bounds for engine-log replay (docs/replay.md "Numerics and bounds").
// An engine such as llama.cpp runs a quantized model with its own numerics
// (Q8_1 activations against Q4_1 weights, F16 KV cache), so its logprobs lie
// some distance from the reference's. A calibration measures that distance on
// the same model: a log of the engine's own greedy answers to calibration
// prompts (scripts/capture_server_logs.sh writes one) is teacher-forced on the
// reference with a numerics profile, every logged logprob (chosen and top-N)
// is compared, and the entry keeps max |logged - reference| and the bound
// factor * max. `oracle replay LOG --calibration FILE` then judges the records
// of that (model, numerics) by it: MATCH within the profile's own bound
// (--logprob-tol), PLAUSIBLE within the engine bound, DIVERGED outside.
// File: {"schema": "oracle-replay-calibration", "version": 1, "entries": [...]}.
// ============================================================================
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/replay/replay.h"

namespace oracle {

// The entry for this checkpoint and o.numerics; without --calibration the
// bound is o.logprob_tolerance ("uncalibrated"). A calibration that has no
// entry for them is an InputError(o.calibration_file, "calibration") — never a
// silent fallback to another bound.
EngineBound engine_bound(const ReplayOptions& o, const std::string& model_sha256, const std::string& model_path);

// Strict reader; InputError(path, field) naming the first bad field.
std::vector<CalibrationEntry> read_calibration(const std::string& path);
nlohmann::json calibration_json(const std::vector<CalibrationEntry>& entries);

// The entry measured by replaying a calibration log (`reports`, every record
// an engine record of one model). InputError(log, "calibration") when a
// record is an ERROR or no logprob was compared.
CalibrationEntry calibrate(const std::vector<RecordReport>& reports, const std::string& model_path,
                           const std::string& model_sha256, num::NumericsProfile numerics, const std::string& log,
                           const std::string& log_sha256);
// `entries` with `e` replacing the entry of the same (model_sha256, numerics).
std::vector<CalibrationEntry> merge_calibration(std::vector<CalibrationEntry> entries, const CalibrationEntry& e);

}  // namespace oracle
