// RMSNorm, deterministic version 1 — see kernels/rmsnorm.cuh.
#include "kernels/rmsnorm.cuh"

#include "faults/fault.h"
#include "kernels/lane_group.cuh"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kTokensPerBlock = kThreads / kGroup;

__global__ void rmsnorm_kernel(const float* x, const float* w, float* out, int n, int T, float eps) {
  using namespace oracle::num;
  const int lane = threadIdx.x % kGroup;
  const long long t = (long long)blockIdx.x * kTokensPerBlock + threadIdx.x / kGroup;
  const bool valid = t < T;  // invalid groups still join the shuffles
  const float* xt = x + (valid ? t : 0) * n;
  float ss = group_tree_sum(valid ? lane_dot_partial(xt, xt, n, lane) : 0.0f);
  if (!valid) return;
  float ms = div_rn(ss, (float)n);
  float r = div_rn(1.0f, sqrt_rn(add_rn(ms, eps)));
  for (int k = lane; k < n; k += kGroup) {
    float y = mul_rn(mul_rn(xt[k], r), w[k]);
    if (oracle::fault::active(oracle::fault::Fault::KERNEL_RMSNORM_LAST_ULP) && k == n - 1)
      y = f32_from_bits(f32_bits(y) + 1);  // FAULT: the row's last output one ULP off
    out[t * n + k] = y;
  }
}

// ggml profile: one thread per token, float64 sum of float32 squares in increasing k.
__global__ void rmsnorm_ggml_kernel(const float* x, const float* w, float* out, int n, int T, float eps) {
  using namespace oracle::num;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const float* xt = x + t * n;
  double sum = 0.0;
  for (int k = 0; k < n; k++) sum += (double)mul_rn(xt[k], xt[k]);
  const float mean = (float)(sum / (double)n);
  const float r = div_rn(1.0f, sqrt_rn(add_rn(mean, eps)));
  for (int k = 0; k < n; k++) out[t * n + k] = mul_rn(mul_rn(xt[k], r), w[k]);
}

}  // namespace

void rmsnorm_ggml(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t stream) {
  if (T > 0) launch(flat_launch(T, kThreads, stream), rmsnorm_ggml_kernel, x, w, out, n, T, eps);
}

void rmsnorm(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t stream) {
  if (T > 0) launch(group_launch(T, kTokensPerBlock, kThreads, stream), rmsnorm_kernel, x, w, out, n, T, eps);
}

}  // namespace oracle::kernels
