// Ops in canonical order: see ops.h and docs/numerics.md.
#include "reference/compute/ops.h"

#include <algorithm>

#include "faults/fault.h"
#include "numerics/numerics.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace oracle::ops {

using num::add_rn;
using num::div_rn;
using num::mul_rn;
using num::sub_rn;
constexpr int L = num::kLanes;  // 16 canonical lanes

// ---- matmul kernels ----------------------------------------------------------
// A kernel computes an (R rows) x (T tokens) tile: out[t*ldo + r] for rows
// w[r*k ..] and tokens x[t*k ..]. Every output keeps its own 16 lane
// accumulators, so the tile shape changes which outputs are computed together,
// never the order inside one output.

// Adds the tail elements k16..k-1 (lane = k mod 16) and reduces the lanes.
static float finish_lanes(float* acc, const float* w, const float* x, int k16, int k) {
  for (int l = 0; k16 + l < k; l++) acc[l] = add_rn(acc[l], mul_rn(w[k16 + l], x[k16 + l]));
  return num::lane_tree_reduce(acc);
}

template <int R, int T>
static void tile_scalar(float* out, int ldo, const float* w, const float* x, int k) {
  float acc[R][T][L] = {};  // (rows, tokens, lanes)
  int k16 = k - k % L;
  for (int kk = 0; kk < k16; kk += L)
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++)
        for (int l = 0; l < L; l++)
          acc[r][t][l] = add_rn(acc[r][t][l], mul_rn(w[r * k + kk + l], x[t * k + kk + l]));
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++)
      out[t * ldo + r] = finish_lanes(acc[r][t], w + r * k, x + t * k, k16, k);
}

#ifdef __AVX2__
// Lanes 0..7 live in lo, lanes 8..15 in hi; _mm256_mul_ps then _mm256_add_ps
// is exactly mul_rn then add_rn per lane.
// num::lane_tree_reduce on lanes lo = 0..7, hi = 8..15, same adds:
// w=8: lo+hi; w=4: low half + high half; w=2: + lanes 2,3; w=1: lane 0 + lane 1.
static inline float tree_avx2(__m256 lo, __m256 hi) {
  __m256 s8 = _mm256_add_ps(lo, hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

template <int R, int T>
static void tile_avx2(float* out, int ldo, const float* w, const float* x, int k) {
  __m256 lo[R][T], hi[R][T];  // (rows, tokens) x 8 lanes each
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) lo[r][t] = hi[r][t] = _mm256_setzero_ps();
  int k16 = k - k % L;
  for (int kk = 0; kk < k16; kk += L)
    for (int r = 0; r < R; r++) {
      _mm_prefetch((const char*)(w + r * k + kk + 128), _MM_HINT_T0);  // 512 bytes ahead
      __m256 wl = _mm256_loadu_ps(w + r * k + kk), wh = _mm256_loadu_ps(w + r * k + kk + 8);
      for (int t = 0; t < T; t++) {
        lo[r][t] = _mm256_add_ps(lo[r][t], _mm256_mul_ps(wl, _mm256_loadu_ps(x + t * k + kk)));
        hi[r][t] = _mm256_add_ps(hi[r][t], _mm256_mul_ps(wh, _mm256_loadu_ps(x + t * k + kk + 8)));
      }
    }
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) {
      if (k16 == k) {  // no tail: the halving tree in registers
        out[t * ldo + r] = tree_avx2(lo[r][t], hi[r][t]);
        continue;
      }
      float acc[L];  // (lanes)
      _mm256_storeu_ps(acc, lo[r][t]);
      _mm256_storeu_ps(acc + 8, hi[r][t]);
      out[t * ldo + r] = finish_lanes(acc, w + r * k, x + t * k, k16, k);
    }
}
#define ORACLE_TILE tile_avx2
#else
#define ORACLE_TILE tile_scalar
#endif

bool have_simd_kernels() {
#ifdef __AVX2__
  return true;
#else
  return false;
#endif
}

float dot(const float* a, const float* b, int n) {
  float out;
  ORACLE_TILE<1, 1>(&out, 1, a, b, n);
  return out;
}

// tile<Simd, R, T>: the AVX2 tile when Simd and available, else the scalar one.
template <bool Simd, int R, int T>
static void tile(float* out, int ldo, const float* w, const float* x, int k) {
  if constexpr (Simd) ORACLE_TILE<R, T>(out, ldo, w, x, k);
  else tile_scalar<R, T>(out, ldo, w, x, k);
}

// Rows [r0, r1) x all tokens. One token (decode): rows one after another, a
// single sequential weight stream. Several tokens (prefill): blocks of 32 rows
// (stay in L2) times blocks of 4 tokens (stay in L1), each weight row applied
// to 4 tokens at once.
template <bool Simd>
static void matmul_rows(float* out, const float* x, const float* w, int T, int K, int N,
                        int r0, int r1) {
  for (int rb = r0; rb < r1; rb += 32) {
    int rb1 = std::min(r1, rb + 32), t = 0;
    for (; t + 4 <= T; t += 4)
      for (int i = rb; i < rb1; i++)
        tile<Simd, 1, 4>(out + (long)t * N + i, N, w + (long)i * K, x + (long)t * K, K);
    for (; t < T; t++)
      for (int i = rb; i < rb1; i++)
        tile<Simd, 1, 1>(out + (long)t * N + i, N, w + (long)i * K, x + (long)t * K, K);
  }
}

void matmul_rows_scalar(float* out, const float* x, const float* w, int T, int K, int N,
                        int row_begin, int row_end) {
  matmul_rows<false>(out, x, w, T, K, N, row_begin, row_end);
}
void matmul_rows_simd(float* out, const float* x, const float* w, int T, int K, int N,
                      int row_begin, int row_end) {
  matmul_rows<true>(out, x, w, T, K, N, row_begin, row_end);
}

void matmul(float* out, const float* x, const float* w, int T, int K, int N,
            ThreadPool* pool) {
  if (fault::active(fault::Fault::BATCH_DEPENDENT_REDUCTION) && T > 1) {
    // FAULT: multi-token calls sum each output sequentially instead of in lanes.
    for (int t = 0; t < T; t++)
      for (int i = 0; i < N; i++) {
        float acc = 0.0f;
        for (int j = 0; j < K; j++) acc = add_rn(acc, mul_rn(w[(long)i * K + j], x[(long)t * K + j]));
        out[(long)t * N + i] = acc;
      }
    return;
  }
  int n_groups = (N + 3) / 4;  // threads get whole groups of 4 rows
  auto rows = [&](int g0, int g1) {
    matmul_rows_simd(out, x, w, T, K, N, g0 * 4, std::min(N, g1 * 4));
  };
  if (pool) pool->parallel_for(n_groups, rows);
  else rows(0, n_groups);
}

// ---- normalisation, activations, residual ------------------------------------
void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
  float ss = dot(x, x, n);
  float ms = div_rn(ss, (float)n);
  float r = div_rn(1.0f, num::sqrt_rn(add_rn(ms, eps)));
  for (int k = 0; k < n; k++) out[k] = mul_rn(mul_rn(x[k], r), w[k]);
}

void swiglu(float* h, const float* gate, const float* up, int n) {
  for (int k = 0; k < n; k++) h[k] = mul_rn(num::silu_canonical(gate[k]), up[k]);
}

void residual(float* x, const float* y, int n) {
  for (int k = 0; k < n; k++) x[k] = add_rn(x[k], y[k]);
}

void add_bias(float* y, const float* b, int n) {
  for (int k = 0; k < n; k++) y[k] = add_rn(y[k], b[k]);
}

// ---- RoPE ----------------------------------------------------------------------
void rope_freqs(float* freqs, float theta, int head_dim) {
  for (int i = 0; i < head_dim / 2; i++) freqs[i] = num::rope_freq(theta, i, head_dim);
}

void rope_row(float* cos_row, float* sin_row, const float* freqs, int head_dim, int pos) {
  for (int i = 0; i < head_dim / 2; i++) num::rope_cos_sin(pos, freqs[i], &cos_row[i], &sin_row[i]);
}

void rope_apply(float* v, int n_heads, int head_dim, const float* cos_row, const float* sin_row) {
  for (int h = 0; h < n_heads; h++) {
    float* vh = v + h * head_dim;
    for (int i = 0; i < head_dim / 2; i++) {
      float x0 = vh[2 * i], x1 = vh[2 * i + 1], c = cos_row[i], s = sin_row[i];
      vh[2 * i] = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
      vh[2 * i + 1] = add_rn(mul_rn(x0, s), mul_rn(x1, c));
    }
  }
}

// ---- attention -------------------------------------------------------------------
void attention_chunk(const float* q, const KvRows& kv, int j0, int j1, int head_dim, float* m,
                     float* s, float* o, bool ggml_scales) {
  float score[kAttnChunk];  // (j1 - j0)
  float scale = num::sqrt_rn((float)head_dim);
  const float kq_scale = div_rn(1.0f, scale);  // ggml: kq_scale = 1.0f / sqrtf(hd), multiplied
  float mc = -num::inf_f32();
  for (int j = j0; j < j1; j++) {
    const float qk = dot(q, kv.keys[j] + kv.offset, head_dim);
    score[j - j0] = ggml_scales ? mul_rn(qk, kq_scale) : div_rn(qk, scale);
    if (score[j - j0] > mc) mc = score[j - j0];
  }
  if (fault::active(fault::Fault::SOFTMAX_NO_MAX)) mc = 0.0f;  // FAULT: exp of unshifted scores
  float sum = 0.0f;
  for (int d = 0; d < head_dim; d++) o[d] = 0.0f;
  for (int j = j0; j < j1; j++) {
    float e = num::exp_canonical(sub_rn(score[j - j0], mc));
    sum = add_rn(sum, e);
    const float* v = kv.values[j] + kv.offset;
    for (int d = 0; d < head_dim; d++) o[d] = add_rn(o[d], mul_rn(e, v[d]));
  }
  *m = mc;
  *s = sum;
}

void attention(float* out, const float* q, const KvRows& kv, int n_pos, int head_dim,
               float* o_chunk, bool ggml_scales) {
  float M = 0.0f, Lsum = 0.0f;  // running max and sum; out holds the running O
  for (int j0 = 0; j0 < n_pos; j0 += kAttnChunk) {
    int j1 = std::min(n_pos, j0 + kAttnChunk);
    float mc, sc;
    attention_chunk(q, kv, j0, j1, head_dim, &mc, &sc, j0 == 0 ? out : o_chunk, ggml_scales);
    if (j0 == 0) {
      M = mc;
      Lsum = sc;
      continue;
    }
    float Mn = mc > M ? mc : M;
    float a = num::exp_canonical(sub_rn(M, Mn)), b = num::exp_canonical(sub_rn(mc, Mn));
    Lsum = add_rn(mul_rn(Lsum, a), mul_rn(sc, b));
    for (int d = 0; d < head_dim; d++) out[d] = add_rn(mul_rn(out[d], a), mul_rn(o_chunk[d], b));
    M = Mn;
  }
  const float l_inv = div_rn(1.0f, Lsum);  // ggml: S_inv = 1.0f / S, then V *= S_inv
  for (int d = 0; d < head_dim; d++) out[d] = ggml_scales ? mul_rn(out[d], l_inv) : div_rn(out[d], Lsum);
}

}  // namespace oracle::ops
