#pragma once
// ============================================================================
// SVG primitives shared by every figure the oracle writes (svg_plot.cpp's
// histogram and line plot, certify_figures.cpp's certificate page): one text
// escaper, one number format, one <text> and one <line> element. Output is a
// plain deterministic string.
// ============================================================================
#include <string>

namespace oracle::svg {

// XML text and attribute escaping: & < > " (so a label can sit in either).
std::string escape(const std::string& s);
// printf-style formatting of one number (e.g. "%.1f" for coordinates).
std::string fmt(const char* f, double v);
// <text x y font-size text-anchor [extra attributes]>escape(s)</text>
std::string text(double x, double y, const std::string& s, const char* anchor = "start", int size = 12,
                 const char* extra = "");
// <line ... stroke stroke-width [stroke-dasharray]/>
std::string line(double x0, double y0, double x1, double y1, const char* color, double width = 1,
                 const char* dash = "");

}  // namespace oracle::svg
