// RoPE, deterministic version 1 — see kernels/rope.cuh.
#include "kernels/rope.cuh"

#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void rope_kernel(float* q, float* k, const int* pos, const float* cos_table,
                            const float* sin_table, int T, int n_heads, int n_kv_heads, int head_dim) {
  using namespace oracle::num;
  const int half = head_dim / 2;
  const int heads = n_heads + n_kv_heads;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)T * heads * half) return;
  const int i = (int)(idx % half);
  const int head = (int)(idx / half % heads);
  const long long t = idx / half / heads;
  float* v = head < n_heads ? q + (t * n_heads + head) * head_dim
                            : k + (t * n_kv_heads + (head - n_heads)) * head_dim;
  const float c = cos_table[(long long)pos[t] * half + i];
  const float s = sin_table[(long long)pos[t] * half + i];
  const float x0 = v[2 * i], x1 = v[2 * i + 1];
  v[2 * i] = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
  v[2 * i + 1] = add_rn(mul_rn(x0, s), mul_rn(x1, c));
}

}  // namespace

void rope(float* q, float* k, const int* pos, const float* cos_table, const float* sin_table, int T,
          int n_heads, int n_kv_heads, int head_dim, cudaStream_t stream) {
  const long long n = (long long)T * (n_heads + n_kv_heads) * (head_dim / 2);
  if (n <= 0) return;
  LaunchConfig cfg;
  cfg.grid = dim3(blocks_for(n, kThreads));
  cfg.block = dim3(kThreads);
  cfg.stream = stream;
  launch(cfg, rope_kernel, q, k, pos, cos_table, sin_table, T, n_heads, n_kv_heads, head_dim);
}

}  // namespace oracle::kernels
