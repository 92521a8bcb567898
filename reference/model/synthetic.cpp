// Deterministic synthetic models (see synthetic.h for the generator).
#include "reference/model/synthetic.h"

#include <cstdio>

#include "base/errors.h"
#include "reference/model/loaders.h"
#include "reference/model/rope_factors.h"

namespace oracle {

// ---- presets ------------------------------------------------------------------
static Config make_config(int dim, int hidden, int layers, int heads, int kv_heads, int vocab,
                          int seq_len, bool tied, float theta) {
  Config c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.vocab_size = vocab;
  c.seq_len = seq_len;
  c.tied_classifier = tied;
  c.rope_theta = theta;
  c.norm_eps = 1e-5f;
  return c;
}

// The tiny shape with one architecture / RoPE switch (llama.cpp cross-checks, docs/formats.md).
static Config tiny_variant(const char* arch, RopeScaling scaling, float factor, int original_context) {
  Config c = make_config(64, 176, 2, 4, 2, 384, 256, true, 10000.0f);
  c.architecture = arch;
  c.qkv_bias = c.architecture == "qwen2";
  c.rope.scaling = scaling;
  c.rope.factor = factor;
  c.rope.original_context = original_context;
  return c;
}

static Config tiny_llama3(double original_context = 64.0) {
  Config c = make_config(64, 176, 2, 4, 2, 384, 256, true, 500000.0f);
  c.rope.freq_factors = llama3_rope_factors(500000.0, c.head_dim, 8.0, 1.0, 4.0, original_context);
  return c;
}

// Qwen2.5's release values: qwen2 (q/k/v biases), theta 1e6, YaRN factor 4 from 32768.
static Config tiny_qwen25_yarn() {
  Config c = tiny_variant("qwen2", RopeScaling::Yarn, 4.0f, 32768);
  c.rope_theta = 1000000.0f;
  return c;
}

const std::vector<SyntheticPreset>& synthetic_presets() {
  static const std::vector<SyntheticPreset> presets = {
      {"tiny", "embedded default: dim 64, 2 layers, 4 heads / 2 KV heads, byte-level vocab 384",
       make_config(64, 176, 2, 4, 2, 384, 256, true, 10000.0f), true},
      {"stories15m", "stories15M shape: dim 288, 6 layers, 6 heads, hidden 768, vocab 32000",
       make_config(288, 768, 6, 6, 6, 32000, 256, true, 10000.0f), false},
      {"gqa", "GQA shape: dim 256, 4 layers, 8 heads / 2 KV heads, untied head, vocab 512",
       make_config(256, 688, 4, 8, 2, 512, 512, false, 10000.0f), true},
      {"llama3-8b", "Llama 3 8B shape: dim 4096, 32 layers, 32 heads / 8 KV heads, vocab 128256",
       make_config(4096, 14336, 32, 32, 8, 128256, 8192, false, 500000.0f), true},
      {"qwen2-tiny", "tiny shape, architecture qwen2: q/k/v biases, NEOX (rotate-half) rows in the file",
       tiny_variant("qwen2", RopeScaling::None, 1.0f, 0), true},
      {"llama3-tiny", "tiny shape, theta 500000, Llama 3 rope_freqs (factor 8, low 1, high 4, original 64)",
       tiny_llama3(), true},
      {"linear-tiny", "tiny shape, linear RoPE scaling factor 4",
       tiny_variant("llama", RopeScaling::Linear, 4.0f, 0), true},
      {"yarn-tiny", "tiny shape, YaRN RoPE scaling factor 4, original context 32",
       tiny_variant("llama", RopeScaling::Yarn, 4.0f, 32), true},
      {"llama31-tiny", "tiny shape, Llama 3.1's rope values: theta 500000, rope_freqs factor 8, low 1, high 4, "
       "original 8192", tiny_llama3(8192.0), true},
      {"qwen25-yarn-tiny", "tiny shape, Qwen2.5's rope values: qwen2, theta 1e6, YaRN factor 4 from 32768",
       tiny_qwen25_yarn(), true},
  };
  return presets;
}

const SyntheticPreset& synthetic_preset(const std::string& name) {
  std::string known;
  for (const SyntheticPreset& p : synthetic_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InputError(name, "preset", "unknown synthetic preset (known: " + known + ")");
}

// ---- tensor plan ----------------------------------------------------------------
int64_t SyntheticTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static SyntheticTensor matrix(const std::string& name, int64_t cols, int64_t rows) {
  // Uniform(-s, s) with s = 1/sqrt(cols) keeps each output's variance ~1/3.
  float s = 1.0f;
  while (s * s * (float)cols > 4.0f) s *= 0.5f;  // power of two: exact, no libm
  return {name, {cols, rows}, s, false};
}

static SyntheticTensor norm(const std::string& name, int64_t n) {
  return {name, {n}, 0.125f, true};
}

std::vector<SyntheticTensor> synthetic_tensor_plan(const Config& c) {
  const int64_t q_dim = (int64_t)c.n_heads * c.head_dim;
  const int64_t kv_dim = (int64_t)c.n_kv_heads * c.head_dim;
  std::vector<SyntheticTensor> plan;
  plan.push_back({"token_embd.weight", {c.dim, c.vocab_size}, 0.5f, false});
  for (int l = 0; l < c.n_layers; l++) {
    const std::string b = "blk." + std::to_string(l) + ".";
    plan.push_back(norm(b + "attn_norm.weight", c.dim));
    plan.push_back(matrix(b + "attn_q.weight", c.dim, q_dim));
    plan.push_back(matrix(b + "attn_k.weight", c.dim, kv_dim));
    plan.push_back(matrix(b + "attn_v.weight", c.dim, kv_dim));
    plan.push_back(matrix(b + "attn_output.weight", q_dim, c.dim));
    plan.push_back(norm(b + "ffn_norm.weight", c.dim));
    plan.push_back(matrix(b + "ffn_gate.weight", c.dim, c.hidden_dim));
    plan.push_back(matrix(b + "ffn_down.weight", c.hidden_dim, c.dim));
    plan.push_back(matrix(b + "ffn_up.weight", c.dim, c.hidden_dim));
    if (c.qkv_bias)
      for (auto [name, n] : {std::pair{"attn_q.bias", q_dim}, {"attn_k.bias", kv_dim}, {"attn_v.bias", kv_dim}})
        plan.push_back({b + name, {n}, 0.25f, false});
  }

  plan.push_back(norm("output_norm.weight", c.dim));
  if (!c.tied_classifier) plan.push_back(matrix("output.weight", c.dim, c.vocab_size));
  if (!c.rope.freq_factors.empty()) {  // last; values fixed by the config, not drawn
    SyntheticTensor t{"rope_freqs.weight", {(int64_t)c.rope.freq_factors.size()}, 0.0f, false};
    t.fixed = c.rope.freq_factors;
    plan.push_back(t);
  }
  return plan;
}

// ---- generator ------------------------------------------------------------------
static uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

void synthetic_fill(const SyntheticTensor& t, uint64_t seed, int64_t first, int64_t n,
                    float* out) {
  if (!t.fixed.empty()) {
    for (int64_t i = 0; i < n; i++) out[i] = t.fixed[(size_t)(first + i)];
    return;
  }
  const uint64_t key = splitmix64_mix(seed) ^ fnv1a64(t.name);
  const float two_pow_m24 = 1.0f / 16777216.0f;  // exact power of two
  for (int64_t i = 0; i < n; i++) {
    uint64_t bits = splitmix64_mix(key + (uint64_t)(first + i + 1) * 0x9E3779B97F4A7C15ull);
    float u = (float)(bits >> 40) * two_pow_m24;  // exact: 24-bit integer * 2^-24
    float centred = (u + u) - 1.0f;              // exact
    float v = centred * t.scale;                  // one rounding
    out[i] = t.is_norm ? 1.0f + v : v;
  }
}

// ---- byte-level vocabulary ------------------------------------------------------
// Merges in priority order; each is the concatenation of two earlier pieces.
#define SPM_SPACE "\xE2\x96\x81"  // U+2581
static const char* const kMerges[] = {
    SPM_SPACE "t", "he", SPM_SPACE "the", "in", "er", "an", SPM_SPACE "a", "nd",
    SPM_SPACE "and", "on", "ou", "re", "at", "ed", "en", "it", "is", "ing",
    SPM_SPACE "w", SPM_SPACE "s", SPM_SPACE "h", SPM_SPACE "b", SPM_SPACE "o",
    SPM_SPACE "c", SPM_SPACE "m", SPM_SPACE "f", SPM_SPACE "p", SPM_SPACE "d",
    "es", "or",
};
#undef SPM_SPACE

static void add_piece(Vocab& v, const std::string& piece, float score, int type) {
  v.tokens.push_back(piece);
  v.scores.push_back(score);
  v.token_types.push_back(type);
}

Vocab synthetic_byte_vocab(int vocab_size) {
  enum { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };
  Vocab v;
  v.type = VocabType::SentencePiece;
  add_piece(v, "<unk>", 0.0f, kUnknown);
  add_piece(v, "<s>", 0.0f, kControl);
  add_piece(v, "</s>", 0.0f, kControl);
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add_piece(v, name, 0.0f, kByte);
  }
  add_piece(v, "\xE2\x96\x81", -1000.0f, kNormal);  // U+2581, SentencePiece space
  for (int ch = 0x21; ch <= 0x7E; ch++)
    add_piece(v, std::string(1, (char)ch), -1000.0f - (float)(ch - 0x20), kNormal);
  int rank = 0;
  for (const char* m : kMerges) add_piece(v, m, -(float)(++rank), kNormal);
  require_input((int)v.tokens.size() <= vocab_size, "synthetic", "vocab_size",
                "byte-level vocabulary needs at least " + std::to_string(v.tokens.size()));
  while ((int)v.tokens.size() < vocab_size)
    add_piece(v, "<unused_" + std::to_string(v.tokens.size()) + ">", 0.0f, kControl);
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  v.add_space_prefix = true;
  v.source = "synthetic byte-level vocabulary";
  return v;
}

// ---- in-memory model ---------------------------------------------------------------
static const float* owned_tensor(Model& m, const SyntheticTensor& t, uint64_t seed) {
  std::vector<float>& buf = m.weights.owned.emplace_back((size_t)t.n_elements());
  synthetic_fill(t, seed, 0, t.n_elements(), buf.data());
  TensorInfo info;
  info.name = t.name;
  info.type = DType::F32;
  info.shape = t.shape;
  info.data = reinterpret_cast<const uint8_t*>(buf.data());
  info.n_bytes = (uint64_t)t.n_elements() * sizeof(float);
  m.tensors.push_back(info);
  return buf.data();
}

// The plan holds the file's values; a qwen2 file stores q/k rows rotate-half,
// so the in-memory model permutes them to interleaved pairs as load_gguf does.
static void permute_qwen2(Model& m, LayerWeights& w) {
  const Config& c = m.config;
  w.wq = keep_owned(m.weights, unpermute_rotate_half(w.wq.f32(), c.n_heads, c.head_dim, c.dim));
  w.wk = keep_owned(m.weights, unpermute_rotate_half(w.wk.f32(), c.n_kv_heads, c.head_dim, c.dim));
  if (w.bq) w.bq = keep_owned(m.weights, unpermute_rotate_half(w.bq, c.n_heads, c.head_dim, 1));
  if (w.bk) w.bk = keep_owned(m.weights, unpermute_rotate_half(w.bk, c.n_kv_heads, c.head_dim, 1));
}

Model synthetic_model(const SyntheticPreset& preset, uint64_t seed, Vocab vocab) {
  Model m;
  m.config = preset.config;
  m.format = "synthetic";
  m.path = "synthetic:" + preset.name + ":" + std::to_string(seed);
  m.vocab = std::move(vocab);
  const std::vector<SyntheticTensor> plan = synthetic_tensor_plan(m.config);
  m.weights.owned.reserve(plan.size() * 2);  // pointers into `owned` must stay valid
  m.weights.layers.resize(m.config.n_layers);
  size_t i = 0;
  m.weights.token_embedding = owned_tensor(m, plan[i++], seed);
  for (LayerWeights& w : m.weights.layers) {
    w.attn_norm = owned_tensor(m, plan[i++], seed);
    w.wq = owned_tensor(m, plan[i++], seed);
    w.wk = owned_tensor(m, plan[i++], seed);
    w.wv = owned_tensor(m, plan[i++], seed);
    w.wo = owned_tensor(m, plan[i++], seed);
    w.ffn_norm = owned_tensor(m, plan[i++], seed);
    w.w_gate = owned_tensor(m, plan[i++], seed);
    w.w_down = owned_tensor(m, plan[i++], seed);
    w.w_up = owned_tensor(m, plan[i++], seed);
    if (m.config.qkv_bias) {
      w.bq = owned_tensor(m, plan[i++], seed);
      w.bk = owned_tensor(m, plan[i++], seed);
      w.bv = owned_tensor(m, plan[i++], seed);
    }
    if (m.config.architecture == "qwen2") permute_qwen2(m, w);
  }

  m.weights.final_norm = owned_tensor(m, plan[i++], seed);
  m.weights.classifier =
      m.config.tied_classifier ? m.weights.token_embedding : owned_tensor(m, plan[i++], seed);
  if (!m.config.rope.freq_factors.empty()) owned_tensor(m, plan[i++], seed);  // rope_freqs.weight
  return m;
}

}  // namespace oracle
