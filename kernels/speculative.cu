// Speculative verification, deterministic version 1 — see kernels/speculative.cuh.
#include "kernels/speculative.cuh"

#include "kernels/sampler.cuh"
#include "numerics/numerics.h"
#include "numerics/philox.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void residual_kernel(const float* p, const float* q, float* r, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float d = oracle::num::sub_rn(p[i], q[i]);
  r[i] = d > 0.0f ? d : 0.0f;
}

// u_res (k): resample uniforms at t_i; u_p (k+1): the same for rows i < k
// (fallback draw from p_i), the plain sample uniform for the bonus row k.
__global__ void spec_uniforms_kernel(uint64_t seed, int seq, int position, int k, float* u_res, float* u_p) {
  using namespace oracle::rng;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > k) return;
  const uint32_t t = (uint32_t)(position + i);
  if (i < k) u_res[i] = philox_uniform(seed, (uint32_t)seq, t, 0, kPurposeSpecResample);
  u_p[i] = philox_uniform(seed, (uint32_t)seq, t, 0, i < k ? kPurposeSpecResample : kPurposeSample);
}

// One thread: the accept chain in increasing i.
__global__ void spec_decide_kernel(const float* p, const float* q, const int* drafts, int k, int vocab,
                                   uint64_t seed, int seq, int position, const int* pick_res,
                                   const int* pick_p, int* out) {
  using namespace oracle::rng;
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int accepted = 0;
  for (int i = 0; i < k; i++) {
    const int x = drafts[i];
    const float u = philox_uniform(seed, (uint32_t)seq, (uint32_t)(position + i), 0, kPurposeSpecAccept);
    const float px = p[(long long)i * vocab + x], qx = q[(long long)i * vocab + x];
    if (oracle::num::mul_rn(u, qx) < px) {
      out[1 + accepted++] = x;
      continue;
    }
    out[1 + accepted] = pick_res[i] >= 0 ? pick_res[i] : pick_p[i];
    out[0] = accepted;
    return;
  }
  out[1 + accepted] = pick_p[k];
  out[0] = accepted;
}

}  // namespace

size_t speculative_workspace_floats(int k, int vocab) { return (size_t)k * vocab + (size_t)(2 * k + 1); }

size_t speculative_workspace_ints(int k, int vocab) {
  return (size_t)(2 * k + 1) * rank_order_stride(vocab) + (size_t)(2 * k + 1);
}

void speculative_verify(int* out, const float* p, const float* q, const int* drafts, int k, int vocab, uint64_t seed,
                        int seq, int position, float* workspace_f, int* workspace_i, cudaStream_t stream) {
  const size_t stride = (size_t)rank_order_stride(vocab);
  float* r = workspace_f;                       // (k, vocab) residuals
  float* u_res = r + (size_t)k * vocab;         // (k)
  float* u_p = u_res + k;                       // (k + 1)
  int* order_p = workspace_i;                   // (k + 1, stride)
  int* order_r = order_p + (size_t)(k + 1) * stride;  // (k, stride)
  int* pick_p = order_r + (size_t)k * stride;   // (k + 1)
  int* pick_res = pick_p + (k + 1);             // (k)
  if (k > 0) launch(flat_launch((long long)k * vocab, kThreads, stream), residual_kernel, p, q, r, (long long)k * vocab);
  launch(flat_launch(k + 1, kThreads, stream), spec_uniforms_kernel, seed, seq, position, k, u_res, u_p);
  rank_sort_rows(order_p, p, k + 1, vocab, stream);
  draw_rows(pick_p, p, order_p, u_p, k + 1, vocab, stream);
  rank_sort_rows(order_r, r, k, vocab, stream);
  draw_rows(pick_res, r, order_r, u_res, k, vocab, stream);
  launch(flat_launch(1, kThreads, stream), spec_decide_kernel, p, q, drafts, k, vocab, seed, seq, position,
         (const int*)pick_res, (const int*)pick_p, out);
}

}  // namespace oracle::kernels
