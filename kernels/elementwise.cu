// SwiGLU and residual add — see kernels/elementwise.cuh.
#include "kernels/elementwise.cuh"

#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void swiglu_kernel(const float* gate, const float* up, float* h, long long n) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) h[k] = oracle::num::mul_rn(oracle::num::silu_canonical(gate[k]), up[k]);
}

__global__ void residual_kernel(float* x, const float* y, long long n) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) x[k] = oracle::num::add_rn(x[k], y[k]);
}

}  // namespace

void swiglu(const float* gate, const float* up, float* h, long long n, cudaStream_t stream) {
  if (n > 0) launch(flat_launch(n, kThreads, stream), swiglu_kernel, gate, up, h, n);
}

void residual_add(float* x, const float* y, long long n, cudaStream_t stream) {
  if (n > 0) launch(flat_launch(n, kThreads, stream), residual_kernel, x, y, n);
}

}  // namespace oracle::kernels
