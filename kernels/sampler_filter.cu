// The sampler chain's candidates and filters, version 1 — see kernels/sampler_filter.cuh.
#include "kernels/sampler_filter.cuh"

#include "faults/fault.h"
#include "kernels/sampler.cuh"
#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kCompactThreads = 256;  // compaction version 2: threads per row = entries per chunk

using oracle::fault::Fault;

__global__ void init_kernel(int* ids, float* x, int* counts, const float* logits, int R, int n) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)R * n) return;
  ids[t] = (int)(t % n);
  x[t] = logits[t];
  if (t % n == 0) counts[t / n] = n;
}

__global__ void compact_kernel(int* ids, float* x, int* counts, const int* keep, int R, int stride) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  int* id = ids + r * stride;
  float* v = x + r * stride;
  const int* kp = keep + r * stride;
  int w = 0;
  for (int i = 0; i < counts[r]; i++)
    if (kp[i]) {
      id[w] = id[i];
      v[w] = v[i];
      w++;
    }
  if (oracle::fault::active(Fault::KERNEL_COMPACT_DROPS_LAST) && w > 1) w--;  // FAULT: the last survivor is lost
  counts[r] = w;
}

// Version 2: one block of kCompactThreads per row, over chunks of kCompactThreads entries.
// Each thread reads its entry and flag; a warp ballot + popc gives its slot among the
// warp's survivors, the warp totals (shared) its warp's offset in the chunk. Every read
// of a chunk happens before the barrier, every write after it and at or before the
// chunk's first index, so the erase runs in place as version 1's.
__global__ void compact_block_kernel(int* ids, float* x, int* counts, const int* keep, int stride) {
  __shared__ int warp_total[kCompactThreads / 32];
  const long long r = blockIdx.x;
  int* id = ids + r * stride;
  float* v = x + r * stride;
  const int* kp = keep + r * stride;
  const int n = counts[r], lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
  int base = 0;  // survivors of the chunks before this one
  for (int c0 = 0; c0 < n; c0 += kCompactThreads) {
    const int i = c0 + (int)threadIdx.x;
    const bool alive = i < n && kp[i] != 0;
    const int my_id = alive ? id[i] : 0;
    const float my_v = alive ? v[i] : 0.0f;
    const unsigned mask = __ballot_sync(0xffffffffu, alive);
    if (lane == 0) warp_total[warp] = __popc(mask);
    __syncthreads();
    int slot = base + __popc(mask & ((1u << lane) - 1u)), chunk_total = 0;
    for (int w = 0; w < kCompactThreads / 32; w++) {
      const bool before = oracle::fault::active(Fault::KERNEL_COMPACT_BLOCK_WARP_OFFSET) ? w + 1 < warp : w < warp;  // FAULT
      slot += before ? warp_total[w] : 0;
      chunk_total += warp_total[w];
    }
    if (alive) id[slot] = my_id, v[slot] = my_v;
    base += chunk_total;
    __syncthreads();  // warp_total is rewritten by the next chunk
  }
  if (threadIdx.x == 0) counts[r] = base;
}

// 1 thread / (row, rank).
__global__ void top_k_kernel(int* keep, const float* x, const int* order, const int* counts, int k, bool hf, int R,
                             int stride, int order_stride) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)R * stride) return;
  const long long r = t / stride;
  const int rank = (int)(t % stride), n = counts[r];
  if (rank >= n) return;
  const int* ord = order + r * order_stride;
  const float* v = x + r * stride;
  const int idx = ord[rank];
  if (k >= n) {
    keep[r * stride + idx] = 1;
    return;
  }
  const float kth = v[ord[k - 1]];
  const bool tie = oracle::fault::active(Fault::KERNEL_TOP_K_TIES_DROPPED) ? v[idx] > kth : v[idx] >= kth;  // FAULT
  keep[r * stride + idx] = rank < k || (hf && tie);
}

// Row r of a filter kernel: its candidate count, rank order and keep flags.
struct FilterRow {
  int n;
  const int* ord;  // (n) candidate indices by rank
  int* kp;         // (n) keep flags
};
__device__ __forceinline__ FilterRow filter_row(int* keep, const int* order, const int* counts, long long r,
                                                int stride, int order_stride) {
  return {counts[r], order + r * order_stride, keep + r * stride};
}

// keep[order[i]] = 1 for ranks i < m.
__device__ __forceinline__ void keep_top(int* keep, const int* ord, int n, int m) {
  for (int i = 0; i < m && i < n; i++) keep[ord[i]] = 1;
}

__global__ void top_p_kernel(int* keep, const float* probs, const int* order, const int* counts, float p,
                             int min_keep, bool hf, int R, int stride, int order_stride) {
  using namespace oracle::num;
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const auto [n, ord, kp] = filter_row(keep, order, counts, r, stride, order_stride);
  const float* pr = probs + r * stride;
  for (int i = 0; i < n; i++) kp[i] = 0;
  float cum = 0.0f;
  if (hf) {
    const float threshold = sub_rn(1.0f, p);
    for (int i = n - 1; i >= 0; i--) {
      cum = add_rn(cum, pr[ord[i]]);
      kp[ord[i]] = !(cum <= threshold);
    }
    keep_top(kp, ord, n, min_keep);
    return;
  }
  int last = n;
  for (int i = 0; i < n; i++) {
    cum = add_rn(cum, pr[ord[i]]);
    if (cum >= p && i + 1 >= min_keep) {
      last = oracle::fault::active(Fault::KERNEL_TOP_P_KEEPS_EXTRA) ? i + 2 : i + 1;  // FAULT: one rank too many
      break;
    }
  }
  keep_top(kp, ord, n, last);
}

__global__ void min_p_kernel(int* keep, const float* values, const int* order, const int* counts, float min_p,
                             int min_keep, bool hf, int R, int stride, int order_stride) {
  using namespace oracle::num;
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const auto [n, ord, kp] = filter_row(keep, order, counts, r, stride, order_stride);
  const float* v = values + r * stride;
  const bool first_as_max = oracle::fault::active(Fault::KERNEL_MIN_P_FIRST_AS_MAX);  // FAULT: max = candidate 0
  float m = hf ? 0.0f : -inf_f32();
  for (int i = 0; i < n; i++) m = (first_as_max ? i == 0 : v[i] > m) ? v[i] : m;
  const float threshold = hf ? mul_rn(min_p, m) : add_rn(m, log_canonical(min_p));
  for (int i = 0; i < n; i++) kp[i] = hf ? !(v[i] < threshold) : v[i] >= threshold;
  keep_top(kp, ord, n, hf ? min_keep : (min_keep > 1 ? min_keep : 1));
}

// One thread per (row, id): the id's candidate by binary search over the increasing ids.
__global__ void scatter_kernel(float* out, const int* ids, const float* probs, const int* counts,
                               const int* selected, int R, int stride, int vocab) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)R * vocab) return;
  const int r = (int)(idx / vocab), v = (int)(idx % vocab), n = counts[r];
  const int* row = ids + (size_t)r * stride;
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (row[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  float value = 0.0f;
  if (selected && oracle::fault::active(oracle::fault::Fault::KERNEL_SCATTER_INDEX_AS_ID))  // FAULT
    value = v == selected[r] ? 1.0f : 0.0f;  // the candidate index taken for the id
  else if (lo < n && row[lo] == v)
    value = selected ? (lo == selected[r] ? 1.0f : 0.0f) : probs[(size_t)r * stride + lo];
  out[idx] = value;
}

}  // namespace

void candidates_scatter(float* out, const int* ids, const float* probs, const int* counts, const int* selected,
                        int R, int stride, int vocab, cudaStream_t stream) {
  if (R > 0 && vocab > 0)
    launch(flat_launch((long long)R * vocab, kThreads, stream), scatter_kernel, out, ids, probs, counts, selected, R,
           stride, vocab);
}

void candidates_init(int* ids, float* x, int* counts, const float* logits, int R, int n, cudaStream_t stream) {
  if (R > 0 && n > 0) launch(flat_launch((long long)R * n, kThreads, stream), init_kernel, ids, x, counts, logits, R, n);
}

void candidates_compact(int* ids, float* x, int* counts, const int* keep, int R, int stride, cudaStream_t stream,
                        CompactVersion version) {
  if (R <= 0) return;
  if (version == CompactVersion::Auto) version = stride > kCompactThreads ? CompactVersion::Block : CompactVersion::Serial;
  if (version == CompactVersion::Serial) {
    launch(flat_launch(R, kThreads, stream), compact_kernel, ids, x, counts, keep, R, stride);
    return;
  }
  launch(group_launch(R, 1, kCompactThreads, stream), compact_block_kernel, ids, x, counts, keep, stride);  // 1 block / row
}

void top_k_mark(int* keep, const float* x, const int* order, const int* counts, int k, bool hf, int R, int stride,
                cudaStream_t stream) {
  if (R > 0)
    launch(flat_launch((long long)R * stride, kThreads, stream), top_k_kernel, keep, x, order, counts, k, hf, R,
           stride, rank_order_stride(stride));
}

void top_p_mark(int* keep, const float* probs, const int* order, const int* counts, float p, int min_keep, bool hf,
                int R, int stride, cudaStream_t stream) {
  if (R > 0)
    launch(flat_launch(R, kThreads, stream), top_p_kernel, keep, probs, order, counts, p, min_keep, hf, R, stride,
           rank_order_stride(stride));
}

void min_p_mark(int* keep, const float* values, const int* order, const int* counts, float min_p, int min_keep,
                bool hf, int R, int stride, cudaStream_t stream) {
  if (R > 0)
    launch(flat_launch(R, kThreads, stream), min_p_kernel, keep, values, order, counts, min_p, min_keep, hf, R,
           stride, rank_order_stride(stride));
}

}  // namespace oracle::kernels
