// llm_oracle::ops: argument checks, then the reference's own ops
// (reference/compute/ops.h, qmatmul.h, rope_table.h; reference/model/quant.h,
// quantize_rows.h). No arithmetic of its own: the bits are the reference's.
#include "llm_oracle/ops.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "faults/fault.h"
#include "numerics/numerics.h"
#include "base/errors.h"
#include "base/thread_pool.h"
#include "reference/compute/ops.h"
#include "reference/compute/qmatmul.h"
#include "reference/compute/rope_table.h"
#include "reference/model/quant.h"
#include "reference/model/quantize_rows.h"

namespace llm_oracle::ops {

namespace {

void need(bool ok, const char* op, const std::string& field, const std::string& message) {
  oracle::require_input(ok, std::string("ops.") + op, field, message);
}
void need_ptr(const void* p, const char* op, const char* field) { need(p != nullptr, op, field, "null pointer"); }
void need_positive(int64_t v, const char* op, const char* field) {
  need(v > 0, op, field, "must be positive, got " + std::to_string(v));
}
oracle::DType internal(DType t) { return static_cast<oracle::DType>(static_cast<int>(t)); }

// RopeParams -> the Config fields rope_table_row reads (checked first).
oracle::Config rope_config(const RopeParams& p) {
  need(p.head_dim > 0 && p.head_dim % 2 == 0, "rope", "head_dim", "must be even and positive, got " + std::to_string(p.head_dim));
  need(std::isfinite(p.theta) && p.theta > 0, "rope", "theta", "must be finite and positive");
  need(std::isfinite(p.factor) && p.factor > 0, "rope", "factor", "must be finite and positive");
  need(p.scaling != RopeScaling::None || p.factor == 1.0f, "rope", "factor",
       "a factor other than 1 needs scaling linear or yarn (it would be ignored)");
  need(p.scaling != RopeScaling::Yarn || p.original_context > 0, "rope", "original_context",
       "yarn needs the original context length (> 0)");
  need(std::isfinite(p.attn_factor) && p.attn_factor > 0, "rope", "attn_factor", "must be finite and positive");
  need(p.freq_factors.empty() || (int)p.freq_factors.size() == p.head_dim / 2, "rope", "freq_factors",
       "needs head_dim / 2 = " + std::to_string(p.head_dim / 2) + " values, got " + std::to_string(p.freq_factors.size()));
  for (float f : p.freq_factors) need(std::isfinite(f) && f > 0, "rope", "freq_factors", "every factor must be finite and positive");
  oracle::Config c;
  c.head_dim = p.head_dim;
  c.rope_theta = p.theta;
  c.rope.scaling = p.scaling == RopeScaling::None ? oracle::RopeScaling::None
                   : p.scaling == RopeScaling::Linear ? oracle::RopeScaling::Linear
                                                      : oracle::RopeScaling::Yarn;
  c.rope.factor = p.factor;
  c.rope.original_context = p.original_context;
  c.rope.attn_factor = p.attn_factor;
  c.rope.freq_factors = p.freq_factors;
  return c;
}

// Neox pairs (i, i + half) <-> interleaved pairs (2i, 2i + 1), per head: moves only.
void neox_to_interleaved(float* dst, const float* head, int head_dim) {
  const int half = head_dim / 2;
  const bool swapped = oracle::fault::active(oracle::fault::Fault::API_ROPE_NEOX_PAIRS);  // FAULT: pair swapped
  for (int i = 0; i < half; i++) {
    dst[2 * i] = head[swapped ? i + half : i];
    dst[2 * i + 1] = head[swapped ? i : i + half];
  }
}
void interleaved_to_neox(float* head, const float* src, int head_dim) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; i++) {
    head[i] = src[2 * i];
    head[i + half] = src[2 * i + 1];
  }
}

}  // namespace

void rmsnorm(float* out, const float* x, const float* w, int rows, int n, float eps) {
  need_ptr(out, "rmsnorm", "out"), need_ptr(x, "rmsnorm", "x"), need_ptr(w, "rmsnorm", "weight");
  need_positive(rows, "rmsnorm", "rows"), need_positive(n, "rmsnorm", "n");
  need(std::isfinite(eps) && eps >= 0, "rmsnorm", "eps", "must be finite and >= 0");
  for (int r = 0; r < rows; r++) oracle::ops::rmsnorm(out + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

void softmax(float* out, const float* x, int rows, int n) {
  need_ptr(out, "softmax", "out"), need_ptr(x, "softmax", "x");
  need_positive(rows, "softmax", "rows"), need_positive(n, "softmax", "n");
  for (int r = 0; r < rows; r++) {
    float* o = out + (size_t)r * n;
    if (o != x + (size_t)r * n) std::copy(x + (size_t)r * n, x + (size_t)(r + 1) * n, o);
    oracle::num::softmax_canonical(o, n);
  }
}

void swiglu(float* h, const float* gate, const float* up, int64_t n) {
  need_ptr(h, "swiglu", "out"), need_ptr(gate, "swiglu", "gate"), need_ptr(up, "swiglu", "up");
  need(n > 0 && n <= INT32_MAX, "swiglu", "n", "must be in 1..2^31-1");
  oracle::ops::swiglu(h, gate, up, (int)n);
}

void rope_table(float* cos_row, float* sin_row, int pos, const RopeParams& p) {
  const oracle::Config c = rope_config(p);
  need_ptr(cos_row, "rope", "cos"), need_ptr(sin_row, "rope", "sin");
  need(pos >= 0, "rope", "position", "must be >= 0, got " + std::to_string(pos));
  oracle::rope_table_row(c, pos, cos_row, sin_row);
}

void rope(float* x, const int* positions, int rows, int n_heads, const RopeParams& p) {
  const oracle::Config c = rope_config(p);
  need_ptr(x, "rope", "x"), need_ptr(positions, "rope", "positions");
  need_positive(rows, "rope", "rows"), need_positive(n_heads, "rope", "n_heads");
  const int hd = p.head_dim, width = n_heads * hd;
  std::vector<float> cos_row(hd / 2), sin_row(hd / 2), tmp(hd);  // (head_dim/2), (head_dim)
  for (int r = 0; r < rows; r++) {
    need(positions[r] >= 0, "rope", "positions", "row " + std::to_string(r) + ": must be >= 0");
    oracle::rope_table_row(c, positions[r], cos_row.data(), sin_row.data());
    float* row = x + (size_t)r * width;
    if (p.layout == RopeLayout::Interleaved) {
      oracle::ops::rope_apply(row, n_heads, hd, cos_row.data(), sin_row.data());
      continue;
    }
    for (int h = 0; h < n_heads; h++) {
      neox_to_interleaved(tmp.data(), row + (size_t)h * hd, hd);
      oracle::ops::rope_apply(tmp.data(), 1, hd, cos_row.data(), sin_row.data());
      interleaved_to_neox(row + (size_t)h * hd, tmp.data(), hd);
    }
  }
}

void attention(float* out, const float* q, const float* k, const float* v, int n_pos, int n_heads,
               int n_kv_heads, int head_dim) {
  need_ptr(out, "attention", "out"), need_ptr(q, "attention", "q");
  need_ptr(k, "attention", "k"), need_ptr(v, "attention", "v");
  need_positive(n_pos, "attention", "n_pos"), need_positive(n_heads, "attention", "n_heads");
  need_positive(n_kv_heads, "attention", "n_kv_heads"), need_positive(head_dim, "attention", "head_dim");
  need(n_heads % n_kv_heads == 0, "attention", "n_kv_heads", "must divide n_heads");
  const size_t kv_width = (size_t)n_kv_heads * head_dim;
  std::vector<const float*> keys(n_pos), values(n_pos);  // (n_pos) row pointers
  for (int j = 0; j < n_pos; j++) keys[j] = k + j * kv_width, values[j] = v + j * kv_width;
  std::vector<float> o_chunk(head_dim);  // (head_dim) scratch
  const int group = n_heads / n_kv_heads;
  for (int h = 0; h < n_heads; h++) {
    oracle::ops::KvRows rows{keys.data(), values.data(), (h / group) * head_dim};
    oracle::ops::attention(out + (size_t)h * head_dim, q + (size_t)h * head_dim, rows, n_pos, head_dim,
                           o_chunk.data());
  }
}

void matmul(float* out, const float* x, const void* w, DType type, int T, int K, int N, int threads) {
  need_ptr(out, "matmul", "out"), need_ptr(x, "matmul", "x"), need_ptr(w, "matmul", "weight");
  need_positive(T, "matmul", "T"), need_positive(K, "matmul", "K"), need_positive(N, "matmul", "N");
  need(threads >= 1 && threads <= 1024, "matmul", "threads", "must be in 1..1024");
  row_bytes(type, K);  // K a whole number of blocks
  std::unique_ptr<oracle::ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<oracle::ThreadPool>(threads);
  oracle::ops::matmul(out, x, oracle::WeightMatrix(internal(type), static_cast<const uint8_t*>(w)), T, K, N,
                      pool.get());
}

void dequantize_rows(float* dst, const void* src, DType type, int64_t rows, int64_t n) {
  need_ptr(dst, "dequantize", "out"), need_ptr(src, "dequantize", "src");
  need_positive(rows, "dequantize", "rows"), need_positive(n, "dequantize", "n");
  const int64_t bytes = row_bytes(type, n);
  for (int64_t r = 0; r < rows; r++)
    oracle::dequantize_row(internal(type), static_cast<const uint8_t*>(src) + r * bytes, n, dst + r * n);
}

void quantize_rows(void* dst, const float* src, DType type, int64_t rows, int64_t n) {
  need_ptr(dst, "quantize", "out"), need_ptr(src, "quantize", "src");
  need_positive(rows, "quantize", "rows"), need_positive(n, "quantize", "n");
  need(quantize_supported(type), "quantize", "dtype", dtype_name(type) + " cannot be written (no ggml reference quantizer)");
  const int64_t bytes = row_bytes(type, n);
  for (int64_t r = 0; r < rows; r++)
    oracle::quantize_row(internal(type), src + r * n, n, static_cast<uint8_t*>(dst) + r * bytes);
}

}  // namespace llm_oracle::ops
