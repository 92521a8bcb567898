#pragma once
// ============================================================================
// Finite-weights check at load: one pass over the stored tensor table
// (Model::tensors — the bytes as the file holds them, quantized blocks kept
// raw), independent of how the loader converts or holds the weights. A NaN or
// ±inf anywhere — an F32/F16/BF16 element, a block scale (d, dmin, m, s) of
// any ggml quantization, an I8_ROW row scale — is an InputError naming the
// tensor and the element or block: a NaN row would otherwise give plausible
// text (greedy skips NaN logits) instead of an error.
// ============================================================================
#include "reference/model/model.h"

namespace oracle {

// Throws InputError(file, "tensor '<name>'", "block B (row R): Q8_0 scale d is NaN ...").
void check_weights_finite(const Model& model, const std::string& file);

// The same check on one tensor (tests, loaders that build tensors lazily).
void check_tensor_finite(const TensorInfo& t, const std::string& file);

}  // namespace oracle
