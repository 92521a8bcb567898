// Deterministic device pipeline — see backend.h. Mirrors reference/compute/forward.cpp
// op for op; every kernel is a deterministic version from kernels/.
#include "optimized/backend.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "kernels/argmax.cuh"
#include "kernels/attention.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/embedding.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_ggml.cuh"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope.cuh"
#include "faults/fault.h"
#include "base/errors.h"
#include "reference/compute/qmatmul_ggml.h"

namespace oracle::optimized {

namespace k = oracle::kernels;

namespace {
void grow(Scratch& s, const Config& c, int n) {
  if (n <= s.rows) return;
  const size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
  s.tokens.resize(n), s.seqs.resize(n), s.positions.resize(n), s.argmax.resize(n);
  s.x.resize((size_t)n * c.dim), s.xb.resize((size_t)n * c.dim), s.proj.resize((size_t)n * c.dim);
  s.q.resize(n * q_dim), s.att.resize(n * q_dim);
  s.k.resize(n * kv_dim), s.v.resize(n * kv_dim);
  s.gate.resize((size_t)n * c.hidden_dim), s.up.resize((size_t)n * c.hidden_dim);
  s.attn_ws.resize(k::attention_workspace_floats(n, {c.n_heads, c.n_kv_heads, c.head_dim}, c.seq_len - 1));
  s.logits.resize((size_t)n * c.vocab_size);
  s.act.resize((size_t)n * sizeof(float) * std::max({(size_t)c.dim, q_dim, (size_t)c.hidden_dim}));
  s.rows = n;
}

// The attention grid's position bound of a graphed step: the chunk count rounded up
// to a power of two (at most the context's), so one graph per batch shape serves
// every step until the longest sequence crosses the next power of two of chunks.
// Any bound >= every position gives the same bits (kernels/attention.cuh).
int graph_pos_bound(int max_pos, int seq_len) {
  int chunks = 1;
  while (chunks < k::attention_chunks(max_pos)) chunks *= 2;
  return std::max(max_pos, std::min(chunks * k::kAttnChunk, seq_len) - 1);
}

// The ggml profile runs in deterministic mode on weights with a ggml CPU dot, each kept as the
// file's blocks (K a multiple of the block): refused otherwise, as the reference refuses them.
BackendOptions checked_options(const Model& model, BackendOptions o) {
  if (o.numerics != num::NumericsProfile::Ggml) return o;
  require_input(o.mode == Mode::Deterministic, "backend", "numerics",
                "the ggml profile runs in deterministic mode only (fast modes are canonical matmuls)");
  const Config& c = model.config;
  auto check = [&](const WeightMatrix& w, int K) {
    ops::ggml_dot_partner(w.type);  // InputError for a type with no ggml CPU dot
    require_input(K % dtype_block_elems(w.type) == 0, dtype_name(w.type), "numerics",
                  "the ggml profile needs K a multiple of the weight type's block");
  };
  check(model.weights.classifier, c.dim);
  for (const LayerWeights& l : model.weights.layers) {
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.w_gate, &l.w_up}) check(*w, c.dim);
    check(l.wo, c.n_heads * c.head_dim);
    check(l.w_down, c.hidden_dim);
  }
  o.keep_quantized = true;  // the integer dots read the file's blocks
  return o;
}
}  // namespace

Backend::Backend(const Model& model, const DeviceKvOptions& kv_options, const BackendOptions& options)
    : options_(checked_options(model, options)),
      model_(model, {options_.keep_quantized, options_.mode == Mode::Fast, ggml()}),
      kv_(model.config, kv_options) {
  if (options_.mode == Mode::Fast) fast_gemm_ = std::make_unique<kernels::FastGemm>();
}

void Backend::norm(float* out, const float* x, const float* w, int T) {
  const Config& c = config();
  if (ggml()) k::rmsnorm_ggml(out, x, w, T, c.dim, c.norm_eps, stream_.get());
  else k::rmsnorm(out, x, w, T, c.dim, c.norm_eps, stream_.get());
}

// Fast mode's cuBLAS takes the float32 matrices; every other matrix (and every matrix in
// deterministic mode) the one deterministic GEMV on its typed view.
void Backend::matmul(const char* op, float* out, const float* x, const DeviceMatrix& W, int T, int K, int N) {
  if (fast_gemm_ && W.type == DType::F32) {
    fast_gemm_->run(out, x, W.f32.get(), T, K, N, options_.precision, stream_.get());
    if (options_.audit) options_.audit->check(op, x, W.f32.get(), out, T, K, N);
    return;
  }
  if (ggml()) k::matmul_ggml(out, x, W.view(), T, K, N, s_.act.get(), stream_.get());
  else k::matmul(out, x, W.view(), T, K, N, stream_.get());
}

void Backend::emit(const char* name, int layer, const DeviceBuffer<float>& buf, int width, int first, int count) {
  if (!options_.trace || !options_.trace->emit) return;
  char full[64];
  std::snprintf(full, sizeof full, name, layer);
  std::vector<float> host((size_t)count * width);  // (count, width)
  kernels::check_cuda(cudaDeviceSynchronize(), "trace");
  buf.download(host.data(), host.size(), (size_t)first * width);
  for (int r = 0; r < count; r++)
    options_.trace->emit(full, row_pos_[first + r], std::span<const float>(&host[(size_t)r * width], (size_t)width));
}

// ---- attention block: norm, q/k/v, RoPE, KV store, paged attention, wo, residual ----
void Backend::attention_block(int l, int n, int max_pos) {
  const Config& c = config();
  const DeviceLayer& w = model_.layers[l];
  const int q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  norm(s_.xb.get(), s_.x.get(), w.attn_norm.get(), n);
  emit("blk.%d.attn_norm", l, s_.xb, c.dim, 0, n);
  matmul("attn_q", s_.q.get(), s_.xb.get(), w.wq, n, c.dim, q_dim);
  matmul("attn_k", s_.k.get(), s_.xb.get(), w.wk, n, c.dim, kv_dim);
  matmul("attn_v", s_.v.get(), s_.xb.get(), w.wv, n, c.dim, kv_dim);
  if (w.bq.size()) k::add_bias_rows(s_.q.get(), w.bq.get(), n, q_dim, stream_.get());  // qkv_bias models
  if (w.bk.size()) k::add_bias_rows(s_.k.get(), w.bk.get(), n, kv_dim, stream_.get());
  if (w.bv.size()) k::add_bias_rows(s_.v.get(), w.bv.get(), n, kv_dim, stream_.get());
  k::rope(s_.q.get(), s_.k.get(), s_.positions.get(), model_.rope_cos.get(), model_.rope_sin.get(), n,
          c.n_heads, c.n_kv_heads, c.head_dim, stream_.get());
  emit("blk.%d.q", l, s_.q, q_dim, 0, n);
  emit("blk.%d.k", l, s_.k, kv_dim, 0, n);
  emit("blk.%d.v", l, s_.v, kv_dim, 0, n);
  const k::PagedKvLayer layer = kv_.layer(l);
  k::kv_store(layer, s_.k.get(), s_.v.get(), s_.seqs.get(), s_.positions.get(), n, stream_.get(), ggml());
  k::attention(s_.att.get(), s_.q.get(), layer, s_.seqs.get(), s_.positions.get(), n, max_pos,
               {c.n_heads, c.n_kv_heads, c.head_dim, ggml()}, s_.attn_ws.get(), stream_.get());
  emit("blk.%d.attn_out", l, s_.att, q_dim, 0, n);
  matmul("attn_output", s_.proj.get(), s_.att.get(), w.wo, n, q_dim, c.dim);
  emit("blk.%d.attn_proj", l, s_.proj, c.dim, 0, n);
  k::residual_add(s_.x.get(), s_.proj.get(), (long long)n * c.dim, stream_.get());
}

// ---- feed-forward block: norm, gate/up, SwiGLU, down, residual ---------------------
void Backend::ffn_block(int l, int n) {
  const Config& c = config();
  const DeviceLayer& w = model_.layers[l];
  norm(s_.xb.get(), s_.x.get(), w.ffn_norm.get(), n);
  emit("blk.%d.ffn_norm", l, s_.xb, c.dim, 0, n);
  matmul("ffn_gate", s_.gate.get(), s_.xb.get(), w.w_gate, n, c.dim, c.hidden_dim);
  matmul("ffn_up", s_.up.get(), s_.xb.get(), w.w_up, n, c.dim, c.hidden_dim);
  emit("blk.%d.ffn_gate", l, s_.gate, c.hidden_dim, 0, n);
  emit("blk.%d.ffn_up", l, s_.up, c.hidden_dim, 0, n);
  k::swiglu(s_.gate.get(), s_.gate.get(), s_.up.get(), (long long)n * c.hidden_dim, stream_.get());
  emit("blk.%d.ffn_act", l, s_.gate, c.hidden_dim, 0, n);
  matmul("ffn_down", s_.proj.get(), s_.gate.get(), w.w_down, n, c.hidden_dim, c.dim);
  emit("blk.%d.ffn_out", l, s_.proj, c.dim, 0, n);
  k::residual_add(s_.x.get(), s_.proj.get(), (long long)n * c.dim, stream_.get());
  emit("blk.%d.resid", l, s_.x, c.dim, 0, n);
}

// Uploads the rows' tokens, sequences and positions and the block tables; returns the largest position.
int Backend::stage_rows(const std::vector<Row>& rows) {
  const int n = (int)rows.size();
  std::vector<int> tok(n), seq(n), pos(n);
  for (int i = 0; i < n; i++) tok[i] = rows[i].token, seq[i] = rows[i].seq, pos[i] = rows[i].pos;
  row_pos_ = pos;
  s_.tokens.upload(tok.data(), n);
  s_.seqs.upload(seq.data(), n);
  s_.positions.upload(pos.data(), n);
  kv_.sync_table();
  return *std::max_element(pos.begin(), pos.end());
}

// ---- rows through the model; logits of rows [first, n) ---------------------------------
std::vector<float> Backend::run_rows(std::vector<Row> rows, bool all_logits) {
  const Config& c = config();
  require_input(!rows.empty(), "backend", "tokens", "no tokens to run");
  for (const Row& r : rows)
    require_input(r.token >= 0 && r.token < c.vocab_size, "backend", "token",
                  "token id " + std::to_string(r.token) + " outside [0, " + std::to_string(c.vocab_size) + ")");
  std::map<int, int> per_seq;  // seq -> rows: checked whole, so no append below fails half way
  for (const Row& r : rows) per_seq[r.seq]++;
  const std::vector<std::pair<int, int>> counts(per_seq.begin(), per_seq.end());
  kv_.require_append(counts);
  for (Row& r : rows) r.pos = kv_.append(r.seq, std::span<const int>(&r.token, 1));
  const int n = (int)rows.size();
  if (n > s_.rows) graphs_.clear();  // the scratch moves: every captured pointer changes
  grow(s_, c, n);
  const int max_pos = stage_rows(rows);
  const int first = all_logits ? 0 : n - 1, n_out = n - first;
  // A decode step (one row per sequence, no trace or audit) replays the graph of its shape.
  if (options_.cuda_graphs && !options_.trace && !options_.audit && counts.size() == rows.size()) {
    const int bound = graph_pos_bound(max_pos, c.seq_len);
    const StepShape shape{n, first, fault::active(fault::Fault::BACKEND_GRAPH_KEY_IGNORES_BOUND) ? 0 : bound};
    graphs_.run(shape, stream_.get(), [&] { run_layers(n, first, bound); });  // FAULT: key without the bound
  } else {
    run_layers(n, first, max_pos);
  }
  last_first_ = first, last_rows_ = n_out;
  std::vector<float> logits((size_t)n_out * c.vocab_size);
  kernels::check_cuda(cudaDeviceSynchronize(), "forward");
  s_.logits.download(logits.data(), logits.size());
  return logits;
}

// Embedding, the layers and the head of n rows on stream_ (what a step graph records).
void Backend::run_layers(int n, int first, int max_pos) {
  const Config& c = config();
  const int n_out = n - first;
  k::embedding(s_.x.get(), model_.token_embedding.get(), s_.tokens.get(), n, c.vocab_size, c.dim, stream_.get());
  for (int l = 0; l < c.n_layers; l++) {
    attention_block(l, n, max_pos);
    ffn_block(l, n);
  }
  norm(s_.xb.get(), s_.x.get() + (size_t)first * c.dim, model_.final_norm.get(), n_out);
  matmul("output", s_.logits.get(), s_.xb.get(), model_.classifier, n_out, c.dim, c.vocab_size);
  if (options_.trace) {  // head rows sit at 0.. in xb/logits; their positions at first..
    row_pos_.erase(row_pos_.begin(), row_pos_.begin() + first);
    emit("output_norm", 0, s_.xb, c.dim, 0, n_out);
    emit("logits", 0, s_.logits, c.vocab_size, 0, n_out);
  }
}

std::vector<float> Backend::forward(int seq, std::span<const int> tokens, bool all_logits) {
  const int start = kv_.length(seq);
  std::vector<Row> rows;
  for (size_t i = 0; i < tokens.size(); i++) rows.push_back({seq, start + (int)i, tokens[i]});
  return run_rows(std::move(rows), all_logits);
}

std::vector<float> Backend::forward_batch(std::span<const int> seqs, std::span<const int> tokens) {
  require_input(seqs.size() == tokens.size(), "backend", "tokens", "one token per sequence expected");
  std::set<int> seen;
  std::vector<Row> rows;
  for (size_t i = 0; i < seqs.size(); i++) {
    require_input(seen.insert(seqs[i]).second, "backend", "seqs",
                  "sequence " + std::to_string(seqs[i]) + " appears twice in one step");
    rows.push_back({seqs[i], kv_.length(seqs[i]), tokens[i]});
  }
  return run_rows(std::move(rows), true);
}

std::vector<int> Backend::argmax_last() {
  std::vector<int> ids(last_rows_);
  if (last_rows_ == 0) return ids;
  k::argmax_rows(s_.argmax.get(), s_.logits.get(), last_rows_, config().vocab_size, stream_.get());
  s_.argmax.download(ids.data(), ids.size());
  return ids;
}

}  // namespace oracle::optimized
