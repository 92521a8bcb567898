// Row softmax, deterministic version 1 — see kernels/softmax.cuh.
#include "kernels/softmax.cuh"

#include "kernels/lane_group.cuh"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kRowsPerBlock = kThreads / kGroup;

__global__ void softmax_kernel(float* x, float* row_sum, int n, int R) {
  using namespace oracle::num;
  const int lane = threadIdx.x % kGroup;
  const long long r = (long long)blockIdx.x * kRowsPerBlock + threadIdx.x / kGroup;
  const bool valid = r < R;  // invalid groups still join the shuffles
  float* row = x + (valid ? r : 0) * n;
  float m = -inf_f32();
  if (valid)
    for (int k = lane; k < n; k += kGroup)
      if (row[k] > m) m = row[k];
  m = group_max(m);
  const bool masked = !(m > -inf_f32());
  float acc = 0.0f;
  if (valid && !masked)
    for (int k = lane; k < n; k += kGroup) {
      row[k] = exp_canonical(sub_rn(row[k], m));
      acc = add_rn(acc, row[k]);
    }
  const float s = group_tree_sum(acc);
  if (!valid) return;
  for (int k = lane; k < n; k += kGroup) row[k] = masked ? 0.0f : div_rn(row[k], s);
  if (row_sum && lane == 0) row_sum[r] = masked ? 0.0f : s;
}

}  // namespace

void softmax_rows(float* x, float* row_sum, int R, int n, cudaStream_t stream) {
  if (R > 0) launch(group_launch(R, kRowsPerBlock, kThreads, stream), softmax_kernel, x, row_sum, n, R);
}

}  // namespace oracle::kernels
