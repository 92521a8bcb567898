// oracle compare: logits step by step, traces op by op (compare.h).
#include "audit/interop/compare.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "audit/interop/logit_stats.h"
#include "numerics/numerics.h"

namespace oracle {

using nlohmann::json;

namespace {

StepDiff step_diff(const float* want, const float* got, int vocab, const CompareThresholds& t) {
  StepDiff d;
  d.stats = compare_tensor({want, (size_t)vocab}, {got, (size_t)vocab});
  d.kld = compare_logits(want, got, vocab, 0).kld;
  d.top_want = num::argmax_lowest(want, vocab);
  d.top_got = num::argmax_lowest(got, vocab);
  const double scale = std::max(1.0, (double)d.stats.max_abs_want);
  d.tie_bound = 2.0 * t.tie_rel * scale;
  if (d.top_want != d.top_got) {
    d.margin = (double)want[d.top_want] - (double)want[d.top_got];
    d.tie = d.margin <= d.tie_bound;
  }
  return d;
}

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

// The first threshold step s breaks, "" if none.
std::string step_failure(const StepDiff& d, const CompareThresholds& t) {
  const std::string at = "step " + std::to_string(d.step) + ": ";
  if (!(d.kld <= t.max_kld)) return at + "KLD " + fmt("%.6g", d.kld) + " > " + fmt("%g", t.max_kld);
  if (t.max_abs >= 0 && !(d.stats.max_abs <= t.max_abs))
    return at + "max abs " + fmt("%.6g", d.stats.max_abs) + " > " + fmt("%g", t.max_abs);
  if (t.max_nmse >= 0 && !(d.stats.nmse <= t.max_nmse))
    return at + "NMSE " + fmt("%.6g", d.stats.nmse) + " > " + fmt("%g", t.max_nmse);
  if (t.max_ulp >= 0 && d.stats.max_ulp > (uint64_t)t.max_ulp)
    return at + "max ULP " + std::to_string(d.stats.max_ulp) + " > " + std::to_string(t.max_ulp);
  return "";
}

}  // namespace

LogitsComparison compare_logit_rows(const std::vector<float>& want, const std::vector<float>& got, int steps,
                                    int vocab, const std::vector<int>& tokens, const CompareThresholds& t) {
  LogitsComparison c;
  c.steps = steps;
  c.vocab = vocab;
  double kld_sum = 0.0;  // step order
  for (int s = 0; s < steps; s++) {
    StepDiff d = step_diff(&want[(size_t)s * vocab], &got[(size_t)s * vocab], vocab, t);
    d.step = s;
    d.token = s < (int)tokens.size() ? tokens[s] : -1;
    if (c.first_bit_diff < 0 && !d.stats.bit_equal) c.first_bit_diff = s;
    if (c.first_argmax_diff < 0 && d.top_want != d.top_got) c.first_argmax_diff = s;
    c.top1_agree += d.top_want == d.top_got;
    c.ties += d.tie;
    c.flips += d.top_want != d.top_got && !d.tie;
    kld_sum += d.kld;
    c.kld_max = std::max(c.kld_max, d.kld);
    c.max_abs = std::max(c.max_abs, d.stats.max_abs);
    c.nmse_max = std::max(c.nmse_max, d.stats.nmse);
    c.max_ulp = std::max(c.max_ulp, d.stats.max_ulp);
    const std::string f = step_failure(d, t);
    if (!f.empty()) {
      if (c.first_failure < 0) c.first_failure = s;
      if (c.failures.size() < 8) c.failures.push_back(f);
    }
    if (d.top_want != d.top_got && !d.tie && c.flips > t.max_flips) {
      if (c.first_failure < 0 || s < c.first_failure) c.first_failure = s;
      if (c.failures.size() < 8)
        c.failures.push_back("step " + std::to_string(s) + ": argmax " + std::to_string(d.top_want) + " vs " +
                             std::to_string(d.top_got) + ", reference margin " + fmt("%.6g", d.margin) +
                             " > tie bound " + fmt("%.3g", d.tie_bound));
    }
    c.per_step.push_back(d);
  }
  c.kld_mean = steps > 0 ? kld_sum / steps : 0.0;
  c.pass = c.failures.empty();
  return c;
}

TraceComparison compare_trace_dumps(const std::vector<TraceEntry>& want, const std::vector<TraceEntry>& got,
                                    double max_nmse) {
  TraceComparison c;
  c.max_nmse = max_nmse;
  c.diff = compare_traces(want, got);
  for (size_t i = 0; i < c.diff.entries.size(); i++)
    if (c.first_beyond < 0 && !(c.diff.entries[i].stats.nmse <= max_nmse)) c.first_beyond = (int)i;
  c.pass = c.diff.structure_error.empty() && !c.diff.entries.empty() && c.first_beyond < 0;
  return c;
}

// ============================================================================
// Reports
// ============================================================================
namespace {

json step_json(const StepDiff& d) {
  return {{"step", d.step},           {"token", d.token},        {"kld", d.kld},
          {"top1_want", d.top_want},  {"top1_got", d.top_got},   {"tie", d.tie},
          {"margin", d.margin},       {"tie_bound", d.tie_bound}, {"max_abs", d.stats.max_abs},
          {"max_ulp", d.stats.max_ulp}, {"nmse", d.stats.nmse},  {"bit_equal", d.stats.bit_equal}};
}

json entry_json(const EntryDiff& e, const std::vector<TraceEntry>& want, const std::vector<TraceEntry>& got) {
  json j = {{"index", e.index},  {"op", e.name},      {"layer", layer_of(e.name)}, {"pos", e.pos},
            {"max_abs", e.stats.max_abs}, {"max_ulp", e.stats.max_ulp}, {"nmse", e.stats.nmse},
            {"element", e.stats.first_diff}};
  if (e.stats.first_diff >= 0) {
    j["want_value"] = want[e.index].values[e.stats.first_diff];
    j["got_value"] = got[e.index].values[e.stats.first_diff];
  }
  return j;
}

}  // namespace

json comparison_json(const LogitsComparison& c, const CompareThresholds& t) {
  json steps = json::array();
  for (const StepDiff& d : c.per_step) steps.push_back(step_json(d));
  json j = {{"schema", "oracle-compare"}, {"version", 1}, {"steps", c.steps}, {"vocab", c.vocab},
            {"pass", c.pass}, {"failures", c.failures},
            {"summary",
             {{"kld_mean", c.kld_mean}, {"kld_max", c.kld_max}, {"top1_agreement", c.steps ? (double)c.top1_agree / c.steps : 1.0},
              {"ties", c.ties}, {"flips", c.flips}, {"max_abs", c.max_abs}, {"max_ulp", c.max_ulp},
              {"nmse_max", c.nmse_max}, {"first_bit_diff", c.first_bit_diff},
              {"first_argmax_diff", c.first_argmax_diff}, {"first_failure", c.first_failure}}},
            {"thresholds",
             {{"max_kld", t.max_kld}, {"max_flips", t.max_flips}, {"tie_rel", t.tie_rel}, {"max_abs", t.max_abs},
              {"max_nmse", t.max_nmse}, {"max_ulp", t.max_ulp}}},
            {"per_step", steps}};
  if (c.first_argmax_diff >= 0) j["first_argmax"] = step_json(c.per_step[c.first_argmax_diff]);
  return j;
}

std::string comparison_markdown(const LogitsComparison& c, const CompareThresholds& t, const std::string& want_name,
                                const std::string& got_name) {
  std::string md = "# oracle compare: " + got_name + " against " + want_name + "\n\n";
  md += std::string("**") + (c.pass ? "PASS" : "FAIL") + "** — " + std::to_string(c.steps) + " steps, vocab " +
        std::to_string(c.vocab) + "\n\n| statistic | value |\n|---|---|\n";
  md += "| mean / max KLD (nats) | " + fmt("%.6g", c.kld_mean) + " / " + fmt("%.6g", c.kld_max) + " |\n";
  md += "| top-1 agreement | " + std::to_string(c.top1_agree) + "/" + std::to_string(c.steps) + " (" +
        std::to_string(c.ties) + " ties, " + std::to_string(c.flips) + " flips) |\n";
  md += "| max abs / max ULP / max NMSE | " + fmt("%.6g", c.max_abs) + " / " + std::to_string(c.max_ulp) + " / " +
        fmt("%.6g", c.nmse_max) + " |\n";
  md += "| first step with a bit difference | " + std::to_string(c.first_bit_diff) + " |\n";
  if (c.first_argmax_diff >= 0) {
    const StepDiff& d = c.per_step[c.first_argmax_diff];
    md += "| first argmax difference | step " + std::to_string(d.step) + ": " + std::to_string(d.top_want) + " vs " +
          std::to_string(d.top_got) + ", margin " + fmt("%.6g", d.margin) + (d.tie ? " ≤ " : " > ") + "tie bound " +
          fmt("%.3g", d.tie_bound) + (d.tie ? " (tie)" : " (failure)") + " |\n";
  }
  md += "\nThresholds: KLD ≤ " + fmt("%g", t.max_kld) + " per step, argmax flips ≤ " + std::to_string(t.max_flips) +
        ", tie bound 2·" + fmt("%g", t.tie_rel) + "·max(1, max|logit|).\n";
  for (const std::string& f : c.failures) md += "- " + f + "\n";
  md += "\n| step | token | KLD | top-1 | max abs | max ULP | NMSE |\n|---|---|---|---|---|---|---|\n";
  for (const StepDiff& d : c.per_step)
    md += "| " + std::to_string(d.step) + " | " + std::to_string(d.token) + " | " + fmt("%.3g", d.kld) + " | " +
          (d.top_want == d.top_got ? "same" : d.tie ? "tie" : "FLIP") + " | " + fmt("%.3g", d.stats.max_abs) +
          " | " + std::to_string(d.stats.max_ulp) + " | " + fmt("%.3g", d.stats.nmse) + " |\n";
  return md;
}

json trace_comparison_json(const TraceComparison& c, const std::vector<TraceEntry>& want,
                           const std::vector<TraceEntry>& got) {
  const TraceDiff& d = c.diff;
  json j = {{"schema", "oracle-compare-trace"}, {"version", 1}, {"pass", c.pass},
            {"tensors_compared", d.entries.size()}, {"structure_error", d.structure_error},
            {"max_nmse", c.max_nmse}, {"bit_exact", d.first_divergent < 0 && d.structure_error.empty()},
            {"first_divergent", nullptr}, {"first_beyond", nullptr}};
  if (d.first_divergent >= 0) j["first_divergent"] = entry_json(d.entries[d.first_divergent], want, got);
  if (c.first_beyond >= 0) j["first_beyond"] = entry_json(d.entries[c.first_beyond], want, got);
  return j;
}

std::string trace_comparison_markdown(const TraceComparison& c, const std::string& want_name,
                                      const std::string& got_name) {
  const TraceDiff& d = c.diff;
  std::string md = "# oracle compare --trace: " + got_name + " against " + want_name + "\n\n";
  md += std::string("**") + (c.pass ? "PASS" : "FAIL") + "** — " + std::to_string(d.entries.size()) +
        " tensors compared (layer by layer, op by op, position by position)\n\n";
  if (!d.structure_error.empty()) md += "Traces do not line up: " + d.structure_error + "\n\n";
  auto line = [](const char* what, const EntryDiff& e) {
    return std::string("- ") + what + ": **" + e.name + "** (layer " + std::to_string(layer_of(e.name)) + ", pos " +
           std::to_string(e.pos) + "): max abs " + fmt("%.6g", e.stats.max_abs) + ", max ULP " +
           std::to_string(e.stats.max_ulp) + ", NMSE " + fmt("%.6g", e.stats.nmse) + "\n";
  };
  if (d.first_divergent < 0) md += "- every tensor bit-identical\n";
  else md += line("first divergent op", d.entries[d.first_divergent]);
  if (c.first_beyond >= 0) md += line(("first op with NMSE > " + fmt("%g", c.max_nmse)).c_str(), d.entries[c.first_beyond]);
  return md;
}

}  // namespace oracle
