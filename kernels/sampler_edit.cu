// The sampler chain's logit edits, version 1 — see kernels/sampler_edit.cuh.
#include "kernels/sampler_edit.cuh"

#include "faults/fault.h"
#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;

using oracle::fault::Fault;

// (row, candidate) of this thread, or false when it has none.
__device__ __forceinline__ bool candidate_of(const int* counts, int R, int stride, long long* r, int* k) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)R * stride) return false;
  *r = t / stride;
  *k = (int)(t % stride);
  return *k < counts[*r];
}

__global__ void logit_bias_kernel(float* logits, const int* ids, const int* counts, const int* bias_ids,
                                  const float* bias, int n_bias, int R, int stride) {
  long long r;
  int k;
  if (!candidate_of(counts, R, stride, &r, &k)) return;
  const int id = ids[r * stride + k];
  float x = logits[r * stride + k];
  const int n = oracle::fault::active(Fault::KERNEL_BIAS_SKIPS_LAST) ? n_bias - 1 : n_bias;  // FAULT: last entry lost
  for (int j = 0; j < n; j++)
    if (bias_ids[j] == id) x = oracle::num::add_rn(x, bias[j]);
  logits[r * stride + k] = x;
}

__device__ __forceinline__ bool contains_sorted(const int* v, int n, int id) {
  int lo = 0, hi = n;  // first index with v[i] >= id
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (v[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo] == id;
}

__global__ void banned_mark_kernel(int* keep, const int* ids, const int* counts, const int* banned, int n_banned,
                                   int R, int stride) {
  long long r;
  int k;
  if (!candidate_of(counts, R, stride, &r, &k)) return;
  const int n = oracle::fault::active(Fault::KERNEL_BANNED_SKIPS_LAST) ? n_banned - 1 : n_banned;  // FAULT
  keep[r * stride + k] = contains_sorted(banned, n, ids[r * stride + k]) ? 0 : 1;
}

// 1 thread / row: seen[r, id] = occurrences of id in the row's window (seen zeroed before).
__global__ void penalty_count_kernel(int* seen, const int* histories, const int* offsets, int window, int R,
                                     int vocab) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const int begin = offsets[r], end = offsets[r + 1], len = end - begin;
  int first = (window < 0 || window >= len) ? begin : end - window;
  if (oracle::fault::active(Fault::KERNEL_PENALTY_WINDOW_SHORT) && first < end) first++;  // FAULT: one token short
  for (int i = first; i < end; i++) seen[r * vocab + histories[i]]++;
}

__global__ void penalties_kernel(float* logits, const int* seen, const int* ids, const int* counts, float rep,
                                 float freq, float pres, int R, int stride) {
  using namespace oracle::num;
  long long r;
  int k;
  if (!candidate_of(counts, R, stride, &r, &k)) return;
  const int cnt = seen[r * stride + ids[r * stride + k]];
  if (cnt <= 0) return;
  float x = logits[r * stride + k];
  x = x <= 0.0f ? mul_rn(x, rep) : div_rn(x, rep);
  logits[r * stride + k] = sub_rn(x, add_rn(mul_rn((float)cnt, freq), pres));
}

__global__ void temperature_rows_kernel(float* logits, const int* counts, float t, int R, int stride) {
  long long r;
  int k;
  if (!candidate_of(counts, R, stride, &r, &k)) return;
  float& x = logits[r * stride + k];
  if (oracle::fault::active(Fault::KERNEL_TEMPERATURE_RECIPROCAL))
    x = oracle::num::mul_rn(x, oracle::num::div_rn(1.0f, t));  // FAULT: x * (1/T), two roundings
  else
    x = oracle::num::div_rn(x, t);
}

}  // namespace

void logit_bias_rows(float* logits, const int* ids, const int* counts, const int* bias_ids, const float* bias,
                     int n_bias, int R, int stride, cudaStream_t stream) {
  if (R > 0 && n_bias > 0)
    launch(flat_launch((long long)R * stride, kThreads, stream), logit_bias_kernel, logits, ids, counts, bias_ids,
           bias, n_bias, R, stride);
}

void banned_mark_rows(int* keep, const int* ids, const int* counts, const int* banned, int n_banned, int R,
                      int stride, cudaStream_t stream) {
  if (R > 0)
    launch(flat_launch((long long)R * stride, kThreads, stream), banned_mark_kernel, keep, ids, counts, banned,
           n_banned, R, stride);
}

void penalties_rows(float* logits, int* seen, const int* ids, const int* counts, const int* histories,
                    const int* offsets, int window, float rep, float freq, float pres, int R, int stride,
                    cudaStream_t stream) {
  if (R <= 0 || window == 0) return;
  check_cuda(cudaMemsetAsync(seen, 0, (size_t)R * stride * sizeof(int), stream), "penalties memset");
  launch(flat_launch(R, kThreads, stream), penalty_count_kernel, seen, histories, offsets, window, R, stride);
  launch(flat_launch((long long)R * stride, kThreads, stream), penalties_kernel, logits, seen, ids, counts, rep, freq,
         pres, R, stride);
}

void temperature_rows(float* logits, const int* counts, float t, int R, int stride, cudaStream_t stream) {
  if (R > 0 && t > 0.0f)
    launch(flat_launch((long long)R * stride, kThreads, stream), temperature_rows_kernel, logits, counts, t, R,
           stride);
}

}  // namespace oracle::kernels
