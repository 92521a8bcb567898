#pragma once
// Serialises a synthetic model (reference/model/synthetic.h) as a GGUF v3 file that
// llama.cpp and the `gguf` Python package read: llama.* hyper-parameters,
// tokenizer.ggml.* vocabulary, tensors in synthetic_tensor_plan order, F32 or
// F16, data aligned to 32 bytes, through GgufWriter. Tensors are generated and written one chunk at
// a time, so an 8B-parameter model never has to fit in memory.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/model/gguf_writer.h"
#include "reference/model/model.h"
#include "reference/model/synthetic.h"

namespace oracle::tools {

// The file is written by the one GGUF writer (reference/model/gguf_writer.h);
// its bytes reach `sink` (oracle::ByteSink) in order.
// One extra metadata key (`oracle synth --meta KEY=TYPE:VALUE`), written after
// the preset's keys: e.g. to carry a key the loader must honour or refuse.
struct SynthMeta {
  std::string key;
  char type = 's';  // 'u' u32, 'i' i32, 'f' f32, 'b' bool, 's' string
  std::string value;
};
// "KEY=TYPE:VALUE", TYPE one of u32, i32, f32, bool, str. InputError("--meta", ...) otherwise.
SynthMeta parse_synth_meta(const std::string& text);

struct SynthGgufOptions {
  DType dtype = DType::F32;  // F32 or F16 (F16: each value rounded to nearest even)
  std::vector<SynthMeta> meta;
};

// Returns the number of bytes written.
uint64_t write_synthetic_gguf(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab,
                              const SynthGgufOptions& options, const ByteSink& sink);

// The whole file in memory (small presets only: the embedded default's hash).
std::string synthetic_gguf_bytes(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab);

}  // namespace oracle::tools
