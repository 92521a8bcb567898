#pragma once
// ============================================================================
// Backend: the deterministic pipeline on the device (docs/cuda.md).
// The same row model as reference/compute/forward.cpp: a call pushes a list of
// (sequence, position, token) rows through the layers together, each op a
// deterministic kernel from kernels/, so the logits are bit-identical to
// oracle::forward / forward_batch for any batch composition or prefill split.
// Built twice from the same sources: on the emulated kernels
// (oracle_optimized_emu, always) and on the GPU (oracle_optimized_cuda).
// ============================================================================
#include <memory>
#include <span>
#include <vector>

#include "kernels/gemm_fast.cuh"
#include "reference/compute/forward.h"

#include "optimized/device_graph.h"
#include "optimized/device_kv.h"
#include "optimized/device_model.h"
#include "optimized/fast_audit.h"

namespace oracle::optimized {

// Per-call activations; grown to the largest row count seen.
struct Scratch {
  int rows = 0;                     // capacity in rows
  DeviceBuffer<int> tokens, seqs, positions;  // (rows)
  DeviceBuffer<float> x, xb;        // (rows, dim)
  DeviceBuffer<float> q, att;       // (rows, n_heads * head_dim)
  DeviceBuffer<float> k, v;         // (rows, n_kv_heads * head_dim)
  DeviceBuffer<float> proj;         // (rows, dim)
  DeviceBuffer<float> gate, up;     // (rows, hidden_dim)
  DeviceBuffer<float> attn_ws;      // attention_workspace_floats(rows, ..., seq_len - 1)
  DeviceBuffer<float> logits;       // (rows, vocab_size)
  DeviceBuffer<int> argmax;         // (rows)
  DeviceBuffer<uint8_t> act;        // ggml profile: (rows, 4 * max(dim, q_dim, hidden_dim)) bytes, the
                                    // activation rows in a weight's dot partner (kernels/matmul_ggml.cuh)
};

// Deterministic: every op a canonical kernel, logits bit-identical to the
// reference. Fast: the matmuls go through FastGemm (cuBLAS on the GPU), the
// other ops stay canonical; held to the bounds in docs/cuda.md, not to bits.
enum class Mode { Deterministic, Fast };

struct BackendOptions {
  Mode mode = Mode::Deterministic;
  // Stored types stay the file's blocks on the device (the dequantizing GEMV, same bits);
  // in Fast mode F16 / BF16 are still float32, so cuBLAS runs on them.
  bool keep_quantized = false;
  // Observer of the same named intermediates as oracle::forward ("blk.3.q",
  // ..., "logits"; values copied back from the device), for `oracle diff`.
  Trace* trace = nullptr;
  kernels::FastPrecision precision = kernels::FastPrecision::F32;  // Fast mode only
  // Decode steps (one row per sequence, no trace) run as a CUDA graph captured
  // once per shape (device_graph.h); false: every launch issued eagerly.
  bool cuda_graphs = true;
  // Fast mode: every fast matmul checked against its derived bound (fast_audit.h).
  FastAudit* audit = nullptr;
  // Operation orders (numerics/profile.h). Ggml (docs/numerics.md §5.2, docs/cuda.md "The
  // ggml profile on the device"): kernels::matmul_ggml (activations quantized to the weight's
  // ggml dot partner, dp4a integer block dots), rmsnorm_ggml, the F16 K/V store, ggml's
  // attention scales and RoPE table; deterministic mode only, every matrix kept as the
  // file's blocks. Refused (InputError, field "numerics") in Fast mode and for weights
  // without a ggml dot, as the reference refuses them.
  num::NumericsProfile numerics = num::NumericsProfile::Canonical;
};

class Backend {
 public:
  Backend(const Model& model, const DeviceKvOptions& kv_options = {}, const BackendOptions& options = {});

  // Appends `tokens` to `seq`; returns (n or 1, vocab_size) logits like oracle::forward.
  std::vector<float> forward(int seq, std::span<const int> tokens, bool all_logits = false);
  // One token per distinct sequence; returns (n_seqs, vocab_size) logits.
  std::vector<float> forward_batch(std::span<const int> seqs, std::span<const int> tokens);
  // Greedy ids (argmax_lowest, on the device) of the logits rows the last call returned.
  std::vector<int> argmax_last();
  // The logits rows the last call returned, still on the device: (rows, vocab_size)
  // starting at row 0 of the scratch (valid until the next call). For DeviceSampler.
  const float* logits_device() const { return s_.logits.get(); }
  int logits_rows() const { return last_rows_; }

  DeviceKv& kv() { return kv_; }
  const DeviceKv& kv() const { return kv_; }
  const DeviceModel& model() const { return model_; }
  const Config& config() const { return model_.config(); }
  const StepGraphs& graphs() const { return graphs_; }

 private:
  struct Row {
    int seq, pos, token;
  };
  std::vector<float> run_rows(std::vector<Row> rows, bool all_logits);
  int stage_rows(const std::vector<Row>& rows);
  void run_layers(int n, int first, int max_pos);
  void attention_block(int l, int n, int max_pos);
  void ffn_block(int l, int n);
  bool ggml() const { return options_.numerics == num::NumericsProfile::Ggml; }
  // out (T, n) = RMSNorm of x (T, n) by w in the configured profile.
  void norm(float* out, const float* x, const float* w, int T);
  // out (T, N) = x (T, K) · W^T in the configured mode.
  // `op` names the matrix for the fast-mode audit ("attn_q", ..., "output").
  void matmul(const char* op, float* out, const float* x, const DeviceMatrix& W, int T, int K, int N);
  // Sends rows [first, first + count) of a (rows, width) device buffer to the trace.
  void emit(const char* name, int layer, const DeviceBuffer<float>& buf, int width, int first, int count);

  BackendOptions options_;
  DeviceStream stream_;  // every launch of a call; a step graph is captured from it
  std::unique_ptr<kernels::FastGemm> fast_gemm_;  // Fast mode only
  DeviceModel model_;
  DeviceKv kv_;
  Scratch s_;
  StepGraphs graphs_;  // after s_: destroyed before the buffers its graphs point into
  int last_first_ = 0, last_rows_ = 0;  // logits rows of the last call: [first, first + rows)
  std::vector<int> row_pos_;             // (rows of the current call) positions, for the trace
};

}  // namespace oracle::optimized
