// Minimal SVG plots (see svg_plot.h). Fixed 640x400 canvas, 60 px margins.
#include "audit/interop/svg_plot.h"

#include "audit/interop/svg.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "numerics/numerics.h"

namespace oracle {
namespace {

constexpr double kWidth = 640, kHeight = 400, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

struct Frame {
  double x0, x1, y0, y1;  // data range mapped to the plot area
  double px(double x) const { return kLeft + (x - x0) / (x1 - x0) * (kWidth - kLeft - kRight); }
  double py(double y) const { return kHeight - kBottom - (y - y0) / (y1 - y0) * (kHeight - kTop - kBottom); }
};

using svg::fmt;
using svg::line;
using svg::text;

// Header, axes, 5 ticks per axis, title and axis labels.
std::string frame_svg(const Frame& f, const PlotLabels& l, const char* y_tick_fmt) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" "
                  "font-family=\"sans-serif\">\n<rect width=\"640\" height=\"400\" fill=\"white\"/>\n";
  s += line(kLeft, kHeight - kBottom, kWidth - kRight, kHeight - kBottom, "black");
  s += line(kLeft, kTop, kLeft, kHeight - kBottom, "black");
  for (int i = 0; i <= 4; i++) {
    double xv = f.x0 + (f.x1 - f.x0) * i / 4.0, yv = f.y0 + (f.y1 - f.y0) * i / 4.0;
    s += line(f.px(xv), kHeight - kBottom, f.px(xv), kHeight - kBottom + 5, "black");
    s += text(f.px(xv), kHeight - kBottom + 18, fmt("%.4g", xv), "middle", 11);
    s += line(kLeft - 5, f.py(yv), kLeft, f.py(yv), "black");
    s += text(kLeft - 8, f.py(yv) + 4, fmt(y_tick_fmt, yv), "end", 11);
  }
  s += text(kWidth / 2, 24, l.title, "middle", 15);
  s += text((kLeft + kWidth - kRight) / 2, kHeight - 12, l.x_label, "middle");
  s += "<text x=\"16\" y=\"" + fmt("%.1f", (kTop + kHeight - kBottom) / 2) +
       "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 " +
       fmt("%.1f", (kTop + kHeight - kBottom) / 2) + ")\">" + svg::escape(l.y_label) + "</text>\n";
  return s;
}

double log10_1p(double c) { return num::log_d(1.0 + c) / num::log_d(10.0); }

}  // namespace

// ---- histogram --------------------------------------------------------------------------
std::string svg_histogram(const std::vector<double>& values, int bins, double lo, double hi,
                          const PlotLabels& labels, bool log_y) {
  bins = std::max(1, bins);
  if (!(hi > lo)) hi = lo + 1.0;
  std::vector<double> count(bins, 0.0);
  for (double v : values) {
    int b = (int)((v - lo) / (hi - lo) * bins);
    count[std::clamp(b, 0, bins - 1)] += 1.0;
  }
  double top = 0.0;
  for (double& c : count) {
    if (log_y) c = log10_1p(c);
    top = std::max(top, c);
  }
  Frame f{lo, hi, 0.0, top > 0.0 ? top * 1.05 : 1.0};
  std::string s = frame_svg(f, labels, log_y ? "%.2g" : "%.0f");
  double w = (hi - lo) / bins;
  for (int b = 0; b < bins; b++) {
    if (count[b] <= 0.0) continue;
    double x0 = f.px(lo + b * w), x1 = f.px(lo + (b + 1) * w), y = f.py(count[b]);
    s += "<rect x=\"" + fmt("%.2f", x0) + "\" y=\"" + fmt("%.2f", y) + "\" width=\"" +
         fmt("%.2f", std::max(0.5, x1 - x0 - 0.5)) + "\" height=\"" + fmt("%.2f", f.py(0.0) - y) +
         "\" fill=\"steelblue\"/>\n";
  }
  return s + "</svg>\n";
}

// ---- line plot ------------------------------------------------------------------------------
std::string svg_line_plot(const std::vector<double>& x, const std::vector<double>& y,
                          const PlotLabels& labels) {
  size_t n = std::min(x.size(), y.size());
  double x0 = n ? x[0] : 0.0, x1 = x0, y0 = 0.0, y1 = 0.0;
  for (size_t i = 0; i < n; i++) {
    x0 = std::min(x0, x[i]);
    x1 = std::max(x1, x[i]);
    y0 = std::min(y0, y[i]);
    y1 = std::max(y1, y[i]);
  }
  if (!(x1 > x0)) x1 = x0 + 1.0;
  if (!(y1 > y0)) y1 = y0 + 1.0;
  Frame f{x0, x1, y0, y1 * 1.05};
  std::string s = frame_svg(f, labels, "%.3g");
  s += "<polyline fill=\"none\" stroke=\"firebrick\" stroke-width=\"1.5\" points=\"";
  for (size_t i = 0; i < n; i++) s += fmt("%.2f", f.px(x[i])) + "," + fmt("%.2f", f.py(y[i])) + " ";
  return s + "\"/>\n</svg>\n";
}

}  // namespace oracle
