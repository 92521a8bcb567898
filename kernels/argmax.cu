// Greedy argmax, deterministic version 1 — see kernels/argmax.cuh.
#include "kernels/argmax.cuh"

#include "kernels/lane_group.cuh"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kRowsPerBlock = kThreads / kGroup;

__global__ void argmax_kernel(const float* x, int* out, int n, int R) {
  const int lane = threadIdx.x % kGroup;
  const long long r = (long long)blockIdx.x * kRowsPerBlock + threadIdx.x / kGroup;
  const bool valid = r < R;  // invalid groups still join the shuffles
  int best = -1;
  float m = 0.0f;
  if (valid)
    for (int k = lane; k < n; k += kGroup) {
      float v = x[r * n + k];
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
  if (R > 0) launch(group_launch(R, kRowsPerBlock, kThreads, stream), argmax_kernel, x, out, n, R);
}

}  // namespace oracle::kernels
