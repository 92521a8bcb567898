#pragma once
// ============================================================================
// Attention over a paged KV cache: prefill and decode (deterministic, v1).
//
// Formula (docs/numerics.md §4.1 "Attention"), query token t at absolute position
// p = pos[t] of sequence seq[t], query head h, kv head g = h / (n_heads / n_kv_heads):
//   score_j = div_rn(dot_canonical(q_h, k_{j,g}, head_dim), sqrt_rn((float)head_dim)),
//             j = 0..p (causal);
//   chunks of S = 32 positions aligned to 0: chunk c = [32c, 32c+32) ∩ [0, p];
//   per chunk, increasing j: m_c = scan max (`if (s > m) m = s` from -inf);
//     e_j = exp_canonical(sub_rn(score_j, m_c)); s_c = sequential add_rn of e_j;
//     o_c[d] = sequential fma_rn(e_j, v_{j,g}[d], o_c[d])  (numerics v2);
//   merge chunks in increasing c: (M, L, O) = chunk 0; then Mn = max(m_c, M);
//     a = exp(M - Mn); b = exp(m_c - Mn); L = fma_rn(s_c, b, mul_rn(L, a));
//     O[d] = fma_rn(o_c[d], b, mul_rn(O[d], a)); out[d] = div_rn(O[d], L).
// Prefill and decode are the same kernels: a prefill passes one query per
// prompt token (its own pos), a decode batch one query per sequence; the K/V
// of every query must already be stored (kv_store) before attention runs.
//
// Shapes:  q (T, n_heads * head_dim); out (T, n_heads * head_dim);
//          seq, pos (T); k, v (T, kv_dim) with kv_dim = n_kv_heads * head_dim;
//          pools (n_pool_blocks, block_size, kv_dim); block_table
//          (n_seqs, max_blocks_per_seq): position j of sequence s lives in pool
//          block block_table[s, j / block_size], slot j % block_size.
//          workspace: attention_workspace_floats(...) floats, laid out as
//          ml (T, n_heads, n_chunks, 2) then o (T, n_heads, n_chunks, head_dim).
// Thread mapping: partial kernel v1 (Naive) — one thread per (query, head,
//          chunk), 128 per block; v2 (Tiled) — block = one warp of 32
//          consecutive queries, grid (query groups, heads, chunks), the chunk's
//          K/V staged in shared memory (2 * 32 * head_dim floats) when the
//          warp's queries share a sequence; merge kernel — one thread per
//          (query, head, d); kv_store — one thread per (token, element).
// Reduction order: as in the formula; dot_canonical runs sequentially in one
//          thread (numerics/numerics.h, the same function the reference calls).
// Matches: the reference attention (docs/numerics.md §4.1 "Attention") bit for bit, for
//          any block size, block table, batch composition or prefill split.
// ============================================================================
#include <cstddef>

#include "kernels/launch.h"
#include "numerics/spec.h"

namespace oracle::kernels {

constexpr int kAttnChunk = oracle::spec::kAttnChunk;  // S: positions per partial (numerics/spec.h)

// Device view of one layer of a paged KV cache.
struct PagedKvLayer {
  float* k_pool = nullptr;            // (n_pool_blocks, block_size, kv_dim)
  float* v_pool = nullptr;            // (n_pool_blocks, block_size, kv_dim)
  const int* block_table = nullptr;   // (n_seqs, max_blocks_per_seq)
  int block_size = 16;
  int max_blocks_per_seq = 0;
  int kv_dim = 0;                     // n_kv_heads * head_dim
};

struct AttentionShape {
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  // The ggml numerics profile (docs/numerics.md §5.2): score_j = mul_rn(q·k, div_rn(1, sqrt_rn(hd)))
  // instead of the division, out[d] = mul_rn(O[d], div_rn(1, L)) instead of div_rn(O[d], L)
  // (reference ops::attention with ggml_scales).
  bool ggml_scales = false;
};

// Writes k[t], v[t] into the cache slot of (seq[t], pos[t]). f16: each value stored
// rounded to F16 (fp16_to_f32(f32_to_fp16(x)), nearest even) — the ggml profile's
// F16 K/V cache (reference ops::fp16_roundtrip); the pools stay float32.
void kv_store(const PagedKvLayer& kv, const float* k, const float* v, const int* seq, const int* pos,
              int T, cudaStream_t stream = nullptr, bool f16 = false);

// Chunks needed when every pos[t] <= max_pos.
inline int attention_chunks(int max_pos) { return max_pos / kAttnChunk + 1; }
inline size_t attention_workspace_floats(int T, const AttentionShape& s, int max_pos) {
  return (size_t)T * s.n_heads * attention_chunks(max_pos) * (2 + s.head_dim);
}

// Partial-kernel versions (same bits): Naive = v1, one thread per (query,
// head, chunk) reading the pools; Tiled = v2, a warp of 32 consecutive queries
// per (head, chunk) staging the chunk's K/V in shared memory when the 32
// queries share a sequence (prefill). Auto: Tiled when T > 1. Tiled falls
// back to Naive when the tile would exceed 48 KiB (head_dim > 192).
enum class AttentionVersion { Auto, Naive, Tiled };

// max_pos: an upper bound of pos[0..T) known on the host (sizes the chunk grid).
void attention(float* out, const float* q, const PagedKvLayer& kv, const int* seq, const int* pos, int T,
               int max_pos, const AttentionShape& shape, float* workspace,
               cudaStream_t stream = nullptr, AttentionVersion version = AttentionVersion::Auto);

}  // namespace oracle::kernels
