// Certificate figures (see certify_figures.h).
#include "audit/certify/certify_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "audit/interop/logit_stats.h"
#include "audit/interop/svg.h"
#include "numerics/numerics.h"

namespace oracle {
namespace {

// ---- text and numbers ------------------------------------------------------------------------
using svg::fmt;
using svg::line;
using svg::text;

double log10_d(double v) { return num::log_d(v) / num::log_d(10.0); }

double pow10_int(int k) {
  double r = 1.0;
  for (int i = 0; i < (k < 0 ? -k : k); i++) r *= 10.0;
  return k < 0 ? 1.0 / r : r;
}

int floor_log10(double v) {  // largest k with 10^k <= v (v > 0)
  int k = (int)log10_d(v) - 1;
  while (pow10_int(k + 1) <= v) k++;
  return k;
}

std::string tick_label(double v, bool log) {
  if (log) return fmt("%.0e", v);
  return fmt("%g", std::abs(v) < 1e-12 ? 0.0 : v);
}

// ---- a panel: a plot area with axes, in local coordinates -------------------------------------------
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
};

struct Panel {
  double w = 600, h = 340;
  Axis x, y;
  static constexpr double kLeft = 64, kRight = 16, kTop = 34, kBottom = 46;
  double frac(const Axis& a, double v) const {
    if (a.log) return (log10_d(std::max(v, a.lo)) - log10_d(a.lo)) / (log10_d(a.hi) - log10_d(a.lo));
    return (v - a.lo) / (a.hi - a.lo);
  }
  double px(double v) const { return kLeft + std::clamp(frac(x, v), 0.0, 1.0) * (w - kLeft - kRight); }
  double py(double v) const { return h - kBottom - std::clamp(frac(y, v), 0.0, 1.0) * (h - kTop - kBottom); }
  bool inside_x(double v) const { return v >= x.lo && v <= x.hi; }
};

std::string axes(const Panel& p, const std::string& title, const std::string& xl, const std::string& yl,
                 const std::vector<double>& xt, const std::vector<double>& yt) {
  const double l = Panel::kLeft, r = p.w - Panel::kRight, t = Panel::kTop, b = p.h - Panel::kBottom;
  std::string s = "<rect x=\"0\" y=\"0\" width=\"" + fmt("%g", p.w) + "\" height=\"" + fmt("%g", p.h) +
                  "\" fill=\"white\" stroke=\"#ccc\"/>\n";
  s += text(p.w / 2, 20, title, "middle", 14, "font-weight=\"bold\"");
  for (double v : xt) {
    if (v < p.x.lo - 1e-9 * std::abs(p.x.hi - p.x.lo) || v > p.x.hi + 1e-9 * std::abs(p.x.hi - p.x.lo)) continue;
    s += line(p.px(v), t, p.px(v), b, "#e6e6e6");
    s += text(p.px(v), b + 16, tick_label(v, p.x.log), "middle", 11);
  }
  for (double v : yt) {
    if (v < p.y.lo - 1e-9 * std::abs(p.y.hi - p.y.lo) || v > p.y.hi + 1e-9 * std::abs(p.y.hi - p.y.lo)) continue;
    s += line(l, p.py(v), r, p.py(v), "#e6e6e6");
    s += text(l - 6, p.py(v) + 4, tick_label(v, p.y.log), "end", 11);
  }
  s += "<rect x=\"" + fmt("%.1f", l) + "\" y=\"" + fmt("%.1f", t) + "\" width=\"" + fmt("%.1f", r - l) +
       "\" height=\"" + fmt("%.1f", b - t) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  s += text((l + r) / 2, p.h - 8, xl, "middle", 12);
  s += "<text x=\"14\" y=\"" + fmt("%.1f", (t + b) / 2) + "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 " +
       fmt("%.1f", (t + b) / 2) + ")\">" + svg::escape(yl) + "</text>\n";
  return s;
}

std::string polyline(const Panel& p, const std::vector<double>& xs, const std::vector<double>& ys, const char* color) {
  std::string pts;
  for (size_t i = 0; i < xs.size(); i++) pts += fmt("%.1f", p.px(xs[i])) + "," + fmt("%.1f", p.py(ys[i])) + " ";
  return "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"1.8\" points=\"" + pts + "\"/>\n";
}

struct Marker {
  double value;
  const char* color;
  const char* dash;
  std::string label;
};

// Vertical marker lines with a legend (top left of the plot area).
std::string vmarkers(const Panel& p, const std::vector<Marker>& ms) {
  std::string s;
  double ly = Panel::kTop + 14;
  for (const Marker& m : ms) {
    const bool on = p.inside_x(m.value);
    if (on) s += line(p.px(m.value), Panel::kTop, p.px(m.value), p.h - Panel::kBottom, m.color, 1.6, m.dash);
    s += line(Panel::kLeft + 8, ly - 4, Panel::kLeft + 30, ly - 4, m.color, 1.6, m.dash);
    s += text(Panel::kLeft + 34, ly, m.label + (on ? "" : " (off scale)"), "start", 11,
              "paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\"");
    ly += 15;
  }
  return s;
}

std::string hmarker(const Panel& p, double v, const char* color, const char* dash, const std::string& label, int row) {
  std::string s;
  if (v >= p.y.lo && v <= p.y.hi) s += line(Panel::kLeft, p.py(v), p.w - Panel::kRight, p.py(v), color, 1.6, dash);
  const double ly = p.h - Panel::kBottom - 8 - 15.0 * row;
  s += line(Panel::kLeft + 8, ly - 4, Panel::kLeft + 30, ly - 4, color, 1.6, dash);
  s += text(Panel::kLeft + 34, ly, label, "start", 11, "paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\"");
  return s;
}

std::string note(const Panel& p, const std::string& msg) { return text(p.w / 2, p.h / 2, msg, "middle", 13); }

std::string wrap(const Panel& p, const std::string& body) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%g", p.w) + "\" height=\"" + fmt("%g", p.h) +
         "\" font-family=\"sans-serif\">\n" + body + "</svg>\n";
}

const char* kBlue = "#1f77b4";
const char* kGreen = "#2ca02c";
const char* kOrange = "#ff7f0e";
const char* kRed = "#d62728";

double threshold_of(const std::vector<ThresholdCheck>& checks, const std::string& metric, bool* found) {
  for (const ThresholdCheck& c : checks)
    if (c.threshold.metric == metric) {
      *found = true;
      return c.threshold.limit;
    }
  *found = false;
  return 0.0;
}

// ---- panels ---------------------------------------------------------------------------------------------
std::string kld_cdf_panel(Panel p, const CertifyResult& r, const std::vector<ThresholdCheck>& checks) {
  std::vector<double> k;
  for (const TokenRecord& t : r.records) k.push_back(t.kld);
  std::sort(k.begin(), k.end());
  const std::string title = "KLD, cumulative (per token, log x)";
  const auto first_pos = std::find_if(k.begin(), k.end(), [](double v) { return v > 0.0; });
  if (first_pos == k.end()) return axes(p, title, "KLD (nats)", "fraction of tokens", {}, {}) +
                                    note(p, k.empty() ? "no tokens scored" : "every KLD is 0: identical distributions");
  std::vector<Marker> ms = {{r.summary.kld.mean, kBlue, "6,3", "mean " + fmt("%.3g", r.summary.kld.mean)},
                            {percentile_sorted(k, 0.5), kGreen, "6,3", "median " + fmt("%.3g", percentile_sorted(k, 0.5))},
                            {percentile_sorted(k, 0.99), kOrange, "6,3", "p99 " + fmt("%.3g", percentile_sorted(k, 0.99))}};
  double hi = k.back();
  for (const ThresholdCheck& c : checks)
    if (c.threshold.metric.rfind("kld_", 0) == 0) {
      ms.push_back({c.threshold.limit, kRed, "", "threshold " + c.threshold.metric + " ≤ " + fmt("%g", c.threshold.limit)});
      hi = std::max(hi, c.threshold.limit);
    }
  p.x = {pow10_int(std::max(floor_log10(*first_pos), floor_log10(hi) - 8)), pow10_int(floor_log10(hi) + 1), true};
  p.y = {0, 1, false};
  std::vector<double> xs, ys;
  const size_t step = std::max<size_t>(1, k.size() / 600);
  for (size_t i = 0; i < k.size(); i += step) {
    xs.push_back(std::max(k[i], p.x.lo));
    ys.push_back((double)(i + 1) / (double)k.size());
  }
  xs.push_back(std::max(k.back(), p.x.lo));
  ys.push_back(1.0);
  const auto below = std::count_if(k.begin(), k.end(), [&](double v) { return v < p.x.lo; });
  std::string s = axes(p, title, "KLD (nats)" + (below ? ", " + std::to_string(below) + " tokens below the axis" : std::string()),
                       "fraction of tokens ≤ x", decade_ticks(p.x.lo, p.x.hi), nice_ticks(0, 1, 5));
  return s + polyline(p, xs, ys, "#333") + vmarkers(p, ms);
}

std::string delta_p_panel(Panel p, const CertifyResult& r) {
  std::vector<double> v;
  for (const TokenRecord& t : r.records) v.push_back(100.0 * t.dp_next);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const std::string title = "Δp = p_cand(next) − p_ref(next)";
  if (sorted.empty() || (sorted.front() == 0.0 && sorted.back() == 0.0))
    return axes(p, title, "Δp (percentage points)", "tokens", {}, {}) + note(p, sorted.empty() ? "no tokens scored" : "Δp = 0 for every token");
  double a = std::max(std::abs(percentile_sorted(sorted, 0.001)), std::abs(percentile_sorted(sorted, 0.999)));
  if (a <= 0.0) a = std::max(std::abs(sorted.front()), std::abs(sorted.back()));
  std::vector<double> xt = nice_ticks(-a, a, 7);
  p.x = {xt.front(), xt.back(), false};
  const int bins = 60;
  std::vector<int64_t> count(bins, 0);
  int64_t outside = 0;
  for (double x : v) {
    outside += x < p.x.lo || x > p.x.hi;
    const int b = (int)((std::clamp(x, p.x.lo, p.x.hi) - p.x.lo) / (p.x.hi - p.x.lo) * bins);
    count[std::min(b, bins - 1)]++;
  }
  const std::vector<double> yt = nice_ticks(0, (double)*std::max_element(count.begin(), count.end()), 5);
  p.y = {0, yt.back(), false};
  std::string s = axes(p, title, "Δp (percentage points)" + (outside ? ", " + std::to_string(outside) + " beyond the axis (in the end bars)" : std::string()),
                       "tokens", xt, yt);
  for (int b = 0; b < bins; b++) {
    const double x0 = p.x.lo + (p.x.hi - p.x.lo) * b / bins, x1 = p.x.lo + (p.x.hi - p.x.lo) * (b + 1) / bins;
    s += "<rect x=\"" + fmt("%.1f", p.px(x0)) + "\" y=\"" + fmt("%.1f", p.py((double)count[b])) + "\" width=\"" +
         fmt("%.1f", std::max(0.5, p.px(x1) - p.px(x0) - 0.5)) + "\" height=\"" +
         fmt("%.1f", p.py(0) - p.py((double)count[b])) + "\" fill=\"#9ecae1\"/>\n";
  }
  const double rms = r.summary.rms_dp_next.mean * 100;
  return s + vmarkers(p, {{r.summary.dp_next.mean * 100, kBlue, "6,3", "mean " + fmt("%.3g", r.summary.dp_next.mean * 100) + " (RMS " + fmt("%.3g", rms) + ")"},
                          {percentile_sorted(sorted, 0.01), kOrange, "6,3", "p1 " + fmt("%.3g", percentile_sorted(sorted, 0.01))},
                          {percentile_sorted(sorted, 0.99), kOrange, "2,2", "p99 " + fmt("%.3g", percentile_sorted(sorted, 0.99))}});
}

std::string same_top_panel(Panel p, const CertifyResult& r, const std::vector<ThresholdCheck>& checks) {
  std::vector<int64_t> n, same;
  for (const TokenRecord& t : r.records) {
    if ((size_t)t.pos >= n.size()) n.resize(t.pos + 1, 0), same.resize(t.pos + 1, 0);
    n[t.pos]++;
    same[t.pos] += t.same_top();
  }
  const std::string title = "same top-1 token, by position (95% Wilson band)";
  if (n.empty()) return axes(p, title, "position in chunk", "fraction", {}, {}) + note(p, "no tokens scored");
  std::vector<double> xs, ys, lo, hi;
  double ymin = 1.0;
  for (size_t i = 0; i < n.size(); i++) {
    if (n[i] == 0) continue;
    const Interval w = wilson_interval(same[i], n[i]);
    xs.push_back((double)i), ys.push_back((double)same[i] / (double)n[i]), lo.push_back(w.lo), hi.push_back(w.hi);
    ymin = std::min(ymin, w.lo);
  }
  bool has_t = false;
  const double limit = threshold_of(checks, "same_top", &has_t);
  if (has_t) ymin = std::min(ymin, limit);
  std::vector<double> yt = nice_ticks(std::max(0.0, ymin - 0.02), 1.0, 5);
  p.x = {0, std::max(1.0, xs.back()), false};
  p.y = {yt.front(), 1.0, false};
  yt.erase(std::remove_if(yt.begin(), yt.end(), [](double v) { return v > 1.0 + 1e-12; }), yt.end());
  std::string s = axes(p, title, "position in chunk", "fraction same top-1", nice_ticks(p.x.lo, p.x.hi, 8), yt);
  std::string pts;
  for (size_t i = 0; i < xs.size(); i++) pts += fmt("%.1f", p.px(xs[i])) + "," + fmt("%.1f", p.py(hi[i])) + " ";
  for (size_t i = xs.size(); i-- > 0;) pts += fmt("%.1f", p.px(xs[i])) + "," + fmt("%.1f", p.py(lo[i])) + " ";
  s += "<polygon fill=\"#c6dbef\" stroke=\"none\" points=\"" + pts + "\"/>\n";
  s += polyline(p, xs, ys, kBlue);
  s += hmarker(p, r.summary.same_top.mean, kGreen, "6,3", "overall " + fmt("%.4f", r.summary.same_top.mean), 0);
  if (has_t) s += hmarker(p, limit, kRed, "", "threshold same_top ≥ " + fmt("%g", limit), 1);
  return s;
}

std::string kld_by_position_panel(Panel p, const CertifyResult& r) {
  const std::vector<double>& k = r.summary.kld_by_position;
  const std::string title = "mean KLD by position";
  if (k.empty()) return axes(p, title, "position in chunk", "mean KLD (nats)", {}, {}) + note(p, "no tokens scored");
  std::vector<double> xs;
  for (size_t i = 0; i < k.size(); i++) xs.push_back((double)i);
  const double top = *std::max_element(k.begin(), k.end());
  if (top <= 0.0) return axes(p, title, "position in chunk", "mean KLD (nats)", {}, {}) + note(p, "mean KLD is 0 at every position");
  const std::vector<double> yt = nice_ticks(0, top, 5);
  p.x = {0, std::max(1.0, xs.back()), false};
  p.y = {0, yt.back(), false};
  return axes(p, title, "position in chunk", "mean KLD (nats)", nice_ticks(p.x.lo, p.x.hi, 8), yt) +
         polyline(p, xs, k, kBlue);
}

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

// ---- ticks and intervals ---------------------------------------------------------------------------------
std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = pow10_int(floor_log10(raw));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  const long first = (long)std::floor(lo / step + 1e-9), last = (long)std::ceil(hi / step - 1e-9);
  for (long i = first; i <= last; i++) out.push_back((double)i * step);
  return out;
}

std::vector<double> decade_ticks(double lo, double hi) {
  std::vector<double> out;
  for (int k = floor_log10(lo); pow10_int(k) <= hi * (1 + 1e-12); k++)
    if (pow10_int(k) >= lo * (1 - 1e-12)) out.push_back(pow10_int(k));
  return out;
}

Interval wilson_interval(int64_t successes, int64_t n) {
  if (n <= 0) return {0.0, 1.0};
  const double z = 1.959963984540054, p = (double)successes / (double)n, nn = (double)n;
  const double denom = 1 + z * z / nn, centre = (p + z * z / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

// ---- files ---------------------------------------------------------------------------------------------------
std::string svg_kld_cdf(const CertifyResult& r, const std::vector<ThresholdCheck>& checks) {
  Panel p;
  return wrap(p, kld_cdf_panel(p, r, checks));
}
std::string svg_delta_p(const CertifyResult& r) {
  Panel p;
  return wrap(p, delta_p_panel(p, r));
}
std::string svg_same_top_by_position(const CertifyResult& r, const std::vector<ThresholdCheck>& checks) {
  Panel p;
  return wrap(p, same_top_panel(p, r, checks));
}
std::string svg_kld_by_position(const CertifyResult& r) {
  Panel p;
  return wrap(p, kld_by_position_panel(p, r));
}

std::string svg_certificate_summary(const CertifyResult& r, const CertificateInfo& info,
                                    const std::vector<ThresholdCheck>& checks) {
  const bool pass = all_pass(checks);
  const double W = 1240, rows_y = 200, panels_y = rows_y + 26 + 20.0 * (double)checks.size() + 34;
  std::string s;
  s += text(20, 36, std::string("oracle certify: ") + (pass ? "PASS" : "FAIL"), "start", 26,
            pass ? "font-weight=\"bold\" fill=\"#1a7f37\"" : "font-weight=\"bold\" fill=\"#c62828\"");
  s += text(20, 62, "candidate " + base_name(info.candidate_path) + " against reference " + base_name(info.reference_path), "start", 15);
  const char* mono = "font-family=\"monospace\" xml:space=\"preserve\"";
  const Summary& sm = r.summary;
  const std::vector<std::string> lines = {
      "reference  " + info.reference_path + "  sha256 " + info.reference_sha256,
      "candidate  " + info.candidate_path + "  sha256 " + info.candidate_sha256 + "  (" + info.weight_type +
          (info.candidate_kv_int8 ? ", int8 KV cache" : "") + ", numerics " +
          std::string(num::numerics_profile_name(info.candidate_numerics)) + ")",
      "corpus     " + info.corpus_path + "  sha256 " + info.corpus_sha256 + "  " + std::to_string(r.corpus_tokens) + " tokens",
      "protocol   " + std::string(protocol_name(r.protocol)) + ", ctx " + std::to_string(r.ctx) + ", " + std::to_string(r.chunks) + " chunks, " +
          std::to_string(sm.n) + " scored tokens; greedy " + std::to_string(r.greedy.prompts) + " prompts x " +
          std::to_string(r.greedy.steps) + " steps; oracle " + info.tool_version,
      "summary    mean KLD " + fmt("%.6g", sm.kld.mean) + " ± " + fmt("%.6g", sm.kld.se) + ", same top-1 " +
          fmt("%.3f%%", 100 * sm.same_top.mean) + ", PPL ratio " + fmt("%.6f", sm.perplexity.ratio.mean) + " ± " + fmt("%.6g", sm.perplexity.ratio.se) +
          ", RMS Δp " + fmt("%.3f%%", 100 * sm.rms_dp_next.mean)};
  for (size_t i = 0; i < lines.size(); i++) s += text(20, 88 + 19.0 * (double)i, lines[i], "start", 12, mono);
  s += text(20, rows_y, "threshold", "start", 13, "font-weight=\"bold\"");
  s += text(300, rows_y, "limit", "start", 13, "font-weight=\"bold\"");
  s += text(460, rows_y, "value", "start", 13, "font-weight=\"bold\"");
  s += text(640, rows_y, "result", "start", 13, "font-weight=\"bold\"");
  for (size_t i = 0; i < checks.size(); i++) {
    const ThresholdCheck& c = checks[i];
    const double y = rows_y + 22 + 20.0 * (double)i;
    s += text(20, y, c.threshold.metric, "start", 13, mono);
    s += text(300, y, std::string(c.threshold.at_most ? "≤ " : "≥ ") + fmt("%g", c.threshold.limit), "start", 13, mono);
    s += text(460, y, fmt("%.6g", c.value), "start", 13, mono);
    s += text(640, y, c.pass ? "PASS" : "FAIL", "start", 13,
              c.pass ? "font-weight=\"bold\" fill=\"#1a7f37\"" : "font-weight=\"bold\" fill=\"#c62828\"");
  }
  Panel p;
  const double gap = 20, pw = (W - 3 * gap) / 2;
  p.w = pw;
  auto at = [&](double x, double y, const std::string& body) {
    return "<g transform=\"translate(" + fmt("%.1f", x) + "," + fmt("%.1f", y) + ")\">\n" + body + "</g>\n";
  };
  s += at(gap, panels_y, kld_cdf_panel(p, r, checks));
  s += at(2 * gap + pw, panels_y, delta_p_panel(p, r));
  s += at(gap, panels_y + p.h + gap, same_top_panel(p, r, checks));
  s += at(2 * gap + pw, panels_y + p.h + gap, kld_by_position_panel(p, r));
  const double H = panels_y + 2 * p.h + 2 * gap;
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%g", W) + "\" height=\"" + fmt("%g", H) +
         "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n" + s + "</svg>\n";
}

}  // namespace oracle
