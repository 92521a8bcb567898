#pragma once
// Tensor comparison for `oracle diff` and `oracle compare` (docs/diff.md,
// docs/interop.md): two pipelines each record their named intermediates
// (Trace) in execution order; this compares them entry by entry.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "reference/compute/forward.h"

namespace oracle {

// One traced tensor: op name ("blk.1.attn_out"), position, values (width).
struct TraceEntry {
  std::string name;
  int pos = 0;
  std::vector<float> values;  // (width)
};

// A Trace that appends every emitted tensor to `out`.
Trace trace_recorder(std::vector<TraceEntry>& out);

// Distance between two floats as ordered integers: the number of representable
// floats between them (+0 and -0 are 0 apart; NaN against anything else: UINT64_MAX).
uint64_t ulp_distance(float a, float b);

// How far `got` is from `want` (same length).
struct TensorStats {
  bool bit_equal = true;    // every element has the same bit pattern
  int first_diff = -1;      // index of the first element whose bits differ (-1: none)
  double max_abs = 0.0;     // max |got - want| (inf if a NaN differs)
  uint64_t max_ulp = 0;     // max ulp_distance
  double nmse = 0.0;        // sum (got - want)^2 / sum want^2 (0/0 = 0)
  float max_abs_want = 0;   // max |want| (for relative bounds)
};
TensorStats compare_tensor(std::span<const float> want, std::span<const float> got);

// One op at one position in the comparison.
struct EntryDiff {
  size_t index = 0;  // position in execution order
  std::string name;
  int pos = 0;
  TensorStats stats;
};

// The comparison of two traces. `structure_error` is non-empty when the traces
// do not line up (different names, positions, widths or lengths): then the
// entries are compared only up to the first such mismatch.
struct TraceDiff {
  std::vector<EntryDiff> entries;  // one per compared entry, execution order
  std::string structure_error;
  int first_divergent = -1;        // index into entries of the first entry that is not bit-equal
};
TraceDiff compare_traces(const std::vector<TraceEntry>& want, const std::vector<TraceEntry>& got);

// "blk.12.attn_out" -> 12; other names -> -1.
int layer_of(const std::string& name);

}  // namespace oracle
