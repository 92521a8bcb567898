// Engine bounds: calibration entries, their file and their measurement
// (replay_calibration.h, docs/replay.md "Numerics and bounds").
#include "audit/replay/replay_calibration.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/file_io.h"
#include "base/json_util.h"

namespace oracle {

using nlohmann::json;

namespace {

constexpr double kBoundFactor = 3.0;  // bound = 3 x the calibration's largest difference (docs/replay.md)

std::string fmt(double x) {
  char b[48];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

std::string engine_of_reports(const std::vector<RecordReport>& reports) {
  std::string engine;
  for (const RecordReport& r : reports)
    if (engine.find(r.mode) == std::string::npos) engine += (engine.empty() ? "" : ",") + r.mode;
  return engine;
}

template <class T>
T field(const json& e, const char* key, const std::string& path, const std::string& at) {
  require_input(e.contains(key), path, at + key, "missing");
  try {
    return e.at(key).get<T>();
  } catch (const json::exception&) {
    throw InputError(path, at + key, "wrong JSON type");
  }
}

}  // namespace

EngineBound engine_bound(const ReplayOptions& o, const std::string& sha, const std::string& model_path) {
  if (o.calibration_file.empty())
    return {o.logprob_tolerance, "uncalibrated: --logprob-tol; pass --calibration"};
  const std::string numerics(num::numerics_profile_name(o.numerics));
  for (const CalibrationEntry& e : o.calibration)
    if (e.model_sha256 == sha && e.numerics == numerics)
      return {std::max(e.bound, o.logprob_tolerance),
              "calibration " + o.calibration_file + ": " + e.engine + " on " + e.model + ", " + std::to_string(e.records) +
                  " records, " + std::to_string(e.values) + " logprobs, max |diff| " + fmt(e.max_abs_diff) + " x " +
                  fmt(e.factor)};
  throw InputError(o.calibration_file, "calibration",
                   "no entry for model " + std::filesystem::path(model_path).filename().string() + " (sha256 " + sha +
                       ") with numerics " + numerics + "; measure one with oracle replay CAL.jsonl --calibrate " +
                       o.calibration_file);
}

std::vector<CalibrationEntry> read_calibration(const std::string& path) {
  const json j = parse_json_text(read_regular_file(path, "calibration", 1 << 24), path, "json");
  require_input(j.is_object() && j.value("schema", "") == "oracle-replay-calibration", path, "schema",
                "expected \"oracle-replay-calibration\"");
  require_input(j.value("version", 0) == 1, path, "version", "expected 1");
  require_input(j.contains("entries") && j.at("entries").is_array(), path, "entries", "expected an array");
  std::vector<CalibrationEntry> out;
  for (size_t k = 0; k < j.at("entries").size(); k++) {
    const json& e = j.at("entries")[k];
    const std::string at = "entries[" + std::to_string(k) + "].";
    require_input(e.is_object(), path, at, "expected an object");
    CalibrationEntry c;
    c.model = field<std::string>(e, "model", path, at);
    c.model_sha256 = field<std::string>(e, "model_sha256", path, at);
    c.numerics = field<std::string>(e, "numerics", path, at);
    require_input(num::parse_numerics_profile(c.numerics).has_value(), path, at + "numerics", "canonical or ggml");
    c.engine = field<std::string>(e, "engine", path, at);
    c.log = field<std::string>(e, "log", path, at);
    c.log_sha256 = field<std::string>(e, "log_sha256", path, at);
    c.records = field<int>(e, "records", path, at);
    c.values = field<int64_t>(e, "values", path, at);
    c.max_abs_diff = field<double>(e, "max_abs_diff", path, at);
    c.mean_abs_diff = field<double>(e, "mean_abs_diff", path, at);
    c.factor = field<double>(e, "factor", path, at);
    c.bound = field<double>(e, "bound", path, at);
    require_input(c.bound >= 0.0 && c.bound < 100.0, path, at + "bound", "expected a bound in [0, 100) nats");
    out.push_back(c);
  }
  return out;
}

json calibration_json(const std::vector<CalibrationEntry>& entries) {
  json arr = json::array();
  for (const CalibrationEntry& e : entries)
    arr.push_back({{"model", e.model}, {"model_sha256", e.model_sha256}, {"numerics", e.numerics},
                   {"engine", e.engine}, {"log", e.log}, {"log_sha256", e.log_sha256}, {"records", e.records},
                   {"values", e.values}, {"max_abs_diff", e.max_abs_diff}, {"mean_abs_diff", e.mean_abs_diff},
                   {"factor", e.factor}, {"bound", e.bound}});
  return {{"schema", "oracle-replay-calibration"}, {"version", 1}, {"entries", arr}};
}

CalibrationEntry calibrate(const std::vector<RecordReport>& reports, const std::string& model_path,
                           const std::string& sha, num::NumericsProfile numerics, const std::string& log,
                           const std::string& log_sha256) {
  CalibrationEntry c;
  c.model = std::filesystem::path(model_path).filename().string();
  c.model_sha256 = sha;
  c.numerics = std::string(num::numerics_profile_name(numerics));
  c.engine = engine_of_reports(reports);
  c.log = std::filesystem::path(log).filename().string();
  c.log_sha256 = log_sha256;
  double sum = 0.0;
  for (const RecordReport& r : reports) {
    require_input(r.status != RecordStatus::Error && r.status != RecordStatus::UnknownModel && r.mode != "own" &&
                      r.mode != "foreign",
                  log, "calibration",
                  "line " + std::to_string(r.line) + " is not a replayable engine record" +
                      (r.error.empty() ? "" : ": " + r.error));
    c.records++;
    c.values += r.n_logprobs;
    sum += r.sum_logprob_diff;
    c.max_abs_diff = std::max(c.max_abs_diff, r.max_logprob_diff);
  }
  require_input(c.values > 0, log, "calibration", "no logged logprob to compare (request n_probs / logprobs)");
  c.mean_abs_diff = sum / (double)c.values;
  c.factor = kBoundFactor;
  c.bound = kBoundFactor * c.max_abs_diff;
  return c;
}

std::vector<CalibrationEntry> merge_calibration(std::vector<CalibrationEntry> entries, const CalibrationEntry& e) {
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const CalibrationEntry& x) {
                                 return x.model_sha256 == e.model_sha256 && x.numerics == e.numerics;
                               }),
                entries.end());
  entries.push_back(e);
  return entries;
}

}  // namespace oracle
