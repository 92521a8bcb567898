#pragma once
// ============================================================================
// Which type each tensor of a GGUF gets: llama-quantize's choices
// (llama.cpp src/llama-quant.cpp: tensor_allows_quantization,
// llama_tensor_get_type[_impl], tensor_type_fallback), for the llama_ftype
// "mixes" whose every choice is a type we write (docs/quantize.md):
//   F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S
//   Q4_K_M Q5_K_S Q5_K_M Q6_K, aliases Q3_K = Q3_K_M, Q4_K = Q4_K_M,
//   Q5_K = Q5_K_M (names case-insensitive), and the project's I8_ROW.
// `pure` (llama-quantize --pure) gives every quantizable tensor the mix's
// default type, still with the row-length fallbacks.
// Tensors are visited in llama.cpp's order (weight_name_comparer: by the
// layer number of "blk.N.", tensors without one first, then by name), which
// is also the order the counters i_attention_wv / i_ffn_down run in.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

// One named llama-quantize file type.
struct QuantMix {
  std::string name;         // canonical spelling, e.g. "Q4_K_M"
  int ftype = -1;           // llama_ftype written to general.file_type (-1: I8_ROW, keep the source's)
  DType default_type = DType::F32;
};

// Parses a mix name (case-insensitive); InputError("--type", "type", ...) listing
// the accepted names when unknown, or naming why a llama-quantize type is refused.
QuantMix parse_quant_mix(const std::string& name);
std::string quant_mix_names();  // "F32, F16, ..." for help texts

// The model facts llama-quantize's rules read (from the GGUF metadata).
struct QuantModelFacts {
  std::string arch;          // general.architecture
  int n_layer = 0;           // <arch>.block_count
  int n_head = 0, n_head_kv = 0;  // layer 0
  int n_expert = 0;          // <arch>.expert_count
  bool is_70b = false;       // llama.cpp's LLM_TYPE_70B (attn_v gets more bits)
};

struct QuantTensorIn {
  std::string name;
  std::vector<int64_t> dims;  // ggml order, trailing 1s trimmed
  DType type;
};

struct QuantChoice {
  DType type;             // what the output stores
  bool allowed = false;   // tensor_allows_quantization
  bool fallback = false;  // the row length forced a different type
};

// Input tensors in llama.cpp's order (see above).
void sort_llama_order(std::vector<QuantTensorIn>& tensors);

// Per-tensor choices for `tensors` (already in llama.cpp's order).
std::vector<QuantChoice> choose_quant_types(const QuantModelFacts& facts, const QuantMix& mix, bool pure,
                                            const std::vector<QuantTensorIn>& tensors);

}  // namespace oracle
