// Tensor comparison for `oracle diff` and `oracle compare` — see tensor_compare.h.
#include "audit/interop/tensor_compare.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace oracle {

Trace trace_recorder(std::vector<TraceEntry>& out) {
  Trace t;
  t.emit = [&out](const std::string& name, int pos, std::span<const float> v) {
    out.push_back({name, pos, std::vector<float>(v.begin(), v.end())});
  };
  return t;
}

// ---- ULP distance -----------------------------------------------------------------
static uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Maps float bits onto integers so that consecutive floats are consecutive
// integers and the order is the real-number order (-0 and +0 both -> 0).
static int64_t ordered(float x) {
  const uint32_t b = bits_of(x);
  const int64_t mag = b & 0x7fffffffu;
  return (b & 0x80000000u) ? -mag : mag;
}

uint64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return (std::isnan(a) && std::isnan(b)) ? 0 : std::numeric_limits<uint64_t>::max();
  const int64_t d = ordered(a) - ordered(b);
  return (uint64_t)(d < 0 ? -d : d);
}

// ---- one tensor ---------------------------------------------------------------------
TensorStats compare_tensor(std::span<const float> want, std::span<const float> got) {
  TensorStats s;
  double err2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < want.size(); i++) {
    const float w = want[i], g = got[i];
    if (bits_of(w) != bits_of(g) && s.bit_equal) s.bit_equal = false, s.first_diff = (int)i;
    const uint64_t u = ulp_distance(w, g);
    if (u > s.max_ulp) s.max_ulp = u;
    const double d = std::fabs((double)g - (double)w);
    if (std::isnan(d) && u != 0) s.max_abs = std::numeric_limits<double>::infinity();
    else if (d > s.max_abs) s.max_abs = d;
    if (std::fabs(w) > s.max_abs_want) s.max_abs_want = std::fabs(w);
    if (!std::isnan(d)) err2 += d * d;
    if (!std::isnan(w)) ref2 += (double)w * (double)w;
  }
  s.nmse = ref2 > 0.0 ? err2 / ref2 : (err2 > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
  return s;
}

// ---- two traces ------------------------------------------------------------------------
static std::string describe(const TraceEntry& e) {
  return e.name + " pos " + std::to_string(e.pos) + " width " + std::to_string(e.values.size());
}

TraceDiff compare_traces(const std::vector<TraceEntry>& want, const std::vector<TraceEntry>& got) {
  TraceDiff d;
  const size_t n = want.size() < got.size() ? want.size() : got.size();
  for (size_t i = 0; i < n; i++) {
    const TraceEntry &w = want[i], &g = got[i];
    if (w.name != g.name || w.pos != g.pos || w.values.size() != g.values.size()) {
      d.structure_error = "entry " + std::to_string(i) + ": reference " + describe(w) + ", backend " + describe(g);
      return d;
    }
    d.entries.push_back({i, w.name, w.pos, compare_tensor(w.values, g.values)});
    if (d.first_divergent < 0 && !d.entries.back().stats.bit_equal) d.first_divergent = (int)i;
  }
  if (want.size() != got.size())
    d.structure_error = "reference traced " + std::to_string(want.size()) + " tensors, backend " +
                        std::to_string(got.size());
  return d;
}

int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int layer = 0;
  size_t i = 4;
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; i++) layer = layer * 10 + (name[i] - '0');
  return layer;
}

}  // namespace oracle
