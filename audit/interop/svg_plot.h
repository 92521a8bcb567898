#pragma once
// ============================================================================
// A tiny SVG writer for certificate plots: a histogram and a line plot, axes
// with a few labelled ticks, no dependencies. Output is a plain string (the
// caller writes the file), deterministic for the same input.
// ============================================================================
#include <string>
#include <vector>

namespace oracle {

struct PlotLabels {
  std::string title;
  std::string x_label;
  std::string y_label;
};

// Histogram of `values` in `bins` equal-width bins over [lo, hi] (values
// outside are clamped into the end bins; bins < 1 reads as 1). log_y: bar heights on log10(1 + count).
std::string svg_histogram(const std::vector<double>& values, int bins, double lo, double hi,
                          const PlotLabels& labels, bool log_y = false);

// Polyline through (x[i], y[i]); x and y have the same length (>= 1).
std::string svg_line_plot(const std::vector<double>& x, const std::vector<double>& y,
                          const PlotLabels& labels);

}  // namespace oracle
