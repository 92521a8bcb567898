// Certificate thresholds: documented defaults per weight type, JSON overrides,
// and PASS/FAIL checks (see certify.h and docs/certify.md, "Thresholds").
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "audit/certify/certify.h"
#include "base/errors.h"
#include "reference/model/quant.h"
#include "base/file_io.h"
#include "base/json_util.h"

namespace oracle {

// ---- dominant weight type ----------------------------------------------------------------
std::string dominant_weight_type(const Model& m) {
  std::map<std::string, int64_t> elems;
  for (const TensorInfo& t : m.tensors) {
    if (t.shape.size() < 2) continue;  // norms stay F32 in every quantized file
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    elems[dtype_name(t.type)] += n;
  }
  std::string best = "F32";
  int64_t most = -1;
  for (const auto& [name, n] : elems)
    if (n > most) {
      most = n;
      best = name;
    }
  return best;
}

// ---- defaults ------------------------------------------------------------------------------
// {kld_mean max, kld_p99 max, same_top min, ppl_ratio max}; see docs/certify.md.
std::vector<Threshold> default_thresholds(const std::string& type) {
  struct Row { double kld_mean, kld_p99, same_top, ppl_ratio; };
  static const std::map<std::string, Row> table = {
      {"F32", {1e-6, 1e-5, 0.999, 1.0001}},  {"F16", {1e-4, 1e-3, 0.99, 1.001}},
      {"BF16", {1e-3, 1e-2, 0.98, 1.005}},   {"Q8_0", {0.01, 0.1, 0.95, 1.02}},
      {"Q8_K", {0.01, 0.1, 0.95, 1.02}},     {"I8_ROW", {0.01, 0.1, 0.95, 1.02}},
      {"KV_I8", {0.01, 0.1, 0.95, 1.02}},    {"Q6_K", {0.02, 0.2, 0.92, 1.03}},
      {"Q5_K", {0.05, 0.5, 0.88, 1.06}},     {"Q5_0", {0.08, 0.8, 0.85, 1.10}},
      {"Q5_1", {0.08, 0.8, 0.85, 1.10}},     {"Q4_K", {0.15, 1.5, 0.75, 1.20}},
      {"Q4_1", {0.25, 2.0, 0.65, 1.30}},     {"Q4_0", {0.25, 2.0, 0.65, 1.30}},
      {"Q3_K", {0.40, 3.0, 0.55, 1.50}},     {"Q2_K", {0.80, 5.0, 0.45, 2.00}},
  };
  auto it = table.find(type);
  Row r = it != table.end() ? it->second : Row{0.25, 2.0, 0.65, 1.30};
  return {{"kld_mean", true, r.kld_mean},
          {"kld_p99", true, r.kld_p99},
          {"same_top", false, r.same_top},
          {"ppl_ratio", true, r.ppl_ratio}};
}

// ---- overrides -------------------------------------------------------------------------------
std::vector<Threshold> load_thresholds(const std::string& path, std::vector<Threshold> base) {
  const std::string text = read_regular_file(path, "thresholds");
  const nlohmann::json j = parse_json_text(text, path, "thresholds");
  require_input(j.is_object(), path, "thresholds", "expected an object {\"metric\": {\"max\": x}}");
  for (const auto& [metric, spec] : j.items()) {
    bool has_max = spec.is_object() && spec.contains("max") && spec["max"].is_number();
    bool has_min = spec.is_object() && spec.contains("min") && spec["min"].is_number();
    require_input(has_max != has_min, path, metric, "expected exactly one of {\"max\": x} or {\"min\": x}");
    Threshold t{metric, has_max, has_max ? spec["max"].get<double>() : spec["min"].get<double>()};
    CertifyResult probe;
    metric_value(probe, metric);  // rejects unknown metric names
    auto same = [&t](const Threshold& b) { return b.metric == t.metric; };  // clang 14: no capture of a structured binding
    base.erase(std::remove_if(base.begin(), base.end(), same), base.end());
    base.push_back(t);
  }
  return base;
}

// ---- metric values ------------------------------------------------------------------------------
static double level(const Percentiles& p, double lv) {
  for (const auto& [l, v] : p)
    if (l == lv) return v;
  return 0.0;
}

double metric_value(const CertifyResult& r, const std::string& m) {
  const Summary& s = r.summary;
  if (m == "kld_mean") return s.kld.mean;
  if (m == "kld_max") return level(s.kld_percentiles, 100);
  if (m == "kld_p999") return level(s.kld_percentiles, 99.9);
  if (m == "kld_p99") return level(s.kld_percentiles, 99);
  if (m == "kld_p95") return level(s.kld_percentiles, 95);
  if (m == "kld_median") return level(s.kld_percentiles, 50);
  if (m == "same_top") return s.same_top.mean;
  if (m == "ppl_ratio") return s.perplexity.ratio.mean;
  if (m == "ln_ppl_ratio") return s.perplexity.ln_ratio.mean;
  if (m == "ppl_correlation") return s.perplexity.correlation;
  if (m == "rms_dp_top") return s.rms_dp_top.mean;
  if (m == "rms_dp_next") return s.rms_dp_next.mean;
  if (m == "greedy_mean_first_divergence") return r.greedy.mean_first_divergence;
  if (m == "greedy_fraction_identical") return r.greedy.fraction_identical;
  throw InputError("thresholds", m,
                   "unknown metric (kld_mean, kld_max, kld_p999, kld_p99, kld_p95, kld_median, same_top, "
                   "ppl_ratio, ln_ppl_ratio, ppl_correlation, rms_dp_top, rms_dp_next, "
                   "greedy_mean_first_divergence, greedy_fraction_identical)");
}

std::vector<ThresholdCheck> check_thresholds(const CertifyResult& r, const std::vector<Threshold>& ts) {
  std::vector<ThresholdCheck> out;
  for (const Threshold& t : ts) {
    double v = metric_value(r, t.metric);
    out.push_back({t, v, t.at_most ? v <= t.limit : v >= t.limit});
  }
  return out;
}

}  // namespace oracle
