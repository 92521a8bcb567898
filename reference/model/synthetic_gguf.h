#pragma once
// ============================================================================
// The GGUF metadata of a synthetic model: the keys convert_hf_to_gguf writes
// for its config (llama.* / qwen2.* hyper-parameters, RoPE scaling) and the
// tokenizer.ggml.* vocabulary, in that order. The one list of converter keys:
// `oracle synth` (tools/synth_gguf.cpp) and the architecture tests
// (reference/tests/test_arch.cpp) both write their files with it.
// ============================================================================
#include <cstdint>

#include "reference/model/gguf_writer.h"
#include "reference/model/model.h"
#include "reference/model/synthetic.h"

namespace oracle {

// general.* (architecture, name "oracle-synth-<preset>-seed<seed>", file_type
// from `dtype`), the preset's hyper-parameters, then the vocabulary.
void add_synthetic_gguf_keys(GgufWriter& w, const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab,
                             DType dtype);

}  // namespace oracle
