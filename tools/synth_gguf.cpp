#include "tools/synth_gguf.h"

#include <cstring>
#include <vector>

#include "reference/base/errors.h"
#include "numerics/numerics.h"

namespace oracle::tools {

namespace {

constexpr uint32_t kAlignment = 32;
// GGUF metadata value types (gguf.h GgufType) and ggml tensor types.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

// ---- little-endian primitives ------------------------------------------------------
class Out {
 public:
  explicit Out(const ByteSink& sink) : sink_(sink) {}
  void bytes(const void* p, size_t n) { sink_(p, n); written_ += n; }
  void u32(uint32_t v) { bytes(&v, 4); }  // the writer runs on little-endian hosts only
  void u64(uint64_t v) { bytes(&v, 8); }
  void f32(float v) { bytes(&v, 4); }
  void str(const std::string& s) { u64(s.size()); bytes(s.data(), s.size()); }
  void pad_to(uint64_t alignment) {
    static const char zeros[64] = {};
    while (written_ % alignment != 0) bytes(zeros, 1);
  }
  uint64_t written() const { return written_; }

 private:
  const ByteSink& sink_;
  uint64_t written_ = 0;
};

// ---- metadata ------------------------------------------------------------------------
struct Kv {
  Out& out;
  uint64_t count = 0;
  void key(const std::string& k, uint32_t type) { out.str(k); out.u32(type); count++; }
  void u32(const std::string& k, uint32_t v) { key(k, kU32); out.u32(v); }
  void f32(const std::string& k, float v) { key(k, kF32); out.f32(v); }
  void boolean(const std::string& k, bool v) { key(k, kBool); uint8_t b = v; out.bytes(&b, 1); }
  void str(const std::string& k, const std::string& v) { key(k, kString); out.str(v); }
};

void write_metadata(Kv& kv, const SyntheticPreset& p, uint64_t seed, const Vocab& v, DType dtype) {
  const Config& c = p.config;
  kv.str("general.architecture", "llama");
  kv.str("general.name", "oracle-synth-" + p.name + "-seed" + std::to_string(seed));
  kv.u32("general.file_type", dtype == DType::F16 ? 1 : 0);
  kv.u32("llama.context_length", c.seq_len);
  kv.u32("llama.embedding_length", c.dim);
  kv.u32("llama.block_count", c.n_layers);
  kv.u32("llama.feed_forward_length", c.hidden_dim);
  kv.u32("llama.rope.dimension_count", c.head_dim);
  kv.u32("llama.attention.head_count", c.n_heads);
  kv.u32("llama.attention.head_count_kv", c.n_kv_heads);
  kv.f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  kv.f32("llama.rope.freq_base", c.rope_theta);
  kv.u32("llama.vocab_size", c.vocab_size);
  kv.str("tokenizer.ggml.model", "llama");
  kv.key("tokenizer.ggml.tokens", kArray);
  kv.out.u32(kString);
  kv.out.u64(v.tokens.size());
  for (const std::string& t : v.tokens) kv.out.str(t);
  kv.key("tokenizer.ggml.scores", kArray);
  kv.out.u32(kF32);
  kv.out.u64(v.scores.size());
  for (float s : v.scores) kv.out.f32(s);
  kv.key("tokenizer.ggml.token_type", kArray);
  kv.out.u32(kI32);
  kv.out.u64(v.token_types.size());
  for (int t : v.token_types) kv.out.u32((uint32_t)t);
  kv.u32("tokenizer.ggml.bos_token_id", v.bos_id);
  kv.u32("tokenizer.ggml.eos_token_id", v.eos_id);
  kv.u32("tokenizer.ggml.unknown_token_id", v.unk_id);
  kv.boolean("tokenizer.ggml.add_bos_token", v.add_bos);
  kv.boolean("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
}

// ---- tensors ---------------------------------------------------------------------------
uint64_t tensor_bytes(const SyntheticTensor& t, DType dtype) {
  return (uint64_t)t.n_elements() * (dtype == DType::F16 ? 2 : 4);
}

uint64_t aligned(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

void write_tensor_infos(Out& out, const std::vector<SyntheticTensor>& plan, DType dtype) {
  uint64_t offset = 0;
  for (const SyntheticTensor& t : plan) {
    out.str(t.name);
    out.u32((uint32_t)t.shape.size());
    for (int64_t d : t.shape) out.u64((uint64_t)d);
    out.u32((uint32_t)dtype);
    out.u64(offset);
    offset = aligned(offset + tensor_bytes(t, dtype));
  }
}

void write_tensor_data(Out& out, const SyntheticTensor& t, uint64_t seed, DType dtype) {
  constexpr int64_t kChunk = 1 << 20;  // elements generated per step
  std::vector<float> values;           // (kChunk)
  std::vector<uint16_t> halves;        // (kChunk) F16 only
  for (int64_t first = 0; first < t.n_elements(); first += kChunk) {
    const int64_t n = std::min(kChunk, t.n_elements() - first);
    values.resize((size_t)n);
    synthetic_fill(t, seed, first, n, values.data());
    if (dtype == DType::F32) {
      out.bytes(values.data(), (size_t)n * 4);
      continue;
    }
    halves.resize((size_t)n);
    for (int64_t i = 0; i < n; i++) halves[(size_t)i] = num::f32_to_fp16(values[(size_t)i]);
    out.bytes(halves.data(), (size_t)n * 2);
  }
  out.pad_to(kAlignment);
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
  const std::vector<SyntheticTensor> plan = synthetic_tensor_plan(preset.config);
  // The header needs the key count first: serialise the metadata into a buffer.
  std::string metadata;
  const ByteSink to_buffer = [&](const void* p, size_t n) { metadata.append((const char*)p, n); };
  Out meta_out(to_buffer);
  Kv kv{meta_out};
  write_metadata(kv, preset, seed, vocab, options.dtype);
  Out out(sink);
  out.bytes("GGUF", 4);
  out.u32(3);
  out.u64(plan.size());
  out.u64(kv.count);
  out.bytes(metadata.data(), metadata.size());
  write_tensor_infos(out, plan, options.dtype);
  out.pad_to(kAlignment);
  for (const SyntheticTensor& t : plan) write_tensor_data(out, t, seed, options.dtype);
  return out.written();
}

std::string synthetic_gguf_bytes(const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab) {
  std::string bytes;
  write_synthetic_gguf(preset, seed, vocab, {},
                       [&](const void* p, size_t n) { bytes.append((const char*)p, n); });
  return bytes;
}

}  // namespace oracle::tools
