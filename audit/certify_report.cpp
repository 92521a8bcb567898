// Certificate writers: JSON, Markdown, SVG (see certify_report.h).
#include "audit/certify_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "reference/base/errors.h"
#include "audit/svg_plot.h"

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

std::string num6(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6f", v);
  return b;
}

std::string pm(const MeanSe& m, bool percent = false) {
  return percent ? pct(m.mean) + " ± " + pct(m.se) : num6(m.mean) + " ± " + num6(m.se);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  require_input(out.good(), path, "output", "cannot write the file");
  out << text;
  require_input(out.good(), path, "output", "write failed");
}

}  // namespace

bool all_pass(const std::vector<ThresholdCheck>& checks) {
  for (const ThresholdCheck& c : checks)
    if (!c.pass) return false;
  return true;
}

// ---- JSON -------------------------------------------------------------------------------
nlohmann::json certificate_json(const CertifyResult& r, const CertificateInfo& info,
                                const std::vector<ThresholdCheck>& checks) {
  const GreedySummary& g = r.greedy;
  return {{"tool", "oracle certify"},
          {"tool_version", info.tool_version},
          {"reference", {{"path", info.reference_path}, {"sha256", info.reference_sha256}}},
          {"candidate", {{"path", info.candidate_path}, {"sha256", info.candidate_sha256},
                         {"weight_type", info.weight_type}, {"kv_cache_int8", info.candidate_kv_int8}}},
          {"corpus", {{"path", info.corpus_path}, {"sha256", info.corpus_sha256}, {"tokens", r.corpus_tokens}}},
          {"protocol", {{"name", r.protocol}, {"ctx", r.ctx}, {"chunks", r.chunks},
                        {"pipeline", "canonical f32 reference (weights dequantized exactly at load)"}}},
          {"statistics", summary_json(r.summary)},
          {"greedy", {{"prompts", g.prompts}, {"steps", g.steps},
                      {"mean_first_divergence", g.mean_first_divergence},
                      {"median_first_divergence", g.median_first_divergence},
                      {"fraction_identical", g.fraction_identical},
                      {"first_divergence", r.first_divergence},
                      {"histogram", g.histogram}}},
          {"thresholds", checks_json(checks)},
          {"verdict", all_pass(checks) ? "PASS" : "FAIL"}};
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
       info.weight_type + (info.candidate_kv_int8 ? ", int8 KV cache" : "") + ") |\n";
  m += "| corpus | `" + info.corpus_path + "` sha256 `" + info.corpus_sha256 + "`, " +
       std::to_string(r.corpus_tokens) + " tokens |\n";
  m += "| protocol | " + r.protocol + ", ctx " + std::to_string(r.ctx) + ", " + std::to_string(r.chunks) +
       " chunks, " + std::to_string(s.n) + " scored tokens |\n";
  m += "| tool | oracle " + info.tool_version + " |\n\n## Thresholds\n\n| metric | limit | value | result |\n|---|---|---|---|\n";
  for (const ThresholdCheck& c : checks)
    m += "| " + c.threshold.metric + " | " + (c.threshold.at_most ? "≤ " : "≥ ") + num6(c.threshold.limit) +
         " | " + num6(c.value) + " | " + (c.pass ? "PASS" : "FAIL") + " |\n";
  m += "\n## Statistics\n\n| statistic | value |\n|---|---|\n";
  m += "| mean KLD | " + pm(s.kld) + " |\n";
  for (const auto& [level, v] : s.kld_percentiles) {
    char b[96];
    std::snprintf(b, sizeof b, "| KLD %g%% | %.6f |\n", level, v);
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
  m += "![KLD histogram](kld_histogram.svg)\n![KLD by position](kld_by_position.svg)\n";
  return m;
}

// ---- files -------------------------------------------------------------------------------------
std::vector<std::string> write_certificate(const std::string& dir, const CertifyResult& r,
                                           const CertificateInfo& info,
                                           const std::vector<ThresholdCheck>& checks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  require_input(!ec, dir, "output", "cannot create the directory: " + ec.message());
  std::vector<double> kld;
  for (const TokenRecord& t : r.records) kld.push_back(t.kld);
  double hi = 0.0;
  for (double v : kld) hi = std::max(hi, v);
  std::vector<double> pos;
  for (size_t i = 0; i < r.summary.kld_by_position.size(); i++) pos.push_back((double)i);
  std::vector<std::string> paths = {dir + "/certificate.json", dir + "/certificate.md",
                                    dir + "/kld_histogram.svg", dir + "/kld_by_position.svg"};
  write_file(paths[0], certificate_json(r, info, checks).dump(2) + "\n");
  write_file(paths[1], certificate_markdown(r, info, checks));
  write_file(paths[2], svg_histogram(kld, 60, 0.0, hi, {"Per-token KL divergence", "KLD (nats)",
                                                          "tokens (log10(1 + count))"}, true));
  write_file(paths[3], svg_line_plot(pos, r.summary.kld_by_position,
                                     {"Mean KL divergence by position", "position in chunk", "mean KLD (nats)"}));
  return paths;
}

}  // namespace oracle
