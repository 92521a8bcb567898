// Synthetic models' GGUF metadata (see synthetic_gguf.h).
#include "reference/model/synthetic_gguf.h"

#include <string>

namespace oracle {
namespace {

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

}  // namespace

void add_synthetic_gguf_keys(GgufWriter& w, const SyntheticPreset& preset, uint64_t seed, const Vocab& vocab,
                             DType dtype) {
  add_hparams(w, preset, seed, dtype);
  add_vocab(w, vocab);
}

}  // namespace oracle
