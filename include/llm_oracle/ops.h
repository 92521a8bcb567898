#pragma once
// ============================================================================
// llm_oracle::ops — the reference's single ops on caller-owned float32
// buffers, in the one operation order of docs/numerics.md (the same bits as
// the forward pass). Row-major, contiguous; shapes in the comments. Every
// function validates its sizes and throws InputError("ops.<op>", field, ...)
// for a bad argument; none keeps a pointer after it returns.
// ============================================================================
#include <cstdint>
#include <vector>

#include "llm_oracle/errors.h"
#include "llm_oracle/types.h"

namespace llm_oracle::ops {

// out[r,k] = (x[r,k] * inv) * w[k], inv = 1 / sqrt(dot(x[r], x[r]) / n + eps)
//   out, x (rows, n); w (n)
void rmsnorm(float* out, const float* x, const float* w, int rows, int n, float eps);
// Numerically stable softmax per row (max subtracted, fixed-order sums; a row
// with no finite value gives all zeros).   out, x (rows, n); out may equal x
void softmax(float* out, const float* x, int rows, int n);
// h[k] = silu(gate[k]) * up[k]             h, gate, up (n)
void swiglu(float* h, const float* gate, const float* up, int64_t n);

// ---- RoPE -------------------------------------------------------------------
// Which elements of a head form a rotated pair: Interleaved (2i, 2i+1) —
// llama2.c, GGUF llama; Neox (i, i + head_dim/2) — HF rotate-half, GGUF qwen2/neox.
enum class RopeLayout { Interleaved, Neox };
enum class RopeScaling { None, Linear, Yarn };
struct RopeParams {
  int head_dim = 0;               // even
  float theta = 10000.0f;         // rope.freq_base
  RopeLayout layout = RopeLayout::Interleaved;
  RopeScaling scaling = RopeScaling::None;
  float factor = 1.0f;            // Linear / Yarn: freq_scale = 1 / factor
  int original_context = 0;       // Yarn: original context length (> 0)
  float attn_factor = 1.0f;       // multiplies every cos / sin
  std::vector<float> freq_factors;  // (head_dim / 2) Llama 3 rope_freqs; empty: none
};
// Rotates x (rows, n_heads * head_dim) in place; row r sits at positions[r] (>= 0).
void rope(float* x, const int* positions, int rows, int n_heads, const RopeParams& p);
// The table row the rotation uses: cos_row, sin_row (head_dim / 2) at `pos`.
void rope_table(float* cos_row, float* sin_row, int pos, const RopeParams& p);

// ---- attention over a KV slice ---------------------------------------------------
// One query position attending to positions 0..n_pos-1 of its sequence:
//   out, q (n_heads, head_dim); k, v (n_pos, n_kv_heads, head_dim); query head h
//   reads kv head h / (n_heads / n_kv_heads). Scores q.k / sqrt(head_dim), chunks
//   of 32 positions merged in order (docs/numerics.md, attention).
void attention(float* out, const float* q, const float* k, const float* v, int n_pos, int n_heads,
               int n_kv_heads, int head_dim);

// ---- matmul over every stored type -----------------------------------------------
// out[t, i] = dot_canonical(dequantize(w row i), x[t])   out (T, N), x (T, K),
// w (N, K) stored as `type`: N rows of row_bytes(type, K) bytes. threads >= 1
// changes no bit.
void matmul(float* out, const float* x, const void* w, DType type, int T, int K, int N,
            int threads = 1);

// ---- stored rows <-> float32 ---------------------------------------------------------
// dst (rows, n) float32 from src: rows * row_bytes(type, n) bytes, exactly as ggml.
void dequantize_rows(float* dst, const void* src, DType type, int64_t rows, int64_t n);
// dst: rows * row_bytes(type, n) bytes, byte for byte what llama-quantize writes
// (no importance matrix). InputError for a type quantize_supported() refuses.
void quantize_rows(void* dst, const float* src, DType type, int64_t rows, int64_t n);

}  // namespace llm_oracle::ops
