// Log-probabilities, version 1 — see kernels/logprobs.cuh.
#include "kernels/logprobs.cuh"

#include "faults/fault.h"
#include "kernels/lane_group.cuh"
#include "kernels/sampler.cuh"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kRowsPerBlock = kThreads / kGroup;

// The group's first maximum (argmax_lowest's value): lanes hold (m, best), best -1 = none.
__device__ __forceinline__ float group_first_max(float m, int best) {
  for (int w = kGroup / 2; w >= 1; w /= 2) {
    const float om = __shfl_down_sync(kFullMask, m, w, kGroup);
    const int ob = __shfl_down_sync(kFullMask, best, w, kGroup);
    if (ob >= 0 && (best < 0 || om > m || (om == m && ob < best))) {
      m = om;
      best = ob;
    }
  }
  m = __shfl_sync(kFullMask, m, 0, kGroup);
  best = __shfl_sync(kFullMask, best, 0, kGroup);
  return best < 0 ? -oracle::num::inf_f32() : m;
}

__global__ void log_softmax_kernel(float* out, const float* x, const int* counts, int stride, int R) {
  using namespace oracle::num;
  const int lane = threadIdx.x % kGroup;
  const long long r = (long long)blockIdx.x * kRowsPerBlock + threadIdx.x / kGroup;
  const bool valid = r < R;  // invalid groups still join the shuffles
  const int n = valid ? (counts ? counts[r] : stride) : 0;
  const float* row = x + (valid ? r : 0) * stride;
  float* dst = out + (valid ? r : 0) * stride;
  int best = -1;
  float m = 0.0f;
  for (int k = lane; k < n; k += kGroup)
    if (row[k] == row[k] && (best < 0 || row[k] > m)) {
      best = k;
      m = row[k];
    }
  m = group_first_max(m, best);
  const bool masked = !(m > -inf_f32());
  float acc = 0.0f;
  if (!masked)
    for (int k = lane; k < n; k += kGroup) acc = add_rn(acc, exp_canonical(sub_rn(row[k], m)));
  float s = group_tree_sum(acc);
  if (oracle::fault::active(oracle::fault::Fault::KERNEL_LOGPROB_SUM_SEQUENTIAL) && !masked) {
    s = 0.0f;  // FAULT: one sequential sum instead of the 16-lane order
    for (int k = 0; k < n; k++) s = add_rn(s, exp_canonical(sub_rn(row[k], m)));
  }
  if (!valid) return;
  const float log_s = log_canonical(s);
  for (int k = lane; k < n; k += kGroup) dst[k] = masked ? -inf_f32() : sub_rn(sub_rn(row[k], m), log_s);
}

__global__ void rank_kernel(int* rank, const int* order, const int* counts, const int* target, int R, int stride,
                            int order_stride) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const int n = counts ? counts[r] : stride;
  const int* ord = order + r * order_stride;
  int found = 0;
  for (int i = 0; i < n && target[r] >= 0; i++)
    if (ord[i] == target[r]) {
      found = i + 1;
      break;
    }
  rank[r] = found;
}

}  // namespace

void log_softmax_rows_counted(float* out, const float* x, const int* counts, int R, int stride, cudaStream_t stream) {
  if (R > 0)
    launch(group_launch(R, kRowsPerBlock, kThreads, stream), log_softmax_kernel, out, x, counts, stride, R);
}

void rank_position_rows(int* rank, const int* order, const int* counts, const int* target, int R, int stride,
                        cudaStream_t stream) {
  if (R > 0)
    launch(flat_launch(R, 128, stream), rank_kernel, rank, order, counts, target, R, stride,
           rank_order_stride(stride));
}

}  // namespace oracle::kernels
