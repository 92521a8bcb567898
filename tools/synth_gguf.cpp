#include "tools/synth_gguf.h"

#include <cstring>
#include <vector>

#include "base/errors.h"
#include "reference/model/gguf_writer.h"
#include "reference/model/synthetic_gguf.h"
#include "numerics/numerics.h"

namespace oracle::tools {

namespace {

// A --meta key after the preset's (a key the preset already wrote takes the new value).
void add_meta(GgufWriter& w, const SynthMeta& m) {
  switch (m.type) {
    case 'u': w.add_u32(m.key, (uint32_t)std::stoul(m.value)); break;
    case 'i': w.add_i32(m.key, (int32_t)std::stol(m.value)); break;
    case 'f': w.add_f32(m.key, std::stof(m.value)); break;
    case 'b': w.add_bool(m.key, m.value == "true" || m.value == "1"); break;
    default: w.add_string(m.key, m.value);
  }
}

// ---- tensors ---------------------------------------------------------------------------
// One-dimensional tensors (norm vectors, biases, rope_freqs) stay F32; everything else takes
// --dtype. That is llama.cpp's converter's rule (conversion/base.py: "n_dims <= 1 or
// *_norm.weight" -> F32; "Most of the codebase that takes in 1D tensors or norms only handles
// F32"). ggml's CPU backend aborted on the llama3-8b preset's F16 norms (binary_op: unsupported
// types: dst: f32, src0: f32, src1: f16).
DType tensor_type(const SyntheticTensor& t, DType dtype) {
  return t.shape.size() <= 1 ? DType::F32 : dtype;
}

// Generates and writes the tensor 2^20 elements at a time.
void stream_tensor(const SyntheticTensor& t, uint64_t seed, DType dtype, const ByteSink& sink) {
  constexpr int64_t kChunk = 1 << 20;  // elements generated per step
  std::vector<float> values;           // (kChunk)
  std::vector<uint16_t> halves;        // (kChunk) F16 only
  for (int64_t first = 0; first < t.n_elements(); first += kChunk) {
    const int64_t n = std::min(kChunk, t.n_elements() - first);
    values.resize((size_t)n);
    synthetic_fill(t, seed, first, n, values.data());
    if (dtype == DType::F32) {
      sink(values.data(), (size_t)n * 4);
      continue;
    }
    halves.resize((size_t)n);
    for (int64_t i = 0; i < n; i++) halves[(size_t)i] = num::f32_to_fp16(values[(size_t)i]);
    sink(halves.data(), (size_t)n * 2);
  }
}

}  // namespace

// ---- the file ----------------------------------------------------------------------------
uint64_t write_synthetic_gguf(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab,
                              const SynthGgufOptions& options, const ByteSink& sink) {
  require_input(options.dtype == DType::F32 || options.dtype == DType::F16, preset.name, "dtype",
                "synthetic GGUF files are F32 or F16");
  require_input((int)vocab.tokens.size() == preset.config.vocab_size, vocab.source, "vocab_size",
                "tokenizer has " + std::to_string(vocab.tokens.size()) + " tokens, preset " +
                    preset.name + " needs " + std::to_string(preset.config.vocab_size));
  GgufWriter w;
  add_synthetic_gguf_keys(w, preset, seed, vocab, options.dtype);
  for (const SynthMeta& m : options.meta) add_meta(w, m);
  for (const SyntheticTensor& t : synthetic_tensor_plan(preset.config)) {
    const DType type = tensor_type(t, options.dtype);
    w.add_tensor_streamed(t.name, type, t.shape,
                          [t, seed, type](const ByteSink& out) { stream_tensor(t, seed, type, out); });
  }
  return w.write_to(sink);
}

SynthMeta parse_synth_meta(const std::string& text) {
  const size_t eq = text.find('='), colon = text.find(':', eq == std::string::npos ? 0 : eq);
  require_input(eq != std::string::npos && eq > 0 && colon != std::string::npos, text, "--meta",
                "expected KEY=TYPE:VALUE (TYPE u32, i32, f32, bool or str)");
  const std::string type = text.substr(eq + 1, colon - eq - 1), value = text.substr(colon + 1);
  SynthMeta m{text.substr(0, eq), 's', value};
  if (type == "u32" || type == "i32" || type == "f32") {
    m.type = type[0];
    size_t used = 0;
    try {
      if (m.type == 'f') (void)std::stof(value, &used);
      else (void)std::stol(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require_input(!value.empty() && used == value.size(), text, "--meta", "bad " + type + " value");
  } else if (type == "bool") {
    m.type = 'b';
  } else {
    require_input(type == "str", text, "--meta", "unknown type '" + type + "' (u32, i32, f32, bool, str)");
  }
  return m;
}

std::string synthetic_gguf_bytes(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab) {
  std::string bytes;
  write_synthetic_gguf(preset, seed, vocab, {},
                       [&](const void* p, size_t n) { bytes.append((const char*)p, n); });
  return bytes;
}

}  // namespace oracle::tools
