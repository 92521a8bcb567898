#pragma once
// `oracle diff`'s tensor comparison lives in audit/interop/tensor_compare.h (shared
// with `oracle compare`); these names keep the tools' spelling.
#include "audit/interop/tensor_compare.h"

namespace oracle::tools {
using oracle::compare_tensor;
using oracle::compare_traces;
using oracle::EntryDiff;
using oracle::layer_of;
using oracle::TensorStats;
using oracle::trace_recorder;
using oracle::TraceDiff;
using oracle::TraceEntry;
using oracle::ulp_distance;
}  // namespace oracle::tools
