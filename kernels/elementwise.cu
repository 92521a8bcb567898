// SwiGLU, residual add and bias add — see kernels/elementwise.cuh.
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

// y[r * width + k] += b[k] for every row r.
__global__ void bias_rows_kernel(float* y, const float* b, int width, long long n) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) y[k] = oracle::num::add_rn(y[k], b[k % width]);
}

}  // namespace

void add_bias_rows(float* y, const float* b, int T, int n, cudaStream_t stream) {
  const long long total = (long long)T * n;
  if (total > 0) launch(flat_launch(total, kThreads, stream), bias_rows_kernel, y, b, n, total);
}

void swiglu(float* h, const float* gate, const float* up, long long n, cudaStream_t stream) {
  if (n > 0) launch(flat_launch(n, kThreads, stream), swiglu_kernel, gate, up, h, n);
}

void residual_add(float* x, const float* y, long long n, cudaStream_t stream) {
  if (n > 0) launch(flat_launch(n, kThreads, stream), residual_kernel, x, y, n);
}

}  // namespace oracle::kernels
