#pragma once
// ============================================================================
// Llama 3 RoPE frequency factors (convert_hf_to_gguf's rope_freqs for
// rope_type "llama3", LlamaModel.generate_extra_tensors), computed in float64
// with our own exp/log and rounded once to float32 (docs/numerics.md §4.3).
// Used by the safetensors loader (config.json rope_scaling) and synthetic presets.
// ============================================================================
#include <vector>

namespace oracle {

// (head_dim / 2) factors; pair i's frequency is divided by factor i.
std::vector<float> llama3_rope_factors(double theta, int head_dim, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context);

}  // namespace oracle
