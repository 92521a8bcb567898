// Forward pass over a KV cache: see forward.h and docs/numerics.md.
// forward() and forward_batch() both reduce to run_rows(): a list of
// (sequence, position, token) rows pushed through the layers together. Every
// op computes each row's outputs in the canonical order, so grouping rows
// (prefill, chunks, batches) or splitting them over threads changes no bit.
// Tensor parallelism (tensor_split.h): each rank computes its output rows of
// every matrix, whole and in the canonical order, and all-gathers them; with
// one rank the slices are the whole matrices and the gathers are copies.
#include "reference/compute/forward.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "faults/fault.h"
#include "base/errors.h"
#include "numerics/numerics.h"
#include "reference/compute/ops.h"
#include "reference/compute/qmatmul.h"
#include "reference/compute/qmatmul_ggml.h"
#include "reference/model/quant.h"
#include "reference/model/quantize_rows.h"
#include "reference/compute/rope_table.h"
#include "base/memory_budget.h"

namespace oracle {

namespace {

// ============================================================================
// Rows, scratch buffers, context
// ============================================================================
struct Row {
  int seq, pos, token;
};

// Widths with "local" are this rank's slice (tensor_split.h); the whole width with one rank.
struct RunState {
  int n = 0;                        // rows in this call
  std::vector<float> x;             // (n, dim) residual stream
  std::vector<float> xb;            // (n, dim) normed input of a block
  std::vector<float> q;             // (n, local n_heads * head_dim)
  std::vector<float> k, v;          // (n, local n_kv_heads * head_dim)
  std::vector<float> att_local;     // (n, local n_heads * head_dim) attention output of this rank's heads
  std::vector<float> att;           // (n, n_heads * head_dim) attention output, gathered
  std::vector<float> proj_local;    // (n, local dim) this rank's rows of wo / w_down
  std::vector<float> proj;          // (n, dim) output of wo / w_down, gathered
  std::vector<float> gate, up;      // (n, local hidden_dim); gate becomes the SwiGLU output
  std::vector<float> act;           // (n, hidden_dim) SwiGLU output, gathered
  std::vector<float> rope_cos, rope_sin;  // (n, head_dim / 2) RoPE table rows
  std::vector<const float*> kv_ptr;  // per run of rows of one sequence: K row pointers of positions 0..P, then V's
  std::vector<long> kv_at;           // (n) offset of row r's run's pointers in kv_ptr
  std::vector<int> kv_len;           // (n) P + 1 of row r's run: its V pointers start kv_len after its K's
};

struct Ctx {
  const Model& model;
  const Config& c;
  KvCache& kv;
  ThreadPool* pool;
  Trace* trace;
  std::vector<Row> rows;  // (n)
  const TensorSplit* split;         // null: one rank
  std::vector<SliceLayout> layouts;  // (ranks) every rank's slices, in rank order
  SliceLayout sl;                    // this rank's
  num::NumericsProfile numerics = num::NumericsProfile::Canonical;
};

bool ggml(const Ctx& cx) { return cx.numerics == num::NumericsProfile::Ggml; }

// ---- the ops whose order the numerics profile chooses (docs/numerics.md) ----
// out (T, N) = w (N, K) · x (T, K)
void mm(const Ctx& cx, float* out, const float* x, const WeightMatrix& w, int T, int K, int N) {
  if (ggml(cx)) ops::matmul_ggml(out, x, w, T, K, N, cx.pool);
  else ops::matmul(out, x, w, T, K, N, cx.pool);
}
void mm_jobs(const Ctx& cx, std::span<const ops::MatmulJob> jobs, const float* x, int T, int K) {
  if (ggml(cx)) ops::matmul_jobs_ggml(jobs, x, T, K, cx.pool);
  else ops::matmul_jobs(jobs, x, T, K, cx.pool);
}
// out, x (T, n) rows normed by w (n)
void norm_rows(const Ctx& cx, float* out, const float* x, const float* w, int T, int n) {
  for (int r = 0; r < T; r++) {
    if (ggml(cx)) ops::rmsnorm_ggml(&out[(size_t)r * n], &x[(size_t)r * n], w, n, cx.c.norm_eps);
    else ops::rmsnorm(&out[(size_t)r * n], &x[(size_t)r * n], w, n, cx.c.norm_eps);
  }
}

int n_ranks(const Ctx& cx) { return cx.split ? cx.split->ranks : 1; }

// This rank's rows of a (N, K) matrix, as a matrix of rows.size() rows.
WeightMatrix rows_of(const WeightMatrix& w, int K, RowRange rows) {
  return WeightMatrix(w.type, w.data + (int64_t)rows.begin * dtype_row_bytes(w.type, K));
}

// full (T, width) from every rank's (T, its slice) block: rank r's block fills
// the columns layouts[r].*field of each row, in rank order. Exact copies; with
// one rank, a copy of `local`, or nothing when the op wrote into `full` already
// (slice_out).
void gather_cols(const Ctx& cx, RowRange SliceLayout::*field, const std::vector<float>& local, int T, int width,
                 std::vector<float>& full) {
  if (n_ranks(cx) == 1) {
    if (&local != &full) std::memcpy(full.data(), local.data(), sizeof(float) * (size_t)T * width);
    return;
  }
  std::vector<int> counts;  // (ranks)
  for (const SliceLayout& s : cx.layouts) counts.push_back(T * (s.*field).size());
  std::vector<float> blocks((size_t)T * width);  // rank-major: rank r's (T, its rows)
  cx.split->all_gather(std::span<const float>(local.data(), (size_t)T * (cx.sl.*field).size()), counts,
                       blocks.data());
  size_t at = 0;
  for (const SliceLayout& s : cx.layouts) {
    const RowRange r = s.*field;
    for (int t = 0; t < T; t++)
      std::memcpy(&full[(size_t)t * width + r.begin], &blocks[at + (size_t)t * r.size()], sizeof(float) * r.size());
    at += (size_t)T * r.size();
  }
}

// Where an op writes this rank's slice: with one rank the slice is the whole
// matrix, so straight into the gathered buffer (gather_cols then copies nothing).
std::vector<float>& slice_out(const Ctx& cx, std::vector<float>& local, std::vector<float>& full) {
  return n_ranks(cx) == 1 ? full : local;
}

void emit(const Ctx& cx, const char* name, int layer, const std::vector<float>& buf, int width) {
  if (!cx.trace || !cx.trace->emit) return;
  char full[64];
  std::snprintf(full, sizeof full, name, layer);
  for (size_t r = 0; r < cx.rows.size(); r++)
    cx.trace->emit(full, cx.rows[r].pos,
                   std::span<const float>(buf.data() + r * width, (size_t)width));
}

void alloc_state(const Ctx& cx, int n, RunState& st) {
  const Config& c = cx.c;
  const SliceLayout& s = cx.sl;
  st.n = n;
  st.x.resize((size_t)n * c.dim);
  st.xb.resize((size_t)n * c.dim);
  st.q.resize((size_t)n * s.q_rows.size());
  st.k.resize((size_t)n * s.kv_rows.size());
  st.v.resize((size_t)n * s.kv_rows.size());
  st.att_local.resize((size_t)n * s.q_rows.size());
  st.att.resize((size_t)n * c.n_heads * c.head_dim);
  st.proj_local.resize((size_t)n * s.dim_rows.size());
  st.proj.resize((size_t)n * c.dim);
  st.gate.resize((size_t)n * s.hidden_rows.size());
  st.up.resize((size_t)n * s.hidden_rows.size());
  st.act.resize((size_t)n * c.hidden_dim);
  st.rope_cos.resize((size_t)n * (c.head_dim / 2));
  st.rope_sin.resize((size_t)n * (c.head_dim / 2));
  st.kv_at.resize(n);
  st.kv_len.resize(n);
}

// ============================================================================
// Embedding and RoPE rows
// ============================================================================
// Row `token` of the embedding, dequantized exactly (a copy when F32).
void embed(const Ctx& cx, RunState& st) {
  const WeightMatrix& e = cx.model.weights.token_embedding;  // (vocab_size, dim)
  const int64_t row_bytes = dtype_row_bytes(e.type, cx.c.dim);
  for (int r = 0; r < st.n; r++)
    dequantize_row(e.type, e.data + (int64_t)cx.rows[r].token * row_bytes, cx.c.dim,
                   &st.x[(size_t)r * cx.c.dim]);
}

void rope_rows(const Ctx& cx, RunState& st) {
  int half = cx.c.head_dim / 2;
  const bool consecutive = fault::active(fault::Fault::BATCH_ROPE_CONSECUTIVE);  // FAULT: rows[0].pos + r
  for (int r = 0; r < st.n; r++) {  // plain or scaled table (rope_table.h); the ggml profile's own
    const int pos = consecutive ? cx.rows[0].pos + r : cx.rows[r].pos;
    if (ggml(cx)) rope_table_row_ggml(cx.c, pos, &st.rope_cos[(size_t)r * half], &st.rope_sin[(size_t)r * half]);
    else rope_table_row(cx.c, pos, &st.rope_cos[(size_t)r * half], &st.rope_sin[(size_t)r * half]);
  }
}

// qkv_bias models: y[r] += b after the projection (one add_rn per element).
void add_bias_rows(float* y, const float* b, int T, int n) {  // y (T, n), b (n): as kernels::add_bias_rows
  if (!b) return;
  for (int r = 0; r < T; r++) ops::add_bias(&y[(size_t)r * n], b, n);
}

// ============================================================================
// Attention block
// ============================================================================
// Stores row r's k, v at its position, then gathers the K/V row pointers of
// each run of consecutive rows of one sequence: positions 0..P, P the run's
// last position (rows of one call see each other's K/V; a row reads its prefix).
void store_and_gather_kv(const Ctx& cx, int layer, RunState& st) {
  int kv_dim = cx.sl.kv_rows.size();  // this rank's kv heads (the cache holds only these)
  for (int r = 0; r < st.n; r++) {
    const Row& row = cx.rows[r];
    std::memcpy(cx.kv.key_mut(row.seq, layer, row.pos), &st.k[(size_t)r * kv_dim], sizeof(float) * kv_dim);
    std::memcpy(cx.kv.value_mut(row.seq, layer, row.pos), &st.v[(size_t)r * kv_dim], sizeof(float) * kv_dim);
    if (cx.kv.options().int8) {  // int8 KV-cache mode: store what an I8_ROW cache would hold
      int8_row_roundtrip(cx.kv.key_mut(row.seq, layer, row.pos), kv_dim);
      int8_row_roundtrip(cx.kv.value_mut(row.seq, layer, row.pos), kv_dim);
    }
    if (ggml(cx)) {  // ggml profile: llama.cpp's default F16 K and V cache
      ops::fp16_roundtrip(cx.kv.key_mut(row.seq, layer, row.pos), kv_dim);
      ops::fp16_roundtrip(cx.kv.value_mut(row.seq, layer, row.pos), kv_dim);
    }
  }
  st.kv_ptr.clear();  // keeps its capacity from the previous layer
  for (int r0 = 0, r1; r0 < st.n; r0 = r1) {
    const int seq = cx.rows[r0].seq;
    int last = cx.rows[r0].pos;
    for (r1 = r0 + 1; r1 < st.n && cx.rows[r1].seq == seq; r1++) last = std::max(last, cx.rows[r1].pos);
    const long at = (long)st.kv_ptr.size();
    for (int j = 0; j <= last; j++) st.kv_ptr.push_back(cx.kv.key(seq, layer, j));
    for (int j = 0; j <= last; j++) st.kv_ptr.push_back(cx.kv.value(seq, layer, j));
    for (int r = r0; r < r1; r++) st.kv_at[r] = at, st.kv_len[r] = last + 1;
  }
}

// The j-th task of the attention order: blocks from both ends in turn
// (0, n-1, 1, n-2, ...). A prefill row's cost grows with its position; the
// threads claim blocks in this order, so neither is left alone with the longest
// rows at the end (with fixed ranges in row order the last of 2 threads got ~3/4
// of the keys). Which thread computes a query changes none of its bits.
int zigzag_row(int j, int n) { return j % 2 == 0 ? j / 2 : n - 1 - j / 2; }

// Rows per attention task: enough of a run's rows to fill up to kAttnQueries
// queries with one kv head's query heads, a multiple of 4 queries where one
// exists (dot_rows's 4 x 4 tiles).
int rows_per_task(int group) {
  const int most = std::max(1, ops::kAttnQueries / group);
  for (int r = most; r >= 1; r--)
    if (r * group % 4 == 0) return r;
  return most;
}

// Row blocks [r0, r1) of at most rows_per_task rows, each within one run of a sequence.
std::vector<std::pair<int, int>> attention_blocks(const RunState& st, int per) {
  std::vector<std::pair<int, int>> blocks;
  for (int r0 = 0, r1; r0 < st.n; r0 = r1) {
    for (r1 = r0 + 1; r1 < st.n && r1 - r0 < per && st.kv_at[r1] == st.kv_at[r0];) r1++;
    blocks.push_back({r0, r1});
  }
  return blocks;
}

// This rank's heads as attention sees them: local query head h is query head
// q0 + h and reads kv head (q0 + h) / group of the cache, which holds this
// rank's kv heads from kv0; kv heads [kv_first, kv_first + n_kv) are read.
struct HeadLayout {
  int head_dim, q_dim, heads, group, q0, kv0, kv_first, n_kv;
};
HeadLayout head_layout(const Ctx& cx) {
  const Config& c = cx.c;
  HeadLayout L;
  L.head_dim = c.head_dim, L.q_dim = cx.sl.q_rows.size(), L.heads = L.q_dim / c.head_dim;
  L.group = c.n_heads / c.n_kv_heads, L.q0 = cx.sl.q_rows.begin / c.head_dim, L.kv0 = cx.sl.kv_heads.begin;
  L.kv_first = L.q0 / L.group, L.n_kv = (L.q0 + L.heads - 1) / L.group - L.kv_first + 1;
  return L;
}

// The queries of rows [r0, r1) for kv heads [g0, g1): each kv head's query
// heads times the rows, in query groups of at most kAttnQueries
// (ops::AttnGroup). out and q: (n, q_dim), this rank's heads.
struct BlockQueries {
  std::vector<float*> out;
  std::vector<const float*> q;
  std::vector<int> n_pos;
  std::vector<ops::AttnGroup> groups;  // pointing into the three above

  void gather(const Ctx& cx, const HeadLayout& L, float* att, const float* qs, int r0, int r1, int g0, int g1) {
    out.clear(), q.clear(), n_pos.clear(), groups.clear();
    const size_t most = (size_t)(r1 - r0) * L.heads;  // no reallocation: the groups' pointers stay valid
    out.reserve(most), q.reserve(most), n_pos.reserve(most);
    for (int g = g0; g < g1; g++) {
      const int h0 = std::max(0, g * L.group - L.q0), h1 = std::min(L.heads, (g + 1) * L.group - L.q0);
      const int first = (int)out.size();
      for (int r = r0; r < r1; r++)
        for (int h = h0; h < h1; h++) {
          const size_t at = (size_t)r * L.q_dim + (size_t)h * L.head_dim;
          out.push_back(att + at), q.push_back(qs + at), n_pos.push_back(cx.rows[r].pos + 1);
        }
      for (int i = first; i < (int)out.size(); i += ops::kAttnQueries)
        groups.push_back({&out[i], &q[i], &n_pos[i], std::min((int)out.size() - i, ops::kAttnQueries),
                          (g - L.kv0) * L.head_dim});
    }
  }
};

// One task per (row block, kv head of this rank); a thread's consecutive tasks
// of one block go chunk by chunk across their kv heads (ops::attention_heads),
// so each K/V chunk is read once for all their queries, and a decode step reads
// each position's K/V row once, whole (warmed into cache first: its rows come
// from memory).
void attend(const Ctx& cx, RunState& st) {
  const HeadLayout L = head_layout(cx);
  std::vector<float>& att = slice_out(cx, st.att_local, st.att);  // (n, q_dim)
  const auto blocks = attention_blocks(st, rows_per_task(L.group));
  const int n_kv = L.n_kv;
  auto tasks = [&](int begin, int end) {
    std::vector<float> o_chunk((size_t)ops::kAttnQueries * L.head_dim);  // (queries, head_dim)
    BlockQueries bq;
    for (int task = begin, next; task < end; task = next) {
      const int b = task / n_kv;  // this block's tasks [task, next): kv heads kv_first + task % n_kv on
      next = std::min(end, (b + 1) * n_kv);
      const auto [r0, r1] = blocks[zigzag_row(b, (int)blocks.size())];
      bq.gather(cx, L, att.data(), st.q.data(), r0, r1, L.kv_first + task % n_kv, L.kv_first + (next - 1) % n_kv + 1);
      const float* const* p = &st.kv_ptr[st.kv_at[r0]];
      ops::attention_heads(bq.groups.data(), (int)bq.groups.size(), p, p + st.kv_len[r0], L.head_dim, o_chunk.data(),
                           st.n == 1, ggml(cx));
    }
  };
  const int n_tasks = (int)blocks.size() * n_kv;
  if (st.n > 1) cx.pool->parallel_chunks(n_tasks, n_kv, tasks);  // one block's kv heads per chunk
  else cx.pool->parallel_for(n_tasks, tasks);  // decode: one fixed range of kv heads per thread
}

void attention_block(const Ctx& cx, int l, RunState& st) {
  const Config& c = cx.c;
  const LayerWeights& w = cx.model.weights.layers[l];
  const SliceLayout& s = cx.sl;
  int q_dim = s.q_rows.size(), kv_dim = s.kv_rows.size(), half = c.head_dim / 2;  // this rank's heads
  norm_rows(cx, st.xb.data(), st.x.data(), w.attn_norm, st.n, c.dim);
  emit(cx, "blk.%d.attn_norm", l, st.xb, c.dim);
  const ops::MatmulJob qkv[] = {{st.q.data(), rows_of(w.wq, c.dim, s.q_rows), q_dim},
                                 {st.k.data(), rows_of(w.wk, c.dim, s.kv_rows), kv_dim},
                                 {st.v.data(), rows_of(w.wv, c.dim, s.kv_rows), kv_dim}};
  mm_jobs(cx, qkv, st.xb.data(), st.n, c.dim);
  add_bias_rows(st.q.data(), w.bq ? w.bq + s.q_rows.begin : nullptr, st.n, q_dim);
  add_bias_rows(st.k.data(), w.bk ? w.bk + s.kv_rows.begin : nullptr, st.n, kv_dim);
  add_bias_rows(st.v.data(), w.bv ? w.bv + s.kv_rows.begin : nullptr, st.n, kv_dim);
  for (int r = 0; r < st.n; r++) {
    const float *cr = &st.rope_cos[(size_t)r * half], *sr = &st.rope_sin[(size_t)r * half];
    ops::rope_apply(&st.q[(size_t)r * q_dim], q_dim / c.head_dim, c.head_dim, cr, sr);
    ops::rope_apply(&st.k[(size_t)r * kv_dim], kv_dim / c.head_dim, c.head_dim, cr, sr);
  }
  emit(cx, "blk.%d.q", l, st.q, q_dim);
  emit(cx, "blk.%d.k", l, st.k, kv_dim);
  emit(cx, "blk.%d.v", l, st.v, kv_dim);
  store_and_gather_kv(cx, l, st);
  attend(cx, st);
  const int q_all = c.n_heads * c.head_dim;
  gather_cols(cx, &SliceLayout::q_rows, slice_out(cx, st.att_local, st.att), st.n, q_all, st.att);
  emit(cx, "blk.%d.attn_out", l, st.att, q_all);
  std::vector<float>& proj = slice_out(cx, st.proj_local, st.proj);
  mm(cx, proj.data(), st.att.data(), rows_of(w.wo, q_all, s.dim_rows), st.n, q_all, s.dim_rows.size());
  gather_cols(cx, &SliceLayout::dim_rows, proj, st.n, c.dim, st.proj);
  emit(cx, "blk.%d.attn_proj", l, st.proj, c.dim);
  for (int r = 0; r < st.n; r++) ops::residual(&st.x[(size_t)r * c.dim], &st.proj[(size_t)r * c.dim], c.dim);
}

// ============================================================================
// Feed-forward block
// ============================================================================
void ffn_block(const Ctx& cx, int l, RunState& st) {
  const Config& c = cx.c;
  const LayerWeights& w = cx.model.weights.layers[l];
  norm_rows(cx, st.xb.data(), st.x.data(), w.ffn_norm, st.n, c.dim);
  emit(cx, "blk.%d.ffn_norm", l, st.xb, c.dim);
  const RowRange hid = cx.sl.hidden_rows;  // this rank's rows of w_gate / w_up
  const ops::MatmulJob gate_up[] = {{st.gate.data(), rows_of(w.w_gate, c.dim, hid), hid.size()},
                                     {st.up.data(), rows_of(w.w_up, c.dim, hid), hid.size()}};
  mm_jobs(cx, gate_up, st.xb.data(), st.n, c.dim);
  emit(cx, "blk.%d.ffn_gate", l, st.gate, hid.size());  // (traced with one rank only)
  emit(cx, "blk.%d.ffn_up", l, st.up, hid.size());
  std::vector<float>& act = slice_out(cx, st.gate, st.act);  // in place with several ranks
  const size_t h = hid.size();  // elementwise: rows split over the pool, each element as in one call
  cx.pool->parallel_for(st.n, [&](int r0, int r1) {
    ops::swiglu(&act[r0 * h], &st.gate[r0 * h], &st.up[r0 * h], (r1 - r0) * (int)h);
  });
  gather_cols(cx, &SliceLayout::hidden_rows, act, st.n, c.hidden_dim, st.act);
  emit(cx, "blk.%d.ffn_act", l, st.act, c.hidden_dim);
  std::vector<float>& proj = slice_out(cx, st.proj_local, st.proj);
  mm(cx, proj.data(), st.act.data(), rows_of(w.w_down, c.hidden_dim, cx.sl.dim_rows), st.n, c.hidden_dim,
     cx.sl.dim_rows.size());
  gather_cols(cx, &SliceLayout::dim_rows, proj, st.n, c.dim, st.proj);
  emit(cx, "blk.%d.ffn_out", l, st.proj, c.dim);
  for (int r = 0; r < st.n; r++) ops::residual(&st.x[(size_t)r * c.dim], &st.proj[(size_t)r * c.dim], c.dim);
  emit(cx, "blk.%d.resid", l, st.x, c.dim);
}

// ============================================================================
// Final norm + LM head on the rows [first, n) that return logits
// ============================================================================
// The planted TP_RANK_SUM_ORDER fault's matmul: each output a plain left-to-right
// sum (not the canonical 16-lane order). out (T, N), x (T, K), w (N, K).
void sequential_rows(float* out, const float* x, const WeightMatrix& w, int T, int K, int N) {
  std::vector<float> row(K);  // (K) one dequantized row
  for (int i = 0; i < N; i++) {
    dequantize_row(w.type, w.data + (int64_t)i * dtype_row_bytes(w.type, K), K, row.data());
    for (int t = 0; t < T; t++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += row[k] * x[(size_t)t * K + k];
      out[(size_t)t * N + i] = acc;
    }
  }
}

std::vector<float> head(Ctx& cx, RunState& st, int first) {
  const Config& c = cx.c;
  int n_out = st.n - first;
  std::vector<float> xn((size_t)n_out * c.dim);  // (n_out, dim)
  norm_rows(cx, xn.data(), &st.x[(size_t)first * c.dim], cx.model.weights.final_norm, n_out, c.dim);
  const RowRange vr = cx.sl.vocab_rows;  // this rank's rows of the classifier
  std::vector<float> local((size_t)n_out * vr.size());      // (n_out, local vocab_size)
  const WeightMatrix cls = rows_of(cx.model.weights.classifier, c.dim, vr);
  mm(cx, local.data(), xn.data(), cls, n_out, c.dim, vr.size());
  if (fault::active(fault::Fault::TP_RANK_SUM_ORDER) && n_ranks(cx) > 1 && cx.split->rank == n_ranks(cx) - 1)
    sequential_rows(local.data(), xn.data(), cls, n_out, c.dim, vr.size());  // FAULT: one rank sums left to right
  std::vector<float> logits;  // (n_out, vocab_size); one rank: `local` itself, not a copy
  if (n_ranks(cx) == 1) {
    logits = std::move(local);
  } else {
    logits.resize((size_t)n_out * c.vocab_size);
    gather_cols(cx, &SliceLayout::vocab_rows, local, n_out, c.vocab_size, logits);
  }
  cx.rows.erase(cx.rows.begin(), cx.rows.begin() + first);  // trace only the returned rows
  emit(cx, "output_norm", 0, xn, c.dim);
  emit(cx, "logits", 0, logits, c.vocab_size);
  return logits;
}

// Admission control: the scratch of this call (forward.h activation_bytes).
void admit_call(const Ctx& cx, bool all_logits, int first_logit) {
  std::vector<int> positions;  // (n)
  for (const Row& r : cx.rows) positions.push_back(r.pos);
  const uint64_t logit_rows = all_logits ? cx.rows.size() - first_logit : 1;
  admit_activations(cx.c, cx.sl, n_ranks(cx), positions, logit_rows, memory_available());
}

// No value's exponent field all ones (inf or NaN): a branch-free loop the compiler vectorizes.
bool all_finite(const std::vector<float>& buf) {
  uint32_t bad = 0;
  for (float v : buf) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bad |= (bits & 0x7F800000u) == 0x7F800000u;
  }
  return bad == 0;
}

// Non-finite values in the residual stream or the logits (the weights were
// checked finite at load, so an activation overflowed): InputError naming the
// model file, op, layer and position — greedy would otherwise skip NaN logits silently.
void check_finite(const Ctx& cx, const std::vector<float>& buf, int width, const char* name, int layer, int row0 = 0) {
  if (all_finite(buf)) return;  // the usual case; else find the first non-finite value for the message
  for (size_t i = 0; i < buf.size(); i++) {
    if (std::isfinite(buf[i])) continue;
    char field[64];
    std::snprintf(field, sizeof field, name, layer);
    const size_t r = row0 + i / (size_t)width;
    throw InputError(cx.model.path.empty() ? "forward" : cx.model.path, field,  // the model file: its weights overflow
                     std::string(buf[i] != buf[i] ? "NaN" : "infinite") + " value at position " +
                         std::to_string(cx.rows[r].pos) + " (element " + std::to_string(i % (size_t)width) +
                         "): an activation overflowed float32 (in forward)");
  }
}

// all_logits with a sink, one rank, no trace: the head in blocks of logits_block rows,
// each checked finite and handed to the sink, so only one block of logits is live
// (every row's bits as in one call: rows are independent, forward.h). Returns {}.
std::vector<float> head_blocks(Ctx& cx, RunState& st, int first, const ForwardOptions& opt) {
  const Config& c = cx.c;
  const int n_out = st.n - first, block = std::max(1, opt.logits_block);
  cx.rows.erase(cx.rows.begin(), cx.rows.begin() + first);
  std::vector<float> xn((size_t)n_out * c.dim);  // (n_out, dim)
  norm_rows(cx, xn.data(), &st.x[(size_t)first * c.dim], cx.model.weights.final_norm, n_out, c.dim);
  const WeightMatrix cls = rows_of(cx.model.weights.classifier, c.dim, cx.sl.vocab_rows);
  for (int r0 = 0; r0 < n_out; r0 += block) {
    const int nb = std::min(block, n_out - r0);
    std::vector<float> logits((size_t)nb * c.vocab_size);  // (nb, vocab_size)
    mm(cx, logits.data(), &xn[(size_t)r0 * c.dim], cls, nb, c.dim, c.vocab_size);
    check_finite(cx, logits, c.vocab_size, "logits", 0, r0);
    opt.logits_sink(r0, logits);
  }
  return {};
}

// Checks ids and room, then appends every row's token to the cache (all or none).
void validate_and_append(Ctx& cx) {
  for (Row& row : cx.rows) {  // the messages are built only on failure
    if (!(row.token >= 0 && row.token < cx.c.vocab_size))
      require_input(false, "forward", "token",
                    "token id " + std::to_string(row.token) + " outside [0, " + std::to_string(cx.c.vocab_size) + ")");
    if (!(row.pos < cx.c.seq_len))
      require_input(false, "forward", "position",
                    "position " + std::to_string(row.pos) + " exceeds the context length " +
                        std::to_string(cx.c.seq_len));
  }
  std::vector<int> start;  // (n) lengths before this call, to undo a failed append
  for (Row& row : cx.rows) start.push_back(cx.kv.length(row.seq));
  try {
    for (Row& row : cx.rows) row.pos = cx.kv.append(row.seq, row.token);
  } catch (...) {  // e.g. the block pool is exhausted: leave the cache as it was
    for (size_t r = cx.rows.size(); r-- > 0;) cx.kv.truncate(cx.rows[r].seq, start[r]);
    throw;
  }
}

// Every rank's slices; a split needs a trace-free, float KV cache of this rank's heads.
void check_split(Ctx& cx) {
  const int ranks = n_ranks(cx), rank = cx.split ? cx.split->rank : 0;
  require_input(ranks >= 1 && rank >= 0 && rank < ranks, "forward", "tp", "rank outside [0, ranks)");
  for (int r = 0; r < ranks; r++) cx.layouts.push_back(slice_layout(cx.c, r, ranks));
  cx.sl = cx.layouts[rank];
  if (ranks == 1) return;
  require_input(cx.split->all_gather != nullptr, "forward", "tp", "a tensor split needs an all_gather");
  require_input(cx.trace == nullptr, "forward", "tp", "tracing is one-rank only (oracle diff runs without --tp)");
  require_input(!cx.kv.options().int8, "forward", "tp",
                "the int8 KV-cache mode scales whole rows: not available with --tp");
}

std::vector<float> run_rows(const Model& model, KvCache& kv, std::vector<Row> rows,
                            bool all_logits, const ForwardOptions& opt) {
  require_input(!rows.empty(), "forward", "tokens", "no tokens to run");
  require_input(opt.first_logit >= 0 && (!all_logits || opt.first_logit < (int)rows.size()), "forward",
                "first_logit", "first_logit " + std::to_string(opt.first_logit) + " outside the call's rows");
  std::unique_ptr<ThreadPool> own_pool;
  ThreadPool* pool = opt.pool;
  if (!pool) pool = (own_pool = std::make_unique<ThreadPool>(opt.threads)).get();
  Ctx cx{model, model.config, kv, pool, opt.trace, std::move(rows), opt.split, {}, {}, opt.numerics};
  require_input(!(ggml(cx) && kv.options().int8), "forward", "numerics",
                "the ggml profile keeps llama.cpp's F16 KV cache: not with the int8 KV-cache mode");
  check_split(cx);
  admit_call(cx, all_logits, all_logits ? opt.first_logit : 0);
  validate_and_append(cx);
  std::vector<std::pair<int, int>> appended;  // (seq, length before): undone when a check fails
  for (const Row& row : cx.rows) appended.push_back({row.seq, row.pos});
  try {
    RunState st;
    alloc_state(cx, (int)cx.rows.size(), st);
    embed(cx, st);
    rope_rows(cx, st);
    for (int l = 0; l < cx.c.n_layers; l++) {
      attention_block(cx, l, st);
      check_finite(cx, st.x, cx.c.dim, "blk.%d.attn_out", l);
      ffn_block(cx, l, st);
      check_finite(cx, st.x, cx.c.dim, "blk.%d.ffn_out", l);
    }
    if (all_logits && opt.logits_sink && n_ranks(cx) == 1 && !cx.trace) return head_blocks(cx, st, opt.first_logit, opt);
    std::vector<float> logits = head(cx, st, all_logits ? opt.first_logit : st.n - 1);
    check_finite(cx, logits, cx.c.vocab_size, "logits", 0);
    return logits;
  } catch (...) {  // a failed call leaves the cache unchanged (forward.h)
    for (size_t r = appended.size(); r-- > 0;)
      if (cx.kv.length(appended[r].first) > appended[r].second) cx.kv.truncate(appended[r].first, appended[r].second);
    throw;
  }
}

}  // namespace

// ============================================================================
// Public entry points
// ============================================================================
std::vector<float> forward(const Model& model, KvCache& kv, int seq, std::span<const int> tokens,
                           const ForwardOptions& options) {
  int start = kv.length(seq);
  std::vector<Row> rows;
  for (size_t i = 0; i < tokens.size(); i++) rows.push_back({seq, start + (int)i, tokens[i]});
  return run_rows(model, kv, std::move(rows), options.all_logits, options);
}

std::vector<float> forward_batch(const Model& model, KvCache& kv, std::span<const int> seqs,
                                 std::span<const int> tokens, const ForwardOptions& options) {
  require_input(seqs.size() == tokens.size(), "forward_batch", "tokens",
                "one token per sequence expected");
  std::set<int> seen;
  std::vector<Row> rows;
  for (size_t i = 0; i < seqs.size(); i++) {
    require_input(seen.insert(seqs[i]).second, "forward_batch", "seqs",
                  "sequence " + std::to_string(seqs[i]) + " appears twice in one step");
    rows.push_back({seqs[i], kv.length(seqs[i]), tokens[i]});
  }
  return run_rows(model, kv, std::move(rows), true, options);
}

uint64_t activation_bytes(const Config& c, const SliceLayout& s, int ranks, std::span<const int> positions,
                          uint64_t logit_rows) {
  const uint64_t whole = 3 * (uint64_t)c.dim + (uint64_t)c.n_heads * c.head_dim + (uint64_t)c.hidden_dim;
  const uint64_t local = 2 * (uint64_t)s.q_rows.size() + 2 * (uint64_t)s.kv_rows.size() +
                         (uint64_t)s.dim_rows.size() + 2 * (uint64_t)s.hidden_rows.size();
  const uint64_t per_row = whole + local + 2 * (uint64_t)(c.head_dim / 2);  // floats
  uint64_t pointers = 0;
  for (int pos : positions) pointers += 2 * ((uint64_t)pos + 1);
  const uint64_t head = (uint64_t)c.dim + s.vocab_rows.size() + (ranks > 1 ? (uint64_t)c.vocab_size : 0);
  const auto add_sat = [](uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; };
  const uint64_t floats = add_sat(mul_sat(positions.size(), per_row), mul_sat(logit_rows, head));
  return add_sat(add_sat(mul_sat(floats, sizeof(float)), mul_sat(pointers, sizeof(const float*))),
                 mul_sat(positions.size(), sizeof(long)));
}

void admit_activations(const Config& c, const SliceLayout& s, int ranks, std::span<const int> positions,
                       uint64_t logit_rows, const MemoryAvailable& available) {
  const uint64_t bytes = activation_bytes(c, s, ranks, positions, logit_rows);
  if (bytes <= available.bytes) return;  // every forward call: the message is built only on refusal
  admit_allocation(bytes, available, "forward", "tokens",
                   "the activations of " + std::to_string(positions.size()) + " tokens",
                   "use a shorter prompt or --prefill-chunk");
}

}  // namespace oracle
