#include "tools/synth_gguf.h"

#include <cstring>
#include <vector>

#include "reference/base/errors.h"
#include "reference/model/gguf_writer.h"
#include "numerics/numerics.h"

namespace oracle::tools {

namespace {

// ---- metadata (as convert_hf_to_gguf writes the keys, in this order) ---------------------
void add_hparams(GgufWriter& w, const SyntheticPreset& p, uint64_t seed, DType dtype) {
  const Config& c = p.config;
  const std::string a = c.architecture + ".";
  w.add_string("general.architecture", c.architecture);
  w.add_string("general.name", "oracle-synth-" + p.name + "-seed" + std::to_string(seed));
  w.add_u32("general.file_type", dtype == DType::F16 ? 1 : 0);
  w.add_u32(a + "context_length", c.seq_len);
  w.add_u32(a + "embedding_length", c.dim);
  w.add_u32(a + "block_count", c.n_layers);
  w.add_u32(a + "feed_forward_length", c.hidden_dim);
  w.add_u32(a + "rope.dimension_count", c.head_dim);
  w.add_u32(a + "attention.head_count", c.n_heads);
  w.add_u32(a + "attention.head_count_kv", c.n_kv_heads);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", c.norm_eps);
  w.add_f32(a + "rope.freq_base", c.rope_theta);
  w.add_u32(a + "vocab_size", c.vocab_size);
  if (c.rope.scaling == RopeScaling::None) return;
  w.add_string(a + "rope.scaling.type", c.rope.scaling == RopeScaling::Yarn ? "yarn" : "linear");
  w.add_f32(a + "rope.scaling.factor", c.rope.factor);
  if (c.rope.scaling == RopeScaling::Yarn)
    w.add_u32(a + "rope.scaling.original_context_length", c.rope.original_context);
}

void add_vocab(GgufWriter& w, const Vocab& v) {
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", v.tokens);
  w.add_f32s("tokenizer.ggml.scores", std::vector<float>(v.scores.begin(), v.scores.end()));
  w.add_i32s("tokenizer.ggml.token_type", std::vector<int32_t>(v.token_types.begin(), v.token_types.end()));
  w.add_u32("tokenizer.ggml.bos_token_id", v.bos_id);
  w.add_u32("tokenizer.ggml.eos_token_id", v.eos_id);
  w.add_u32("tokenizer.ggml.unknown_token_id", v.unk_id);
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.add_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
}

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
// rope_freqs (ggml requires F32) and biases stay F32; everything else takes --dtype.
DType tensor_type(const SyntheticTensor& t, DType dtype) {
  const bool bias = t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0;
  return bias || t.name == "rope_freqs.weight" ? DType::F32 : dtype;
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
  add_hparams(w, preset, seed, options.dtype);
  add_vocab(w, vocab);
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
