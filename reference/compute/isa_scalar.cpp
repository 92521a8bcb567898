// The scalar path of the dispatch table (isa.h), compiled for baseline
// x86-64 like the rest of the project: plain loops over the 16 canonical
// lanes (element k into lane k mod 16, increasing k, one fma_rn per element,
// num::lane_tree_reduce). It is also the definition the SIMD paths are
// tested against, and the tail helpers they call (isa_paths.h).
#include <algorithm>
#include <vector>

#include "numerics/numerics.h"
#include "reference/compute/isa_paths.h"
#include "reference/model/quant.h"

namespace oracle::isa {

using num::fma_rn;
constexpr int L = num::kLanes;  // 16 canonical lanes

float finish_lanes_f32(float* acc, const float* w, const float* x, int k16, int k) {
  for (int l = 0; k16 + l < k; l++) acc[l] = fma_rn(w[k16 + l], x[k16 + l], acc[l]);
  return num::lane_tree_reduce(acc);
}

float finish_lanes_stored(float* acc, DType type, const uint8_t* row, const float* x, int k16, int k) {
  float w[L];  // (k - k16 < 16) dequantized tail
  dequantize_row(type, row + (int64_t)k16 * dtype_block_bytes(type), k - k16, w);
  for (int l = 0; k16 + l < k; l++) acc[l] = fma_rn(w[l], x[k16 + l], acc[l]);
  return num::lane_tree_reduce(acc);
}

void scale_fma_tail(float* y, float a, const float* x, float s, int d0, int n) {
  for (int d = d0; d < n; d++) y[d] = fma_rn(x[d], s, a == 1.0f ? y[d] : num::mul_rn(y[d], a));
}

void exp_nonpositive_tail(const double* v, double* out, int k0, int n) {
  for (int k = k0; k < n; k++) out[k] = v[k] < -700.0 ? 0.0 : num::exp_d(v[k]);
}

void swiglu_tail(float* h, const float* gate, const float* up, int k0, int n) {
  for (int k = k0; k < n; k++) h[k] = num::mul_rn(num::silu_canonical(gate[k]), up[k]);
}

void exp_f32_tail(const float* v, float* out, int k0, int n) {
  for (int k = k0; k < n; k++) out[k] = num::exp_canonical(v[k]);
}

namespace {

void scale_fma_scalar(float* y, float a, const float* x, float s, int n) { scale_fma_tail(y, a, x, s, 0, n); }
void exp_nonpositive_scalar(const double* v, double* out, int n) { exp_nonpositive_tail(v, out, 0, n); }
void swiglu_scalar(float* h, const float* gate, const float* up, int n) { swiglu_tail(h, gate, up, 0, n); }
void exp_f32_scalar(const float* v, float* out, int n) { exp_f32_tail(v, out, 0, n); }
float dot_scalar(const float* a, const float* b, int n);
void dot_rows_scalar(float* out, int ld, const float* const* q, int nq, const float* const* rows, int64_t offset,
                     int m, int n) {
  for (int i = 0; i < nq; i++)
    for (int j = 0; j < m; j++) out[(int64_t)i * ld + j] = dot_scalar(q[i], rows[j] + offset, n);
}
void pv_rows_scalar(float* const* o, const float* e, int ld, const int* m, int nq, const float* const* rows,
                    int64_t offset, int n) {
  for (int i = 0; i < nq; i++)
    for (int j = 0; j < m[i]; j++) scale_fma_tail(o[i], 1.0f, rows[j] + offset, e[(int64_t)i * ld + j], 0, n);
}

// ---- F32 --------------------------------------------------------------------
// An (R rows) x (T tokens) tile: out[t*ldo + r] for rows w[r*k ..] and tokens
// x[t*k ..], each output with its own 16 lane accumulators.
template <int R, int T>
void tile_scalar(float* out, int ldo, const float* w, const float* x, int k) {
  float acc[R][T][L] = {};  // (rows, tokens, lanes)
  int k16 = k - k % L;
  for (int kk = 0; kk < k16; kk += L)
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++)
        for (int l = 0; l < L; l++)
          acc[r][t][l] = fma_rn(w[r * k + kk + l], x[t * k + kk + l], acc[r][t][l]);
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++)
      out[t * ldo + r] = finish_lanes_f32(acc[r][t], w + r * k, x + t * k, k16, k);
}

float dot_scalar(const float* a, const float* b, int n) {
  float out;
  tile_scalar<1, 1>(&out, 1, a, b, n);
  return out;
}

// Rows [r0, r1) x all tokens, in blocks of 32 rows x 4 tokens (as the SIMD
// paths do; the blocking changes which outputs are computed together only).
void matmul_rows_scalar(float* out, const float* x, const float* w, int T, int K, int N, int r0, int r1) {
  for (int rb = r0; rb < r1; rb += 32) {
    int rb1 = std::min(r1, rb + 32), t = 0;
    for (; t + 4 <= T; t += 4)
      for (int i = rb; i < rb1; i++)
        tile_scalar<1, 4>(out + (long)t * N + i, N, w + (long)i * K, x + (long)t * K, K);
    for (; t < T; t++)
      for (int i = rb; i < rb1; i++)
        tile_scalar<1, 1>(out + (long)t * N + i, N, w + (long)i * K, x + (long)t * K, K);
  }
}

// ---- stored types -------------------------------------------------------------
// dequantize_row one block (16 elements for the plain types) into a buffer,
// then the plain lane loop; elements arrive in increasing k, so lane k mod 16
// gets them in the canonical order.
int64_t block_elems_for(DType t) {
  int64_t be = dtype_block_elems(t);
  return be == 1 ? L : be;  // plain types: decode 16 at a time
}

void row_scalar(float* out, int ldo, DType type, const uint8_t* src, const float* x, int n_tok, int k,
                float* buf, float (*acc)[L]) {
  for (int t = 0; t < n_tok; t++)
    for (int l = 0; l < L; l++) acc[t][l] = 0.0f;
  const int64_t be = block_elems_for(type);
  for (int64_t k0 = 0; k0 < k; k0 += be) {
    int64_t n = std::min<int64_t>(be, k - k0);
    int64_t off = dtype_block_elems(type) == 1 ? k0 * dtype_block_bytes(type) : k0 / be * dtype_block_bytes(type);
    dequantize_row(type, src + off, n, buf);
    for (int t = 0; t < n_tok; t++)
      for (int64_t j = 0; j < n; j++) {
        int l = (int)((k0 + j) % L);
        acc[t][l] = fma_rn(buf[j], x[(int64_t)t * k + k0 + j], acc[t][l]);
      }
  }
  for (int t = 0; t < n_tok; t++) out[(int64_t)t * ldo] = num::lane_tree_reduce(acc[t]);
}

bool stored_rows_scalar(float* out, const float* x, DType type, const uint8_t* w, int64_t row_bytes, int T,
                        int K, int N, int r0, int r1) {
  std::vector<float> buf(QK_K);                  // one block
  std::vector<float> acc((size_t)T * L);         // (T, lanes)
  for (int i = r0; i < r1; i++)
    row_scalar(out + i, N, type, w + i * row_bytes, x, T, K, buf.data(), reinterpret_cast<float(*)[L]>(acc.data()));
  return true;
}

bool no_register_decoder(DType) { return false; }

constexpr Kernels kScalar{Isa::Scalar,        dot_scalar,          matmul_rows_scalar,
                          stored_rows_scalar, no_register_decoder, scale_fma_scalar,
                          exp_nonpositive_scalar, swiglu_scalar,
                          dot_rows_scalar,        pv_rows_scalar,      exp_f32_scalar};

}  // namespace

const Kernels& scalar_kernels() { return kScalar; }

}  // namespace oracle::isa
