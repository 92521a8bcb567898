#pragma once
// ============================================================================
// DeviceModel: the float32 weights of a Model copied to the device (same
// bits), plus the RoPE cos/sin tables computed once on the host with the
// reference helpers (ops::rope_freqs / rope_row) so both pipelines rotate by
// identical floats.
// ============================================================================
#include <vector>

#include "optimized/device_buffer.h"
#include "reference/model.h"

namespace oracle::optimized {

struct DeviceLayer {
  DeviceBuffer<float> attn_norm;  // (dim)
  DeviceBuffer<float> wq;         // (n_heads * head_dim, dim)
  DeviceBuffer<float> wk;         // (n_kv_heads * head_dim, dim)
  DeviceBuffer<float> wv;         // (n_kv_heads * head_dim, dim)
  DeviceBuffer<float> wo;         // (dim, n_heads * head_dim)
  DeviceBuffer<float> ffn_norm;   // (dim)
  DeviceBuffer<float> w_gate;     // (hidden_dim, dim)
  DeviceBuffer<float> w_down;     // (dim, hidden_dim)
  DeviceBuffer<float> w_up;       // (hidden_dim, dim)
};

class DeviceModel {
 public:
  explicit DeviceModel(const Model& model);
  const Config& config() const { return config_; }

  DeviceBuffer<float> token_embedding;  // (vocab_size, dim)
  std::vector<DeviceLayer> layers;      // (n_layers)
  DeviceBuffer<float> final_norm;       // (dim)
  DeviceBuffer<float> classifier;       // (vocab_size, dim); a copy even when tied
  DeviceBuffer<float> rope_cos;         // (seq_len, head_dim / 2)
  DeviceBuffer<float> rope_sin;         // (seq_len, head_dim / 2)

 private:
  Config config_;
};

}  // namespace oracle::optimized
