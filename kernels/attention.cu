// Attention over a paged KV cache, deterministic version 1 — see kernels/attention.cuh.
#include "kernels/attention.cuh"

#include "faults/fault.h"
#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kTileQueries = 32;  // v2: queries per warp-sized block
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr size_t kMaxStaticShared = 48 * 1024;  // dynamic shared memory without an opt-in attribute

__device__ __forceinline__ long long kv_row(const PagedKvLayer& kv, int seq, int j) {
  const int block = kv.block_table[(long long)seq * kv.max_blocks_per_seq + j / kv.block_size];
  return ((long long)block * kv.block_size + j % kv.block_size) * kv.kv_dim;
}

__global__ void kv_store_kernel(PagedKvLayer kv, const float* k, const float* v, const int* seq,
                                const int* pos, int T, bool f16) {
  using namespace oracle::num;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)T * kv.kv_dim) return;
  const long long t = idx / kv.kv_dim;
  const int e = (int)(idx % kv.kv_dim);
  const long long row = kv_row(kv, seq[t], pos[t]);
  kv.k_pool[row + e] = f16 ? fp16_to_f32(f32_to_fp16(k[idx])) : k[idx];
  kv.v_pool[row + e] = f16 ? fp16_to_f32(f32_to_fp16(v[idx])) : v[idx];
}

// Where chunk rows come from: the paged pools (v1) or a shared-memory tile (v2).
struct PoolRows {
  const PagedKvLayer* kv;
  int seq, g, hd;
  __device__ const float* k(int j) const { return kv->k_pool + kv_row(*kv, seq, j) + g * hd; }
  __device__ const float* v(int j) const { return kv->v_pool + kv_row(*kv, seq, j) + g * hd; }
};
struct TileRows {
  const float* k_tile;  // (kAttnChunk, hd) positions j0 ..
  const float* v_tile;  // (kAttnChunk, hd)
  int j0, hd;
  __device__ const float* k(int j) const { return k_tile + (j - j0) * hd; }
  __device__ const float* v(int j) const { return v_tile + (j - j0) * hd; }
};

// The chunk partials of one (query, head): m_c, s_c and o_c over [j0, j1) in
// the order of the formula. Shared by both versions, so they cannot differ.
template <typename Rows>
__device__ void chunk_partial(const float* qh, const Rows& rows, int j0, int j1, int hd, bool ggml_scales, float* ml,
                              float* oc) {
  using namespace oracle::num;
  const float scale = sqrt_rn((float)hd);
  const float kq_scale = div_rn(1.0f, scale);  // ggml profile: kq_scale = 1.0f / sqrtf(hd), multiplied
  float score[kAttnChunk];
  float m = -inf_f32();
  for (int j = j0; j < j1; j++) {
    const float qk = dot_canonical(qh, rows.k(j), hd);
    score[j - j0] = ggml_scales ? mul_rn(qk, kq_scale) : div_rn(qk, scale);
    if (score[j - j0] > m) m = score[j - j0];
  }
  for (int d = 0; d < hd; d++) oc[d] = 0.0f;
  float sum = 0.0f;
  for (int j = j0; j < j1; j++) {
    const float e = exp_canonical(sub_rn(score[j - j0], m));
    sum = add_rn(sum, e);
    const float* vj = rows.v(j);
    for (int d = 0; d < hd; d++) oc[d] = fma_rn(e, vj[d], oc[d]);
  }
  ml[0] = m;
  ml[1] = sum;
}

// v1 — one thread per (query t, head h, chunk c), K/V read from the pools.
__global__ void attention_partial_kernel(const float* q, PagedKvLayer kv, const int* seq, const int* pos,
                                         int T, int n_chunks, AttentionShape s, float* ml, float* o) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)T * s.n_heads * n_chunks) return;
  const int c = (int)(idx % n_chunks);
  const int h = (int)(idx / n_chunks % s.n_heads);
  const long long t = idx / n_chunks / s.n_heads;
  const int p = pos[t], j0 = c * kAttnChunk;
  if (j0 > p) return;  // chunk past the causal limit: never read by the merge
  const int j1 = j0 + kAttnChunk <= p + 1 ? j0 + kAttnChunk : p + 1;
  const int g = h / (s.n_heads / s.n_kv_heads);
  PoolRows rows{&kv, seq[t], g, s.head_dim};
  chunk_partial(q + (t * s.n_heads + h) * s.head_dim, rows, j0, j1, s.head_dim, s.ggml_scales, ml + idx * 2, o + idx * s.head_dim);
}

// v2 (tiled) — one warp per (32 consecutive queries, head h, chunk c). When
// the 32 queries belong to one sequence (a prefill), the warp stages the
// chunk's K/V rows of kv head g in shared memory once and every thread reads
// the tile; otherwise each thread reads the pools. Same chunk_partial either way.
__global__ void attention_partial_tiled_kernel(const float* q, PagedKvLayer kv, const int* seq, const int* pos,
                                               int T, int n_chunks, AttentionShape s, float* ml, float* o) {
  ORACLE_DYNAMIC_SHARED(float, tile);  // (2, kAttnChunk, head_dim): K rows then V rows
  const int hd = s.head_dim, h = blockIdx.y, c = blockIdx.z, j0 = c * kAttnChunk;
  const long long t = (long long)blockIdx.x * kTileQueries + threadIdx.x;
  const bool valid = t < T;
  const int seq0 = seq[(long long)blockIdx.x * kTileQueries];  // lane 0's query always exists
  const int my_seq = valid ? seq[t] : seq0;
  const int my_pos = valid ? pos[t] : -1;
  int max_pos = my_pos;
  for (int w = 16; w >= 1; w /= 2) {
    const int other = __shfl_xor_sync(kFullWarp, max_pos, w);
    max_pos = other > max_pos ? other : max_pos;
  }
  const bool shared_seq = __all_sync(kFullWarp, my_seq == seq0);
  const int g = h / (s.n_heads / s.n_kv_heads);
  const int n_load = max_pos + 1 - j0 < kAttnChunk ? max_pos + 1 - j0 : kAttnChunk;  // <= 0: nothing to do
  if (shared_seq && n_load > 0) {
    for (int e = threadIdx.x; e < n_load * hd; e += kTileQueries) {
      const long long row = kv_row(kv, seq0, j0 + e / hd) + g * hd + e % hd;
      tile[e] = kv.k_pool[row];
      tile[kAttnChunk * hd + e] = kv.v_pool[row];
    }
  }
  __syncthreads();
  if (!valid || j0 > my_pos) return;
  const int j1 = j0 + kAttnChunk <= my_pos + 1 ? j0 + kAttnChunk : my_pos + 1;
  const long long idx = (t * s.n_heads + h) * n_chunks + c;
  const float* qh = q + (t * s.n_heads + h) * hd;
  if (shared_seq) {
    TileRows rows{tile, tile + kAttnChunk * hd, j0, hd};
    chunk_partial(qh, rows, j0, j1, hd, s.ggml_scales, ml + idx * 2, o + idx * hd);
  } else {
    PoolRows rows{&kv, my_seq, g, hd};
    chunk_partial(qh, rows, j0, j1, hd, s.ggml_scales, ml + idx * 2, o + idx * hd);
  }
}

// One thread per (query t, head h, element d): merge the chunks in increasing order.
__global__ void attention_merge_kernel(const int* pos, int T, int n_chunks, AttentionShape s,
                                       const float* ml, const float* o, float* out) {
  using namespace oracle::num;
  const int hd = s.head_dim;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)T * s.n_heads * hd) return;
  const int d = (int)(idx % hd);
  const long long th = idx / hd;  // t * n_heads + h
  const int last = pos[th / s.n_heads] / kAttnChunk;
  const long long base = th * n_chunks;
  // FAULT (docs/diff.md): chunks merged from the last to the first — the same
  // value with other rounding once a query sees 2 or more chunks (pos >= 32): under
  // numerics v2 each step fma(x, b, round(O*a)) rounds only one of its two products, so
  // swapping which chunk comes first changes the bits already for two chunks (v1's
  // add of two rounded products commuted, and needed 3 chunks).
  const bool reverse = oracle::fault::active(oracle::fault::Fault::KERNEL_ATTN_MERGE_ORDER);
  const int c0 = reverse ? last : 0, dc = reverse ? -1 : 1;
  float M = ml[(base + c0) * 2], L = ml[(base + c0) * 2 + 1], O = o[(base + c0) * hd + d];
  for (int i = 1; i <= last; i++) {
    const int c = c0 + dc * i;
    const float mc = ml[(base + c) * 2], sc = ml[(base + c) * 2 + 1];
    const float Mn = mc > M ? mc : M;
    const float a = exp_canonical(sub_rn(M, Mn));
    const float b = exp_canonical(sub_rn(mc, Mn));
    L = fma_rn(sc, b, mul_rn(L, a));
    O = fma_rn(o[(base + c) * hd + d], b, mul_rn(O, a));
    M = Mn;
  }
  out[idx] = s.ggml_scales ? mul_rn(O, div_rn(1.0f, L)) : div_rn(O, L);  // ggml: S_inv = 1.0f / S, V *= S_inv
}

}  // namespace

void kv_store(const PagedKvLayer& kv, const float* k, const float* v, const int* seq, const int* pos,
              int T, cudaStream_t stream, bool f16) {
  const long long n = (long long)T * kv.kv_dim;
  if (n > 0) launch(flat_launch(n, kThreads, stream), kv_store_kernel, kv, k, v, seq, pos, T, f16);
}

void attention(float* out, const float* q, const PagedKvLayer& kv, const int* seq, const int* pos, int T,
               int max_pos, const AttentionShape& shape, float* workspace,
               cudaStream_t stream, AttentionVersion version) {
  if (T <= 0) return;
  if (shape.n_kv_heads <= 0 || shape.n_heads % shape.n_kv_heads != 0)
    throw std::invalid_argument("attention: n_heads must be a multiple of n_kv_heads");
  const int n_chunks = attention_chunks(max_pos);
  float* ml = workspace;                                       // (T, n_heads, n_chunks, 2)
  float* o = workspace + (size_t)T * shape.n_heads * n_chunks * 2;  // (T, n_heads, n_chunks, head_dim)
  const size_t tile_bytes = sizeof(float) * 2 * kAttnChunk * shape.head_dim;
  if (version == AttentionVersion::Auto) version = T > 1 ? AttentionVersion::Tiled : AttentionVersion::Naive;
  if (tile_bytes > kMaxStaticShared) version = AttentionVersion::Naive;  // head_dim > 192: no tile
  if (version == AttentionVersion::Tiled) {
    LaunchConfig cfg;
    cfg.grid = dim3(blocks_for(T, kTileQueries), shape.n_heads, n_chunks);
    cfg.block = dim3(kTileQueries);
    cfg.shared_bytes = tile_bytes;
    cfg.sync = true;
    cfg.stream = stream;
    launch(cfg, attention_partial_tiled_kernel, q, kv, seq, pos, T, n_chunks, shape, ml, o);
  } else {
    const long long n_partial = (long long)T * shape.n_heads * n_chunks;
    launch(flat_launch(n_partial, kThreads, stream), attention_partial_kernel, q, kv, seq, pos, T, n_chunks, shape,
           ml, o);
  }
  const long long n_out = (long long)T * shape.n_heads * shape.head_dim;
  launch(flat_launch(n_out, kThreads, stream), attention_merge_kernel, pos, T, n_chunks, shape,
         (const float*)ml, (const float*)o, out);
}

}  // namespace oracle::kernels
