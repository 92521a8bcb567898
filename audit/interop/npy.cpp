// NumPy .npy reader (npy.h).
#include "audit/interop/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "base/errors.h"
#include "numerics/numerics.h"

namespace oracle {

namespace {

// The value text after 'key': in the header dict, up to the next top-level ',' or '}'.
std::string dict_value(const std::string& h, const std::string& key, const std::string& path) {
  const size_t k = h.find("'" + key + "'");
  require_input(k != std::string::npos, path, "npy header." + key, "missing");
  size_t i = h.find(':', k);
  require_input(i != std::string::npos, path, "npy header." + key, "malformed");
  i++;
  int depth = 0;
  size_t j = i;
  for (; j < h.size(); j++) {
    if (h[j] == '(') depth++;
    if (h[j] == ')') depth--;
    if (depth == 0 && (h[j] == ',' || h[j] == '}')) break;
    if (depth < 0) break;
  }
  std::string v = h.substr(i, j - i + (depth == 0 && j < h.size() && h[j] == ')' ? 1 : 0));
  while (!v.empty() && v.front() == ' ') v.erase(v.begin());
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

std::vector<int64_t> parse_shape(const std::string& v, const std::string& path) {
  require_input(v.size() >= 2 && v.front() == '(' && v.back() == ')', path, "npy header.shape", "expected a tuple");
  std::vector<int64_t> shape;
  int64_t cur = -1;
  for (size_t i = 1; i + 1 < v.size(); i++) {
    const char c = v[i];
    if (c >= '0' && c <= '9') {
      cur = (cur < 0 ? 0 : cur) * 10 + (c - '0');
      require_input(cur <= (int64_t(1) << 40), path, "npy header.shape", "dimension too large");
    } else if (c == ',') {
      require_input(cur >= 0, path, "npy header.shape", "empty dimension");
      shape.push_back(cur);
      cur = -1;
    } else {
      require_input(c == ' ' || c == 'L', path, "npy header.shape", "unexpected character");
    }
  }
  if (cur >= 0) shape.push_back(cur);
  require_input(shape.size() <= 8, path, "npy header.shape", "more than 8 dimensions");
  return shape;
}

int descr_bytes(const std::string& d) {
  if (d == "<f4" || d == "<i4" || d == "<u4") return 4;
  if (d == "<f8" || d == "<i8") return 8;
  if (d == "<f2") return 2;
  return 0;
}

double element(const std::string& d, const char* p) {
  if (d == "<f4") { float v; std::memcpy(&v, p, 4); return v; }
  if (d == "<f8") { double v; std::memcpy(&v, p, 8); return v; }
  if (d == "<f2") { uint16_t v; std::memcpy(&v, p, 2); return num::fp16_to_f32(v); }
  if (d == "<i4") { int32_t v; std::memcpy(&v, p, 4); return v; }
  if (d == "<u4") { uint32_t v; std::memcpy(&v, p, 4); return v; }
  int64_t v;
  std::memcpy(&v, p, 8);
  return (double)v;
}

}  // namespace

NpyArray parse_npy(const std::string& b, const std::string& path) {
  require_input(b.size() >= 10 && b.compare(0, 6, "\x93NUMPY") == 0, path, "magic", "not a .npy file");
  const int major = (unsigned char)b[6];
  require_input(major >= 1 && major <= 3, path, "npy version", "unsupported version " + std::to_string(major));
  uint32_t hlen = 0;
  size_t at = 0;
  if (major == 1) {
    hlen = (uint8_t)b[8] | ((uint32_t)(uint8_t)b[9] << 8);
    at = 10;
  } else {
    require_input(b.size() >= 12, path, "npy header", "truncated");
    std::memcpy(&hlen, b.data() + 8, 4);
    at = 12;
  }
  require_input(hlen <= b.size() - at, path, "npy header", "header longer than the file");
  const std::string h = b.substr(at, hlen);
  NpyArray a;
  std::string descr = dict_value(h, "descr", path);
  require_input(descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"'), path, "npy header.descr",
                "expected a string");
  a.descr = descr.substr(1, descr.size() - 2);
  const int eb = descr_bytes(a.descr);
  require_input(eb > 0, path, "npy header.descr", "unsupported dtype '" + a.descr + "' (<f2 <f4 <f8 <i4 <i8 <u4)");
  require_input(dict_value(h, "fortran_order", path) == "False", path, "npy header.fortran_order",
                "Fortran-order arrays are not supported");
  a.shape = parse_shape(dict_value(h, "shape", path), path);
  uint64_t n = 1;
  for (int64_t d : a.shape) {
    require_input(d == 0 || n <= b.size() / (uint64_t)d + 1, path, "npy header.shape", "larger than the file");
    n *= (uint64_t)d;
  }
  const size_t data = at + hlen;
  require_input(b.size() - data == n * (uint64_t)eb, path, "npy data",
                "file holds " + std::to_string(b.size() - data) + " data bytes, the shape needs " +
                    std::to_string(n * (uint64_t)eb));
  a.values.resize(n);
  for (uint64_t i = 0; i < n; i++) a.values[i] = element(a.descr, b.data() + data + i * eb);
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "file", "cannot open");
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(b, path);
}

}  // namespace oracle
