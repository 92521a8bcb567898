#pragma once
// ============================================================================
// Deterministic synthetic models: a named shape preset + a 64-bit seed give the
// same weights on every machine and compiler (integer generator, no floating
// point rounding choices, no std:: distributions).
//
// Generator (splitmix64, counter-based): element k of tensor T is
//   key   = splitmix64_mix(seed) ^ fnv1a64(T.name)
//   bits  = splitmix64_mix(key + (k + 1) * 0x9E3779B97F4A7C15)
//   u     = (bits >> 40) * 2^-24                      exact, in [0, 1)
//   value = (2u - 1) * T.scale   (norms: 1 + (2u - 1) * T.scale)
// Each step is exact or one IEEE rounding, so any compiler gives the same bits.
//
// Tensors use GGUF llama names and ggml shape order (shape[0] = row length).
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

// ---- presets ------------------------------------------------------------------
struct SyntheticPreset {
  std::string name;
  std::string description;
  Config config;
  bool byte_vocab = true;  // false: wants a real tokenizer (stories15m: Llama 2)
};

const std::vector<SyntheticPreset>& synthetic_presets();
// InputError("<name>", "preset", ...) listing the known names when unknown.
const SyntheticPreset& synthetic_preset(const std::string& name);

// The embedded default model (`oracle run` without --model).
inline constexpr const char* kDefaultPreset = "tiny";
inline constexpr uint64_t kDefaultSeed = 20240601;

// ---- tensor plan ----------------------------------------------------------------
struct SyntheticTensor {
  std::string name;            // GGUF llama name, e.g. "blk.0.attn_q.weight"
  std::vector<int64_t> shape;  // ggml order: shape[0] is the row length
  float scale = 0.0f;          // half-width of the uniform distribution
  bool is_norm = false;        // values centred on 1 instead of 0
  int64_t n_elements() const;
};

// All tensors of a llama model with this config, in GGUF file order.
std::vector<SyntheticTensor> synthetic_tensor_plan(const Config& config);
// Fills out[0 .. n) with elements [first, first + n) of `tensor`.
void synthetic_fill(const SyntheticTensor& tensor, uint64_t seed, int64_t first, int64_t n,
                    float* out);

// ---- byte-level tokenizer vocabulary ----------------------------------------------
// SentencePiece-type vocabulary the tool builds itself: <unk>, <s>, </s>, the
// 256 byte-fallback tokens <0x00>..<0xFF>, the space piece U+2581 and the 94
// printable ASCII characters, then a few BPE merges (" the", "he", "in", ...).
// Padded with control tokens "<unused_N>" up to `vocab_size` (>= 384).
Vocab synthetic_byte_vocab(int vocab_size);

// ---- in-memory model ---------------------------------------------------------------
// The whole model in owned float32 buffers (format "synthetic", path
// "synthetic:<preset>:<seed>"); sha256 is left empty for the caller to fill.
// `vocab` is embedded as the model's vocabulary.
Model synthetic_model(const SyntheticPreset& preset, uint64_t seed, Vocab vocab);

}  // namespace oracle
