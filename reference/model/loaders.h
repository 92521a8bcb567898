#pragma once
// ============================================================================
// Checkpoint loaders behind load_model (model.cpp dispatches on the magic).
// Each returns a Model whose Weights are float32, row-major, RoPE in the
// interleaved-pairs layout; F32 tensors stay memory-mapped.
// Shared helpers: config validation and the owned-buffer bookkeeping.
// ============================================================================
#include <string>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

Model load_llama2c(const std::string& path, const LoadOptions& options);
Model load_gguf(const std::string& path, const LoadOptions& options);
// `path`: a directory holding config.json + *.safetensors, config.json itself,
// or one .safetensors file with config.json beside it.
Model load_safetensors(const std::string& path, const LoadOptions& options);

// Checks the relations every loader relies on (positive sizes, head_dim even,
// n_heads * head_dim == dim, n_heads % n_kv_heads == 0); InputError names the field.
void validate_config(const Config& c, const std::string& path);

// Applies LoadOptions::context_length_override.
void apply_context_override(Config& c, const LoadOptions& options);

// Moves a converted tensor into weights.owned and returns a stable pointer to it.
const float* keep_owned(Weights& w, std::vector<float> data);

// HF rotate-half rows -> interleaved pairs, per head: out row h*hd + 2j + i
// takes in row h*hd + i*hd/2 + j (i in {0,1}, j < hd/2). `rows` = n_heads * hd.
std::vector<float> unpermute_rotate_half(const float* w, int n_heads, int head_dim, int cols);

}  // namespace oracle
