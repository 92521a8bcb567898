#pragma once
// ============================================================================
// Checkpoint loaders behind load_model (model.cpp dispatches on the magic).
// Each returns a Model whose matrices stay memory-mapped in their stored type
// (row-major, RoPE in the interleaved-pairs layout) and whose norms are float32.
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

// Applies LoadOptions::context_length_override: records trained_context, and
// refuses (InputError(path, "context_length")) a longer context unless
// allow_context_extension is set (then context_extended = true).
void apply_context_override(Config& c, const LoadOptions& options, const std::string& path);

// Moves a converted tensor into weights.owned and returns a stable pointer to it.
const float* keep_owned(Weights& w, std::vector<float> data);

// HF rotate-half rows -> interleaved pairs, per head: out row h*hd + 2j + i
// takes in row h*hd + i*hd/2 + j (i in {0,1}, j < hd/2). `rows` = n_heads * hd.
std::vector<float> unpermute_rotate_half(const float* w, int n_heads, int head_dim, int cols);
// The same row permutation on rows of `row_bytes` bytes in any stored type.
std::vector<uint8_t> unpermute_rotate_half_rows(const uint8_t* w, int n_heads, int head_dim,
                                                size_t row_bytes);

}  // namespace oracle
