#pragma once
// ============================================================================
// DeviceModel: the weights of a Model uploaded to the device from its
// stored-type views (same bits as the reference's dequantization), plus the
// RoPE cos/sin tables computed once on the host with the reference's
// rope_table_row (plain or scaled, reference/compute/rope_table.h; the ggml
// profile's rope_table_row_ggml with DeviceModelOptions::ggml_rope) so both
// pipelines rotate by identical floats.
// ============================================================================
#include <string>
#include <vector>

#include "kernels/matmul.cuh"
#include "optimized/device_buffer.h"
#include "reference/model/model.h"

namespace oracle::optimized {

// A weight matrix (N, K) on the device: float32, or the file's raw blocks of a
// stored type (ggml layout) for the dequantizing GEMV. Both are made from the
// Model's stored-type views (WeightMatrix): raw blocks are uploaded as they
// are mapped; float32 is dequantized on the host in bounded chunks with the
// reference's dequantize_row, so no whole-model float32 copy exists on the
// host and both forms give the reference's logits bit for bit.
struct DeviceMatrix {
  DType type = DType::F32;
  DeviceBuffer<float> f32;      // (N, K) when type == F32
  DeviceBuffer<uint8_t> quant;  // the file's rows of blocks for any other type
  // The typed view kernels::matmul takes.
  kernels::WeightView view() const {
    return type == DType::F32 ? kernels::WeightView{f32.get(), DType::F32} : kernels::WeightView{quant.get(), type};
  }
};

struct DeviceLayer {
  DeviceBuffer<float> attn_norm;  // (dim)
  DeviceMatrix wq;                // (n_heads * head_dim, dim)
  DeviceMatrix wk;                // (n_kv_heads * head_dim, dim)
  DeviceMatrix wv;                // (n_kv_heads * head_dim, dim)
  DeviceMatrix wo;                // (dim, n_heads * head_dim)
  DeviceBuffer<float> ffn_norm;   // (dim)
  DeviceMatrix w_gate;            // (hidden_dim, dim)
  DeviceMatrix w_down;            // (dim, hidden_dim)
  DeviceMatrix w_up;              // (hidden_dim, dim)
  DeviceBuffer<float> bq, bk, bv;  // (q_dim), (kv_dim), (kv_dim) when Config::qkv_bias (else empty)
};

struct DeviceModelOptions {
  bool keep_quantized = false;  // upload every non-F32 stored type as the file's blocks (see DeviceMatrix)
  bool float_types_as_f32 = false;  // with keep_quantized: F16 / BF16 still float32 (fast mode's cuBLAS runs on them)
  // The ggml numerics profile's RoPE table (rope_table_row_ggml) instead of rope_table_row.
  bool ggml_rope = false;
};

class DeviceModel {
 public:
  explicit DeviceModel(const Model& model, const DeviceModelOptions& options = {});
  const Config& config() const { return config_; }
  int quantized_matrices() const { return n_quantized_; }
  // Bytes one decode step reads from the weights as they sit on the device: every
  // layer matrix (float32 or the file's blocks), the norms, the LM head, one embedding row.
  double decode_weight_bytes() const { return matrix_bytes_ + norm_bytes_; }

  DeviceBuffer<float> token_embedding;  // (vocab_size, dim)
  std::vector<DeviceLayer> layers;      // (n_layers)
  DeviceBuffer<float> final_norm;       // (dim)
  DeviceMatrix classifier;              // (vocab_size, dim); a copy even when tied
  DeviceBuffer<float> rope_cos;         // (seq_len, head_dim / 2)
  DeviceBuffer<float> rope_sin;         // (seq_len, head_dim / 2)

 private:
  void put_matrix(DeviceMatrix& dst, const WeightMatrix& w, size_t N, size_t K);
  DeviceModelOptions options_;
  Config config_;
  int n_quantized_ = 0;
  double matrix_bytes_ = 0, norm_bytes_ = 0;
};

}  // namespace oracle::optimized
