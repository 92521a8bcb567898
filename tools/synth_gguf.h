#pragma once
// Serialises a synthetic model (reference/model/synthetic.h) as a GGUF v3 file that
// llama.cpp and the `gguf` Python package read: llama.* hyper-parameters,
// tokenizer.ggml.* vocabulary, tensors in synthetic_tensor_plan order, F32 or
// F16, data aligned to 32 bytes. Tensors are generated and written one chunk at
// a time, so an 8B-parameter model never has to fit in memory.
#include <cstdint>
#include <functional>
#include <string>

#include "reference/model/model.h"
#include "reference/model/synthetic.h"

namespace oracle::tools {

// Receives the file's bytes in order.
using ByteSink = std::function<void(const void* data, size_t n)>;

struct SynthGgufOptions {
  DType dtype = DType::F32;  // F32 or F16 (F16: each value rounded to nearest even)
};

// Returns the number of bytes written.
uint64_t write_synthetic_gguf(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab,
                              const SynthGgufOptions& options, const ByteSink& sink);

// The whole file in memory (small presets only: the embedded default's hash).
std::string synthetic_gguf_bytes(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab);

}  // namespace oracle::tools
