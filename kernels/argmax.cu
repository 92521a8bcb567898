// Greedy argmax, deterministic version 1 — see kernels/argmax.cuh.
#include "kernels/argmax.cuh"

#include "kernels/lane_group.cuh"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kRowsPerBlock = kThreads / kGroup;

// Row r: x[r * stride + k] for k < n_r (n_r = counts ? counts[r] : stride).
__global__ void argmax_kernel(const float* x, int* out, const int* counts, int stride, int R) {
  const int lane = threadIdx.x % kGroup;
  const long long r = (long long)blockIdx.x * kRowsPerBlock + threadIdx.x / kGroup;
  const bool valid = r < R;  // invalid groups still join the shuffles
  const int n = valid ? (counts ? counts[r] : stride) : 0;
  int best = -1;
  float m = 0.0f;
  if (valid)
    for (int k = lane; k < n; k += kGroup) {
      float v = x[r * stride + k];
      if (v == v && (best < 0 || v > m)) {
        best = k;
        m = v;
      }
    }
  for (int w = kGroup / 2; w >= 1; w /= 2) {
    float om = __shfl_down_sync(kFullMask, m, w, kGroup);
    int ob = __shfl_down_sync(kFullMask, best, w, kGroup);
    bool take = ob >= 0 && (best < 0 || om > m || (om == m && ob < best));
    if (take) {
      m = om;
      best = ob;
    }
  }
  if (valid && lane == 0) out[r] = best;
}

}  // namespace

void argmax_rows(int* out, const float* x, int R, int n, cudaStream_t stream) {
  if (R > 0) launch(group_launch(R, kRowsPerBlock, kThreads, stream), argmax_kernel, x, out, nullptr, n, R);
}

void argmax_rows_counted(int* out, const float* x, const int* counts, int R, int stride, cudaStream_t stream) {
  if (R > 0) launch(group_launch(R, kRowsPerBlock, kThreads, stream), argmax_kernel, x, out, counts, stride, R);
}

}  // namespace oracle::kernels
