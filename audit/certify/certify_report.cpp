// Certificate writers: JSON, Markdown, SVG (see certify_report.h).
#include "audit/certify/certify_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/errors.h"
#include "audit/certify/certify_figures.h"
#include "audit/interop/logit_stats.h"
#include "audit/interop/svg_plot.h"
#include "base/file_io.h"
#include "base/numerics_version.h"

namespace oracle {
namespace {

using nlohmann::json;

json mean_se_json(const MeanSe& m) { return {{"mean", m.mean}, {"se", m.se}}; }

json percentiles_json(const Percentiles& p) {
  json j = json::object();
  for (const auto& [level, v] : p) {
    char key[16];
    std::snprintf(key, sizeof key, "%g", level);
    j[key] = v;
  }
  return j;
}

json summary_json(const Summary& s) {
  const PerplexityStats& p = s.perplexity;
  return {{"tokens_scored", s.n},
          {"kld", {{"mean", s.kld.mean}, {"se", s.kld.se}, {"percentiles", percentiles_json(s.kld_percentiles)}}},
          {"delta_p_top", {{"mean", s.dp_top.mean}, {"se", s.dp_top.se},
                           {"rms", mean_se_json(s.rms_dp_top)},
                           {"percentiles", percentiles_json(s.dp_top_percentiles)}}},
          {"delta_p_next", {{"mean", s.dp_next.mean}, {"se", s.dp_next.se},
                            {"rms", mean_se_json(s.rms_dp_next)},
                            {"percentiles", percentiles_json(s.dp_next_percentiles)}}},
          {"same_top", mean_se_json(s.same_top)},
          {"perplexity", {{"reference", mean_se_json(p.ppl_ref)},
                          {"candidate", mean_se_json(p.ppl_cand)},
                          {"ln_ratio", mean_se_json(p.ln_ratio)},
                          {"ratio", mean_se_json(p.ratio)},
                          {"difference", mean_se_json(p.difference)},
                          {"correlation_nll", p.correlation}}},
          {"kld_by_position", s.kld_by_position}};
}

json checks_json(const std::vector<ThresholdCheck>& checks) {
  json a = json::array();
  for (const ThresholdCheck& c : checks)
    a.push_back({{"metric", c.threshold.metric},
                 {c.threshold.at_most ? "max" : "min", c.threshold.limit},
                 {"value", c.value},
                 {"result", c.pass ? "PASS" : "FAIL"}});
  return a;
}

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f%%", 100.0 * v);
  return b;
}

// Six significant digits (a mean KLD of 3.4e-07 is not "0.000000").
std::string num6(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string pm(const MeanSe& m, bool percent = false) {
  return percent ? pct(m.mean) + " ± " + pct(m.se) : num6(m.mean) + " ± " + num6(m.se);
}

// Temp file then rename: a reader never sees half a certificate file.
void write_file(const std::string& path, const std::string& text) {
  write_file_atomic(path, "output", text);
}

}  // namespace

std::string candidate_pipeline(const CertificateInfo& info) {
  if (info.candidate_numerics == num::NumericsProfile::Ggml)
    return "reference canonical; candidate in the ggml profile (llama.cpp's CPU backend: activations quantized to "
           "the weight type's dot partner, integer block dots, F16 KV cache; docs/numerics.md)";
  return "canonical f32 reference (weights dequantized exactly at load)";
}

// ---- llama-perplexity's statistics block ------------------------------------------------------
std::string llama_perplexity_block(const CertifyResult& r) {
  const Summary& s = r.summary;
  const PerplexityStats& p = s.perplexity;
  std::vector<double> kld, dp;
  for (const TokenRecord& t : r.records) kld.push_back(t.kld), dp.push_back(t.dp_next);
  std::sort(kld.begin(), kld.end());
  std::sort(dp.begin(), dp.end());
  std::string o;
  char b[160];
  auto add = [&](const char* f, double a, double c = 0.0) {
    std::snprintf(b, sizeof b, f, a, c);
    o += b;
  };
  o += "====== Perplexity statistics ======\n";
  add("Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", p.ppl_cand.mean, p.ppl_cand.se);
  add("Mean PPL(base)                : %10.6lf ± %10.6lf\n", p.ppl_ref.mean, p.ppl_ref.se);
  add("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * p.correlation);
  add("Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", p.ln_ratio.mean, p.ln_ratio.se);
  add("Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", p.ratio.mean, p.ratio.se);
  add("Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", p.difference.mean, p.difference.se);
  o += "\n====== KL divergence statistics ======\n";
  if (kld.empty()) return o + "(no tokens scored)\n";
  add("Mean    KLD: %10.6lf ± %10.6lf\n", s.kld.mean, s.kld.se);
  add("Maximum KLD: %10.6f\n", kld.back());
  const std::pair<const char*, double> kl[] = {{"99.9%%   KLD: %10.6f\n", 0.999}, {"99.0%%   KLD: %10.6f\n", 0.99},
                                               {"95.0%%   KLD: %10.6f\n", 0.95},  {"90.0%%   KLD: %10.6f\n", 0.9},
                                               {"Median  KLD: %10.6f\n", 0.5},    {"10.0%%   KLD: %10.6f\n", 0.1},
                                               {" 5.0%%   KLD: %10.6f\n", 0.05},  {" 1.0%%   KLD: %10.6f\n", 0.01},
                                               {" 0.1%%   KLD: %10.6f\n", 0.001}};
  for (const auto& [f, q] : kl) add(f, percentile_sorted(kld, q));
  add("Minimum KLD: %10.6f\n", kld.front());
  o += "\n====== Token probability statistics ======\n";
  add("Mean    Δp: %6.3lf ± %5.3lf %%\n", 100.0 * s.dp_next.mean, 100.0 * s.dp_next.se);
  add("Maximum Δp: %6.3lf%%\n", 100.0 * dp.back());
  const std::pair<const char*, double> dl[] = {{"99.9%%   Δp: %6.3lf%%\n", 0.999}, {"99.0%%   Δp: %6.3lf%%\n", 0.99},
                                               {"95.0%%   Δp: %6.3lf%%\n", 0.95},  {"90.0%%   Δp: %6.3lf%%\n", 0.9},
                                               {"75.0%%   Δp: %6.3lf%%\n", 0.75},  {"Median  Δp: %6.3lf%%\n", 0.5},
                                               {"25.0%%   Δp: %6.3lf%%\n", 0.25},  {"10.0%%   Δp: %6.3lf%%\n", 0.1},
                                               {" 5.0%%   Δp: %6.3lf%%\n", 0.05},  {" 1.0%%   Δp: %6.3lf%%\n", 0.01},
                                               {" 0.1%%   Δp: %6.3lf%%\n", 0.001}};
  for (const auto& [f, q] : dl) add(f, 100.0 * percentile_sorted(dp, q));
  add("Minimum Δp: %6.3lf%%\n", 100.0 * dp.front());
  add("RMS Δp    : %6.3lf ± %5.3lf %%\n", 100.0 * s.rms_dp_next.mean, 100.0 * s.rms_dp_next.se);
  add("Same top p: %6.3lf ± %5.3lf %%\n", 100.0 * s.same_top.mean, 100.0 * s.same_top.se);
  return o;
}

bool all_pass(const std::vector<ThresholdCheck>& checks) {
  for (const ThresholdCheck& c : checks)
    if (!c.pass) return false;
  return true;
}

// ---- JSON -------------------------------------------------------------------------------
nlohmann::json certificate_json(const CertifyResult& r, const CertificateInfo& info,
                                const std::vector<ThresholdCheck>& checks) {
  const GreedySummary& g = r.greedy;
  nlohmann::json j = {{"tool", "oracle certify"},
          {"tool_version", info.tool_version},
          {"reference", {{"path", info.reference_path}, {"sha256", info.reference_sha256}}},
          {"candidate", {{"path", info.candidate_path}, {"sha256", info.candidate_sha256},
                         {"weight_type", info.weight_type}, {"kv_cache_int8", info.candidate_kv_int8},
                         {"numerics", std::string(num::numerics_profile_name(info.candidate_numerics))}}},
          {"corpus", {{"path", info.corpus_path}, {"sha256", info.corpus_sha256}, {"tokens", r.corpus_tokens}}},
          {"protocol", {{"name", protocol_name(r.protocol)}, {"ctx", r.ctx}, {"chunks", r.chunks},
                        {"pipeline", candidate_pipeline(info)}}},
          {"statistics", summary_json(r.summary)},
          {"greedy", {{"prompts", g.prompts}, {"steps", g.steps},
                      {"mean_first_divergence", g.mean_first_divergence},
                      {"median_first_divergence", g.median_first_divergence},
                      {"fraction_identical", g.fraction_identical},
                      {"first_divergence", r.first_divergence},
                      {"histogram", g.histogram}}},
          {"thresholds", checks_json(checks)},
          {"verdict", all_pass(checks) ? "PASS" : "FAIL"}};
  stamp_numerics_version(j);  // the contract both models' logits were computed under (docs/numerics.md "Versioning")
  if (info.trained_context > 0)  // --allow-context-extension was needed
    j["protocol"]["context_extension"] = {{"trained_context", info.trained_context}, {"ctx", r.ctx}};
  return j;
}

// ---- Markdown ----------------------------------------------------------------------------
std::string certificate_markdown(const CertifyResult& r, const CertificateInfo& info,
                                 const std::vector<ThresholdCheck>& checks) {
  const Summary& s = r.summary;
  const PerplexityStats& p = s.perplexity;
  std::string m = "# Certificate: " + std::string(all_pass(checks) ? "PASS" : "FAIL") + "\n\n";
  m += "| | |\n|---|---|\n";
  m += "| reference | `" + info.reference_path + "` sha256 `" + info.reference_sha256 + "` |\n";
  m += "| candidate | `" + info.candidate_path + "` sha256 `" + info.candidate_sha256 + "` (" +
       info.weight_type + (info.candidate_kv_int8 ? ", int8 KV cache" : "") + ", numerics " +
       std::string(num::numerics_profile_name(info.candidate_numerics)) + ") |\n";
  m += "| pipeline | " + candidate_pipeline(info) + " |\n";
  m += "| corpus | `" + info.corpus_path + "` sha256 `" + info.corpus_sha256 + "`, " +
       std::to_string(r.corpus_tokens) + " tokens |\n";
  m += "| protocol | " + std::string(protocol_name(r.protocol)) + ", ctx " + std::to_string(r.ctx) + ", " + std::to_string(r.chunks) +
       " chunks, " + std::to_string(s.n) + " scored tokens |\n";
  m += "| tool | oracle " + info.tool_version + ", numerics_version " + std::to_string(num::kNumericsContractVersion) +
       " |\n\n## Thresholds\n\n| metric | limit | value | result |\n|---|---|---|---|\n";
  for (const ThresholdCheck& c : checks)
    m += "| " + c.threshold.metric + " | " + (c.threshold.at_most ? "≤ " : "≥ ") + num6(c.threshold.limit) +
         " | " + num6(c.value) + " | " + (c.pass ? "PASS" : "FAIL") + " |\n";
  m += "\n## Statistics\n\n| statistic | value |\n|---|---|\n";
  m += "| mean KLD | " + pm(s.kld) + " |\n";
  for (const auto& [level, v] : s.kld_percentiles) {
    char b[96];
    std::snprintf(b, sizeof b, "| KLD %g%% | %.6g |\n", level, v);
    m += b;
  }
  m += "| same top-1 | " + pm(s.same_top, true) + " |\n";
  m += "| Δp (reference top token) mean / RMS | " + pm(s.dp_top, true) + " / " + pm(s.rms_dp_top, true) + " |\n";
  m += "| Δp (next corpus token) mean / RMS | " + pm(s.dp_next, true) + " / " + pm(s.rms_dp_next, true) + " |\n";
  m += "| PPL reference | " + pm(p.ppl_ref) + " |\n| PPL candidate | " + pm(p.ppl_cand) + " |\n";
  m += "| PPL ratio | " + pm(p.ratio) + " |\n| ln PPL ratio | " + pm(p.ln_ratio) + " |\n";
  m += "| PPL difference | " + pm(p.difference) + " |\n| corr(nll) | " + pct(p.correlation) + " |\n";
  char g[160];
  std::snprintf(g, sizeof g, "| greedy: first divergence mean / median (of %d steps, %d prompts) | %.2f / %.1f |\n",
                r.greedy.steps, r.greedy.prompts, r.greedy.mean_first_divergence, r.greedy.median_first_divergence);
  m += g;
  m += "| greedy: identical continuations | " + pct(r.greedy.fraction_identical) + " |\n\n";
  m += "\n## llama-perplexity statistics\n\nThe same numbers in `llama-perplexity --kl-divergence`'s layout (Q = candidate, base = reference):\n\n```text\n" +
       llama_perplexity_block(r) + "```\n\n## Figures\n\n![Certificate summary](certificate.svg)\n\n"
       "Separately: [KLD CDF](kld_cdf.svg), [Δp](delta_p.svg), [same top-1 by position](same_top_by_position.svg), "
       "[KLD by position](kld_by_position.svg).\n";
  return m;
}

// ---- files -------------------------------------------------------------------------------------
std::vector<std::string> write_certificate(const std::string& dir, const CertifyResult& r,
                                           const CertificateInfo& info,
                                           const std::vector<ThresholdCheck>& checks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  require_input(!ec, dir, "output", "cannot create the directory: " + ec.message());
  std::vector<std::string> paths = {dir + "/certificate.json", dir + "/certificate.md", dir + "/certificate.svg",
                                    dir + "/kld_cdf.svg", dir + "/delta_p.svg", dir + "/same_top_by_position.svg",
                                    dir + "/kld_by_position.svg"};
  write_file(paths[0], certificate_json(r, info, checks).dump(2) + "\n");
  write_file(paths[1], certificate_markdown(r, info, checks));
  write_file(paths[2], svg_certificate_summary(r, info, checks));
  write_file(paths[3], svg_kld_cdf(r, checks));
  write_file(paths[4], svg_delta_p(r));
  write_file(paths[5], svg_same_top_by_position(r, checks));
  write_file(paths[6], svg_kld_by_position(r));
  return paths;
}

}  // namespace oracle
