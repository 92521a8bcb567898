// Device sampler, version 1 — see kernels/sampler.cuh.
#include "kernels/sampler.cuh"

#include "kernels/argmax.cuh"
#include "faults/fault.h"
#include "kernels/softmax.cuh"
#include "numerics/numerics.h"
#include "numerics/philox.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;

int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

__global__ void temperature_kernel(float* x, long long n, float t) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) x[k] = oracle::num::div_rn(x[k], t);
}

// Does candidate a rank before candidate b? (p desc, NaN last, id asc; ids >= n are padding.)
__device__ __forceinline__ bool ranks_before(const float* p, int n, int a, int b) {
  if (a >= n) return false;
  if (b >= n) return true;
  const float xa = p[a], xb = p[b];
  const bool na = xa != xa, nb = xb != xb;
  if (na != nb) return nb;
  if (!na && xa != xb) return xa > xb;
  if (oracle::fault::active(oracle::fault::Fault::KERNEL_RANK_TIES_HIGHEST)) return a > b;  // FAULT: ties to the highest index
  return a < b;
}

// One block per row: bitonic sort of indices 0..n_pad-1 into rank order; row r
// ranks its first n_r = counts ? counts[r] : n values (the rest is padding).
__global__ void sort_by_value_kernel(const float* values, const int* counts, int n, int n_pad, int* order) {
  const float* p = values + (long long)blockIdx.x * n;
  int* idx = order + (long long)blockIdx.x * n_pad;
  const int n_row = counts ? counts[blockIdx.x] : n;
  for (int i = threadIdx.x; i < n_pad; i += blockDim.x) idx[i] = i;
  __syncthreads();
  for (int k = 2; k <= n_pad; k *= 2)
    for (int j = k / 2; j > 0; j /= 2) {
      for (int i = threadIdx.x; i < n_pad; i += blockDim.x) {
        const int o = i ^ j;
        if (o <= i) continue;
        const int a = idx[i], b = idx[o];
        const bool ascending = (i & k) == 0;
        if (ascending ? ranks_before(p, n_row, b, a) : ranks_before(p, n_row, a, b)) {
          idx[i] = b;
          idx[o] = a;
        }
      }
      __syncthreads();
    }
}

// u[r] = philox_uniform(seed, seq[r], pos[r], draw 0, purpose).
__global__ void uniform_kernel(uint64_t seed, const int* seq, const int* pos, uint32_t purpose, int R,
                               float* u) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r < R) u[r] = oracle::rng::philox_uniform(seed, (uint32_t)seq[r], (uint32_t)pos[r], 0, purpose);
}

// One thread per row: the inverse-CDF scan in rank order over the row's first
// n_r = counts ? counts[r] : n entries.
__global__ void draw_kernel(const float* probs, const int* counts, int stride, int n_pad, const int* order, int R,
                            const float* u, int* out) {
  using namespace oracle::num;
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const int n = counts ? counts[r] : stride;
  const float* p = probs + r * stride;
  const int* idx = order + r * n_pad;
  float total = 0.0f;
  for (int i = 0; i < n; i++) total = add_rn(total, p[idx[i]]);
  const float target = mul_rn(u[r], total);
  float run = 0.0f;
  int selected = -1;
  for (int i = 0; i < n; i++) {
    const float pi = p[idx[i]];
    if (pi > 0.0f) selected = idx[i];
    run = add_rn(run, pi);
    if (run > target) break;
  }
  out[r] = selected;
}

LaunchConfig config(unsigned grid, unsigned block, bool sync, cudaStream_t stream) {
  LaunchConfig cfg;
  cfg.grid = dim3(grid);
  cfg.block = dim3(block);
  cfg.sync = sync;
  cfg.stream = stream;
  return cfg;
}

}  // namespace

int rank_order_stride(int n) { return pow2_at_least(n); }

void rank_sort_rows(int* order, const float* probs, int R, int n, cudaStream_t stream) {
  rank_sort_rows_counted(order, probs, nullptr, R, n, stream);
}

void rank_sort_rows_counted(int* order, const float* values, const int* counts, int R, int stride,
                            cudaStream_t stream) {
  if (R > 0)
    launch(config(R, kThreads, true, stream), sort_by_value_kernel, values, counts, stride, pow2_at_least(stride),
           order);
}

void draw_rows(int* out, const float* probs, const int* order, const float* u, int R, int n,
               cudaStream_t stream) {
  draw_rows_counted(out, probs, nullptr, order, u, R, n, stream);
}

void draw_rows_counted(int* out, const float* probs, const int* counts, const int* order, const float* u, int R,
                       int stride, cudaStream_t stream) {
  if (R > 0)
    launch(config(blocks_for(R, kThreads), kThreads, false, stream), draw_kernel, probs, counts, stride,
           pow2_at_least(stride), order, R, u, out);
}

void philox_uniforms(float* u, const int* seq, const int* pos, int R, uint64_t seed, uint32_t purpose,
                     cudaStream_t stream) {
  if (R > 0)
    launch(config(blocks_for(R, kThreads), kThreads, false, stream), uniform_kernel, seed, seq, pos, purpose,
           R, u);
}

size_t sample_workspace_ints(int n, int R) {
  const int rows = R > 0 ? R : 1;
  return (size_t)pow2_at_least(n) * rows + (size_t)rows;  // rank orders, then the uniforms (as float bits)
}

void sample_rows(int* out, float* logits, const int* seq, const int* pos, int R, int n, float temperature,
                 uint64_t seed, int* workspace, cudaStream_t stream) {
  if (R <= 0) return;
  if (!(temperature > 0.0f)) {
    argmax_rows(out, logits, R, n, stream);
    return;
  }
  const long long total = (long long)n * R;
  int* order = workspace;
  float* u = reinterpret_cast<float*>(workspace + (size_t)pow2_at_least(n) * R);
  launch(config(blocks_for(total, kThreads), kThreads, false, stream), temperature_kernel, logits, total,
         temperature);
  softmax_rows(logits, nullptr, R, n, stream);
  rank_sort_rows(order, logits, R, n, stream);
  philox_uniforms(u, seq, pos, R, seed, oracle::rng::kPurposeSample, stream);
  draw_rows(out, logits, order, u, R, n, stream);
}

}  // namespace oracle::kernels
