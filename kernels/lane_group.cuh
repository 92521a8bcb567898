#pragma once
// ============================================================================
// Device helpers for the canonical 16-lane reduction (numerics/numerics.h,
// dot_canonical / sum_fixed_order): a group of 16 consecutive threads, thread
// = lane l, lane l accumulates elements k ≡ l (mod 16) in increasing k from
// +0.0f (a dot: one __fmaf_rn per element, numerics v2); the lanes are combined by __shfl_down_sync with offsets 8, 4, 2, 1
// (lane i += lane i + w), which is exactly lane_tree_reduce. Lane 0 holds the
// result. Every thread of the warp must call these (full-mask shuffles).
// ============================================================================
#include "faults/fault.h"
#include "kernels/launch.h"
#include "numerics/numerics.h"

namespace oracle::kernels {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kGroup = oracle::num::kLanes;  // 16 threads per canonical reduction

// This lane's partial of dot_canonical(a, b, n).
__device__ __forceinline__ float lane_dot_partial(const float* a, const float* b, int n, int lane) {
  float acc = 0.0f;
  for (int k = lane; k < n; k += kGroup) acc = oracle::num::fma_rn(a[k], b[k], acc);
  return acc;
}

// Halving tree over the 16 lanes of the group; the result is broadcast to all 16.
__device__ __forceinline__ float group_tree_sum(float v) {
  if (oracle::fault::active(oracle::fault::Fault::KERNEL_TREE_ORDER)) {
    for (int w = 1; w <= kGroup / 2; w *= 2)  // FAULT: tree combined in the reverse order (1, 2, 4, 8)
      v = oracle::num::add_rn(v, __shfl_down_sync(kFullMask, v, w, kGroup));
  } else {
    for (int w = kGroup / 2; w >= 1; w /= 2) v = oracle::num::add_rn(v, __shfl_down_sync(kFullMask, v, w, kGroup));
  }
  return __shfl_sync(kFullMask, v, 0, kGroup);
}

// Maximum over the group's lane maxima (NaN-free: lanes start at -inf and use `>`).
// Only the value matters to callers; it equals max_fixed_order's up to the sign of zero.
__device__ __forceinline__ float group_max(float m) {
  for (int w = kGroup / 2; w >= 1; w /= 2) {
    float o = __shfl_down_sync(kFullMask, m, w, kGroup);
    if (o > m) m = o;
  }
  return __shfl_sync(kFullMask, m, 0, kGroup);
}

}  // namespace oracle::kernels
