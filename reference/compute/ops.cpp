// Ops in canonical order: see ops.h and docs/numerics.md.
#include "reference/compute/ops.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "faults/fault.h"
#include "numerics/numerics.h"
#include "reference/compute/isa.h"

namespace oracle::ops {

using num::add_rn;
using num::div_rn;
using num::fma_rn;
using num::mul_rn;
using num::sub_rn;

// ---- matmul -------------------------------------------------------------------
// The dot and the row tiles are the dispatch table's (isa.h): scalar, AVX2 or
// AVX-512, chosen once per process, all with the same bits.
float dot(const float* a, const float* b, int n) { return isa::kernels().dot(a, b, n); }

void matmul(float* out, const float* x, const float* w, int T, int K, int N,
            ThreadPool* pool) {
  if (fault::active(fault::Fault::BATCH_DEPENDENT_REDUCTION) && T > 1) {
    // FAULT: multi-token calls sum each output sequentially instead of in lanes.
    for (int t = 0; t < T; t++)
      for (int i = 0; i < N; i++) {
        float acc = 0.0f;
        for (int j = 0; j < K; j++) acc = fma_rn(w[(long)i * K + j], x[(long)t * K + j], acc);
        out[(long)t * N + i] = acc;
      }
    return;
  }
  const isa::Kernels& k = isa::kernels();  // on this thread: a bad ORACLE_ISA throws here
  int n_groups = (N + 3) / 4;               // threads get whole groups of 4 rows
  auto rows = [&](int g0, int g1) { k.matmul_rows_f32(out, x, w, T, K, N, g0 * 4, std::min(N, g1 * 4)); };
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

// h[k] = silu_canonical(gate[k]) * up[k]: the dispatch table's (isa.h), the same bits on
// every path (each element on its own).
void swiglu(float* h, const float* gate, const float* up, int n) { isa::kernels().swiglu(h, gate, up, n); }

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
namespace {

// A chunk's n scores become its softmax weights in place: e_j =
// exp_canonical(score_j / sqrt(hd) - mc) (ggml profile: score_j * (1 / sqrt(hd))),
// mc the chunk's max (NaN skipped). Returns mc; *sum = the e_j added in increasing j.
float chunk_weights(float* score, int n, int head_dim, bool ggml_scales, float* sum) {
  const float scale = num::sqrt_rn((float)head_dim);
  const float kq_scale = div_rn(1.0f, scale);  // ggml: kq_scale = 1.0f / sqrtf(hd), multiplied
  if (ggml_scales)  // each score on its own (loops the compiler vectorizes), then the max in j order
    for (int j = 0; j < n; j++) score[j] = mul_rn(score[j], kq_scale);
  else
    for (int j = 0; j < n; j++) score[j] = div_rn(score[j], scale);
  float mc = -num::inf_f32();
  for (int j = 0; j < n; j++)
    if (score[j] > mc) mc = score[j];
  if (fault::active(fault::Fault::SOFTMAX_NO_MAX)) mc = 0.0f;  // FAULT: exp of unshifted scores
  for (int j = 0; j < n; j++) score[j] = sub_rn(score[j], mc);
  isa::kernels().exp_f32(score, score, n);  // e_j = exp_canonical(score_j - mc)
  float s = 0.0f;
  for (int j = 0; j < n; j++) s = add_rn(s, score[j]);
  *sum = s;
  return mc;
}

// The running max M, sum L and output out take one more chunk (mc, sc, o_chunk).
void merge_chunk(float* out, float* M, float* L, float mc, float sc, const float* o_chunk, int head_dim) {
  const float Mn = mc > *M ? mc : *M;
  const float a = num::exp_canonical(sub_rn(*M, Mn)), b = num::exp_canonical(sub_rn(mc, Mn));
  // rescale the running value (one mul), accumulate the chunk (one fma)
  *L = fma_rn(sc, b, mul_rn(*L, a));
  isa::kernels().scale_fma(out, a, o_chunk, b, head_dim);  // out[d] = fma_rn(o_chunk[d], b, mul_rn(out[d], a))
  *M = Mn;
}

// Asks for m rows' `len` floats from `offset` (a chunk's K or V of one kv
// head, or of several) before they are read. The rows sit one per position
// across the cache, so the hardware prefetcher does not get ahead of them.
// A hint: it never faults and changes no value.
void prefetch_rows(const float* const* rows, int m, int offset, int len) {
  for (int j = 0; j < m; j++)
    for (int d = 0; d < len; d += 16) __builtin_prefetch(rows[j] + offset + d);
}

// Reads one float of each 64-byte line of m rows' `len` floats from `offset`,
// so they are in cache before the chunks need them. A decode step's K/V rows
// come from memory (the weights' stream has evicted them): read this way, each
// line an independent load, they arrive faster than the chunks' own loads and
// prefetches bring them (SmolLM2 Q4_K_M decode at depth 128-192, 1 thread,
// Zen 4: attention 1.33-1.40 -> 1.01-1.07 ms a token; prefetching the same
// lines to L2 first: 1.03-1.16; docs/performance.md). Changes no value.
void warm_rows(const float* const* rows, int m, int offset, int len) {
  uint32_t seen = 0;
  for (int j = 0; j < m; j++)
    for (int d = 0; d < len; d += 16) {
      uint32_t bits;
      std::memcpy(&bits, rows[j] + offset + d, sizeof bits);
      seen |= bits;
    }
  asm volatile("" : : "r"(seen));  // the loads are kept; nothing is computed from them
}

// One kv head's queries (nq <= kAttnQueries) on their way through the chunks:
// the running max M and sum L of each.
struct QueryGroup {
  AttnGroup a;
  float M[kAttnQueries], L[kAttnQueries];
};

// Chunk [j0, j0 + kAttnChunk) of the group's queries whose positions reach it
// (a query's chunk 0 goes straight into its out, as attention's).
void group_chunk(QueryGroup& g, const KvRows& kv, int j0, int head_dim, float* o_chunk, bool ggml_scales) {
  const isa::Kernels& k = isa::kernels();
  float score[kAttnQueries][kAttnChunk];  // (queries of the chunk, positions of the chunk)
  float mc[kAttnQueries], sc[kAttnQueries];
  int idx[kAttnQueries], m[kAttnQueries], na = 0, m_max = 0;  // the queries this chunk reaches
  const float* qa[kAttnQueries];
  float* oa[kAttnQueries];
  for (int i = 0; i < g.a.nq; i++) {
    if (g.a.n_pos[i] <= j0) continue;
    idx[na] = i, qa[na] = g.a.q[i], m[na] = std::min(g.a.n_pos[i], j0 + kAttnChunk) - j0;
    oa[na] = j0 == 0 ? g.a.out[i] : o_chunk + (size_t)na * head_dim;
    m_max = std::max(m_max, m[na++]);
  }
  if (na == 0) return;
  k.dot_rows(&score[0][0], kAttnChunk, qa, na, kv.keys + j0, kv.offset, m_max, head_dim);  // q·k
  for (int a = 0; a < na; a++) {
    mc[a] = chunk_weights(score[a], m[a], head_dim, ggml_scales, &sc[a]);
    std::fill(oa[a], oa[a] + head_dim, 0.0f);
  }
  k.pv_rows(oa, &score[0][0], kAttnChunk, m, na, kv.values + j0, kv.offset, head_dim);  // p·v, j in order
  for (int a = 0; a < na; a++) {
    const int i = idx[a];
    if (j0 == 0) g.M[i] = mc[a], g.L[i] = sc[a];
    else merge_chunk(g.a.out[i], &g.M[i], &g.L[i], mc[a], sc[a], oa[a], head_dim);
  }
}

// out = out / L (ggml: times 1 / L), every query of the group.
void group_finish(QueryGroup& g, int head_dim, bool ggml_scales) {
  for (int i = 0; i < g.a.nq; i++) {
    float* out = g.a.out[i];
    const float l_inv = div_rn(1.0f, g.L[i]);  // ggml: S_inv = 1.0f / S, then V *= S_inv
    for (int d = 0; d < head_dim; d++) out[d] = ggml_scales ? mul_rn(out[d], l_inv) : div_rn(out[d], g.L[i]);
  }
}

// Bytes of K and V one warmed window of chunks spans: a quarter of a 1 MiB L2,
// so a window is still in cache when its chunks reach it.
constexpr int64_t kWarmBytes = 256 * 1024;

// The groups chunk by chunk: chunk j0 of every group before chunk j0 + 1 of
// any, its rows' floats [lo, hi) (the groups' heads) prefetched a chunk ahead;
// warm: instead, the chunks go in windows of about kWarmBytes, each read once
// into cache (warm_rows) before its chunks run.
void groups_by_chunk(QueryGroup* groups, int n_groups, const float* const* keys, const float* const* values,
                     int head_dim, float* o_chunk, bool ggml_scales, bool warm) {
  int max_pos = 0, lo = groups[0].a.offset, hi = lo;
  for (int i = 0; i < n_groups; i++) {
    const AttnGroup& a = groups[i].a;
    max_pos = std::max(max_pos, *std::max_element(a.n_pos, a.n_pos + a.nq));
    lo = std::min(lo, a.offset), hi = std::max(hi, a.offset + head_dim);
  }
  const int64_t row_bytes = 2 * (int64_t)sizeof(float) * (hi - lo);  // a position's K and V
  const int window = warm ? (int)std::max<int64_t>(1, kWarmBytes / row_bytes / kAttnChunk) * kAttnChunk : max_pos;
  if (!warm) {  // chunk 0's rows
    prefetch_rows(keys, std::min(max_pos, kAttnChunk), lo, hi - lo);
    prefetch_rows(values, std::min(max_pos, kAttnChunk), lo, hi - lo);
  }
  for (int j0 = 0; j0 < max_pos; j0 += kAttnChunk) {
    if (warm && j0 % window == 0) {
      warm_rows(keys + j0, std::min(window, max_pos - j0), lo, hi - lo);
      warm_rows(values + j0, std::min(window, max_pos - j0), lo, hi - lo);
    }
    const int ahead = std::min(max_pos - (j0 + kAttnChunk), kAttnChunk);  // the next chunk's rows
    if (!warm) {  // warmed rows are in L2 (asking for them into L1 too measured 5 % slower)
      prefetch_rows(keys + j0 + kAttnChunk, ahead, lo, hi - lo);
      prefetch_rows(values + j0 + kAttnChunk, ahead, lo, hi - lo);
    }
    for (int i = 0; i < n_groups; i++)
      group_chunk(groups[i], KvRows{keys, values, groups[i].a.offset}, j0, head_dim, o_chunk, ggml_scales);
  }
  for (int i = 0; i < n_groups; i++) group_finish(groups[i], head_dim, ggml_scales);
}

}  // namespace

void attention_chunk(const float* q, const KvRows& kv, int j0, int j1, int head_dim, float* m,
                     float* s, float* o, bool ggml_scales) {
  float score[kAttnChunk];  // (j1 - j0) scores, then their exps
  const int n = j1 - j0;
  const isa::Kernels& k = isa::kernels();
  k.dot_rows(score, kAttnChunk, &q, 1, kv.keys + j0, kv.offset, n, head_dim);  // q·k, each key's dot
  *m = chunk_weights(score, n, head_dim, ggml_scales, s);
  for (int d = 0; d < head_dim; d++) o[d] = 0.0f;
  k.pv_rows(&o, score, kAttnChunk, &n, 1, kv.values + j0, kv.offset, head_dim);  // p·v: o[d] = fma_rn(v_j[d], e_j, o[d])
}

void attention(float* out, const float* q, const KvRows& kv, int n_pos, int head_dim,
               float* o_chunk, bool ggml_scales) {
  attention_queries(&out, &q, &n_pos, 1, kv, head_dim, o_chunk, ggml_scales);
}

void attention_queries(float* const* out, const float* const* q, const int* n_pos, int nq, const KvRows& kv,
                       int head_dim, float* o_chunk, bool ggml_scales) {
  for (int i = 0; i < nq; i += kAttnQueries) {
    QueryGroup g{{out + i, q + i, n_pos + i, std::min(kAttnQueries, nq - i), kv.offset}, {}, {}};
    groups_by_chunk(&g, 1, kv.keys, kv.values, head_dim, o_chunk, ggml_scales, false);
  }
}

void attention_heads(const AttnGroup* groups, int n_groups, const float* const* keys, const float* const* values,
                     int head_dim, float* o_chunk, bool warm, bool ggml_scales) {
  std::vector<QueryGroup> g((size_t)n_groups);
  for (int i = 0; i < n_groups; i++) g[i].a = groups[i];
  groups_by_chunk(g.data(), n_groups, keys, values, head_dim, o_chunk, ggml_scales, warm);
}

}  // namespace oracle::ops
