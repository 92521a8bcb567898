// Row softmax, deterministic version 1 — see kernels/softmax.cuh.
#include "kernels/softmax.cuh"

#include "kernels/lane_group.cuh"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kRowsPerBlock = kThreads / kGroup;

// Row r reads x[r * stride + k] and writes out[r * stride + k] for k < n_r
// (n_r = counts ? counts[r] : stride); out may be x.
__global__ void softmax_kernel(float* out, const float* x, float* row_sum, const int* counts, int stride, int R) {
  using namespace oracle::num;
  const int lane = threadIdx.x % kGroup;
  const long long r = (long long)blockIdx.x * kRowsPerBlock + threadIdx.x / kGroup;
  const bool valid = r < R;  // invalid groups still join the shuffles
  const int n = valid ? (counts ? counts[r] : stride) : 0;
  const float* row = x + (valid ? r : 0) * stride;
  float* dst = out + (valid ? r : 0) * stride;
  float m = -inf_f32();
  for (int k = lane; k < n; k += kGroup)
    if (row[k] > m) m = row[k];
  m = group_max(m);
  const bool masked = !(m > -inf_f32());
  float acc = 0.0f;
  if (!masked)
    for (int k = lane; k < n; k += kGroup) {
      dst[k] = exp_canonical(sub_rn(row[k], m));
      acc = add_rn(acc, dst[k]);
    }
  const float s = group_tree_sum(acc);
  if (!valid) return;
  for (int k = lane; k < n; k += kGroup) dst[k] = masked ? 0.0f : div_rn(dst[k], s);
  if (row_sum && lane == 0) row_sum[r] = masked ? 0.0f : s;
}

}  // namespace

void softmax_rows(float* x, float* row_sum, int R, int n, cudaStream_t stream) {
  if (R > 0) launch(group_launch(R, kRowsPerBlock, kThreads, stream), softmax_kernel, x, x, row_sum, nullptr, n, R);
}

void softmax_rows_counted(float* out, const float* x, const int* counts, int R, int stride, cudaStream_t stream) {
  if (R > 0)
    launch(group_launch(R, kRowsPerBlock, kThreads, stream), softmax_kernel, out, x, nullptr, counts, stride, R);
}

}  // namespace oracle::kernels
