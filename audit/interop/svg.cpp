// SVG primitives (see svg.h).
#include "audit/interop/svg.h"

#include <cstdio>

namespace oracle::svg {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string text(double x, double y, const std::string& s, const char* anchor, int size, const char* extra) {
  return "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" font-size=\"" + std::to_string(size) +
         "\" text-anchor=\"" + anchor + "\"" + (*extra ? std::string(" ") + extra : "") + ">" + escape(s) +
         "</text>\n";
}

std::string line(double x0, double y0, double x1, double y1, const char* color, double width, const char* dash) {
  return "<line x1=\"" + fmt("%.1f", x0) + "\" y1=\"" + fmt("%.1f", y0) + "\" x2=\"" + fmt("%.1f", x1) + "\" y2=\"" +
         fmt("%.1f", y1) + "\" stroke=\"" + color + "\" stroke-width=\"" + fmt("%g", width) + "\"" +
         (*dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") + "/>\n";
}

}  // namespace oracle::svg
