#pragma once
// ============================================================================
// The transformer's ops, each in the one float32 operation order that
// docs/numerics.md fixes (the CUDA kernels implement the same orders):
//   rmsnorm, matmul (GEMV and multi-token GEMM, identical per-output bits),
//   RoPE (cos/sin rows + apply), chunked attention, SwiGLU, residual.
// Everything here is a pure function of its inputs: no state, no threads
// except the pool a caller passes to matmul.
// ============================================================================
#include "numerics/spec.h"
#include "base/thread_pool.h"

namespace oracle::ops {

// ---- dot products and matmul -----------------------------------------------
// dot(a, b, n) == num::dot_canonical(a, b, n), bit for bit (the dispatch
// table's kernel, isa.h: 16 canonical lanes in one zmm, two ymm or 16 floats;
// mul then add, never fma).
float dot(const float* a, const float* b, int n);

// out[t*N + i] = dot_canonical(&w[i*K], &x[t*K], K)
//   out (T, N), x (T, K), w (N, K) row-major.
// Splits rows over `pool` (may be null). The result is independent of T,
// of the thread count and of the ISA path (isa::kernels(): scalar, AVX2,
// AVX-512; tests call each path's matmul_rows_f32 directly).
void matmul(float* out, const float* x, const float* w, int T, int K, int N,
            ThreadPool* pool);

// ---- normalisation, activations, residual ----------------------------------
// out[k] = (x[k] * r) * w[k], r = 1 / sqrt(dot(x, x)/n + eps)     out, x, w: (n)
void rmsnorm(float* out, const float* x, const float* w, int n, float eps);
// h[k] = silu(gate[k]) * up[k]                                    h, gate, up: (n)
void swiglu(float* h, const float* gate, const float* up, int n);
// x[k] = x[k] + y[k]                                              x, y: (n)
void residual(float* x, const float* y, int n);
// y[k] = y[k] + b[k] (projection bias, qwen2 q/k/v)              y, b: (n)
void add_bias(float* y, const float* b, int n);

// ---- RoPE (interleaved pairs) ------------------------------------------------
// freqs (head_dim/2): freqs[i] = rope_freq(theta, i, head_dim)
void rope_freqs(float* freqs, float theta, int head_dim);
// cos_row, sin_row (head_dim/2): row `pos` of the RoPE table
void rope_row(float* cos_row, float* sin_row, const float* freqs, int head_dim, int pos);
// Rotates every head of v (n_heads * head_dim) by one table row.
void rope_apply(float* v, int n_heads, int head_dim, const float* cos_row, const float* sin_row);

// ---- attention -----------------------------------------------------------------
constexpr int kAttnChunk = spec::kAttnChunk;  // chunk length S (numerics/spec.h), aligned to position 0

// Rows of one sequence's K or V for one layer: rows[j] points at position j's
// (n_kv_heads * head_dim) vector; `offset` = g * head_dim selects kv head g.
struct KvRows {
  const float* const* keys;    // (n_pos) pointers
  const float* const* values;  // (n_pos) pointers
  int offset;
};

// Partials of one chunk [j0, j1), j1 - j0 <= kAttnChunk: max m, sum s,
// o (head_dim) = sum e_j * v_j.
// ggml_scales (the ggml profile, docs/numerics.md §5.2): scores are q·k times
// 1/sqrt(hd) and the output O times 1/L, as ggml's flash attention scales them,
// instead of the canonical divisions.
void attention_chunk(const float* q, const KvRows& kv, int j0, int j1, int head_dim, float* m,
                     float* s, float* o, bool ggml_scales = false);
// out (head_dim) = causal attention of q (head_dim) over positions 0..n_pos-1,
// chunked and merged in increasing chunk order. o_chunk: scratch (head_dim).
void attention(float* out, const float* q, const KvRows& kv, int n_pos, int head_dim,
               float* o_chunk, bool ggml_scales = false);

// out[i] = attention(q[i], kv, n_pos[i]) for i < nq: queries that share one
// sequence's K/V rows of one kv head (a row's query heads of one group, and
// neighbouring rows of a prefill), each output's bits attention()'s (the same
// chunks, and per query the same ops in the same order); each chunk's keys and
// values are read once for up to kAttnQueries of them. kv must hold the largest
// n_pos's rows. o_chunk: scratch (min(nq, kAttnQueries) * head_dim).
constexpr int kAttnQueries = 16;
void attention_queries(float* const* out, const float* const* q, const int* n_pos, int nq, const KvRows& kv,
                       int head_dim, float* o_chunk, bool ggml_scales = false);

// Several kv heads' queries over one sequence's rows, chunk by chunk across the
// heads: chunk j of every group before chunk j + 1 of any, so each chunk's K/V
// rows are read once, whole (a decode step: one pass over the layer's rows, not
// one strided pass per kv head). Group i is attention_queries(out, q, n_pos,
// nq, KvRows{keys, values, offset}) with nq <= kAttnQueries, and each query's
// bits are its (the same chunks, the same ops in the same order). o_chunk:
// scratch (kAttnQueries * head_dim). warm (a decode step, whose rows come from
// memory): windows of chunks are read into cache before their chunks run; it
// changes no value.
struct AttnGroup {
  float* const* out;
  const float* const* q;
  const int* n_pos;
  int nq;      // <= kAttnQueries
  int offset;  // g * head_dim: kv head g
};
void attention_heads(const AttnGroup* groups, int n_groups, const float* const* keys, const float* const* values,
                     int head_dim, float* o_chunk, bool warm, bool ggml_scales = false);

}  // namespace oracle::ops
