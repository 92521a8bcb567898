// Architectures and GGUF keys (docs/formats.md "GGUF keys and tensors",
// docs/numerics.md §4.3): every refused key or tensor is an InputError naming
// it; every honoured key changes the output in the documented way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "loader_fixtures.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/model/gguf_keys.h"
#include "reference/model/synthetic_gguf.h"
#include "reference/model/gguf_writer.h"
#include "reference/model/loaders.h"
#include "numerics/numerics.h"
#include "reference/compute/ops.h"
#include "reference/compute/rope_table.h"
#include "reference/model/synthetic.h"

using namespace oracle;
using namespace oracle::test;

namespace {

constexpr uint64_t kSeed = 7;

// A preset written with GgufWriter: the converter keys of its config
// (add_synthetic_gguf_keys, the one key list `oracle synth` writes too), its
// tensors as the in-memory model holds them, plus `edit` (extra keys/tensors).
std::string write_preset(const ScratchDir& dir, const std::string& preset,
                         const std::function<void(GgufWriter&)>& edit = {}) {
  const SyntheticPreset& p = synthetic_preset(preset);
  const Model m = synthetic_model(p, kSeed, synthetic_byte_vocab(p.config.vocab_size));
  GgufWriter w;
  add_synthetic_gguf_keys(w, p, kSeed, m.vocab, DType::F32);
  for (const TensorInfo& t : m.tensors)  // file order and file values (qwen2: NEOX rows)
    w.add_tensor_f32(t.name, t.shape, reinterpret_cast<const float*>(t.data));
  if (edit) edit(w);
  const std::string path = dir.file(preset + ".gguf");
  w.write(path);
  return path;
}

// The field of the InputError that loading `path` throws ("" when it loads).
std::string refusal(const std::string& path, const LoadOptions& o = {}) {
  try {
    (void)load_model(path, o);
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

std::vector<float> logits_of(const Model& m, const std::vector<int>& tokens, ForwardOptions o = {}) {
  KvCache kv(m.config, {});
  o.all_logits = true;
  return forward(m, kv, 0, tokens, o);
}

const std::vector<int> kTokens = {1, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 300, 17, 5, 9};

}  // namespace

// ---- refused keys and tensors --------------------------------------------------------------------
TEST_CASE("arch: every math-changing key outside the table is refused, naming it", "[arch][keys]") {
  ScratchDir dir("arch_keys");
  REQUIRE(refusal(write_preset(dir, "tiny")).empty());
  struct Case {
    std::string key;
    std::function<void(GgufWriter&)> add;
  };
  auto f32 = [](std::string k, float v) { return Case{k, [k, v](GgufWriter& w) { w.add_f32(k, v); }}; };
  auto u32 = [](std::string k, uint32_t v) { return Case{k, [k, v](GgufWriter& w) { w.add_u32(k, v); }}; };
  auto str = [](std::string k, std::string v) { return Case{k, [k, v](GgufWriter& w) { w.add_string(k, v); }}; };
  const std::vector<Case> cases = {
      str("llama.rope.scaling.type", "longrope"),
      f32("llama.attention.sliding_window", 64),
      u32("llama.attention.sliding_window_pattern", 2),
      f32("llama.final_logit_softcapping", 30.0f),
      f32("llama.attn_logit_softcapping", 50.0f),
      f32("llama.attention.scale", 0.5f),
      f32("llama.attention.clamp_kqv", 8.0f),
      f32("llama.attention.max_alibi_bias", 8.0f),
      u32("llama.rope.dimension_count", 8),
      u32("llama.attention.key_length", 32),
      u32("llama.attention.value_length", 8),
      f32("llama.rope.freq_base_swa", 10000.0f),
      f32("llama.rope.scaling.alpha", 1000.0f),
      u32("llama.rope.dimension_sections", 4),
      f32("llama.rope.scaling.yarn_beta_fast", 16.0f),
      f32("llama.rope.scaling.yarn_beta_slow", 2.0f),
      f32("llama.rope.scaling.yarn_ext_factor", 0.5f),
      f32("llama.rope.scaling.yarn_log_multiplier", 0.1f),
      f32("llama.rope.scaling.yarn_attn_factor", 2.0f),
      u32("llama.expert_count", 8),
      u32("llama.expert_used_count", 2),
      f32("llama.embedding_scale", 12.0f),
      f32("llama.residual_scale", 0.2f),
      f32("llama.logit_scale", 0.1f),
      u32("llama.attention.causal", 0),
      str("unknown.key", "x"),
      f32("qwen2.rope.freq_base", 10.0f),  // another architecture's key in a llama file
  };
  for (const Case& c : cases) {
    INFO(c.key);
    CHECK(refusal(write_preset(dir, "tiny", c.add)) == c.key);
  }
  // A factor with type none is contradictory (llama.cpp would silently drop it).
  CHECK(refusal(write_preset(dir, "tiny", [](GgufWriter& w) {
          w.add_string("llama.rope.scaling.type", "none");
          w.add_f32("llama.rope.scaling.factor", 8.0f);
        })) == "llama.rope.scaling.factor");
  CHECK(refusal(write_preset(dir, "tiny", [](GgufWriter& w) { w.add_string("general.architecture", "gemma"); })) ==
        "general.architecture");
}

TEST_CASE("arch: informational and checked keys at llama.cpp's values load", "[arch][keys]") {
  ScratchDir dir("arch_keys_ok");
  const std::string p = write_preset(dir, "yarn-tiny", [](GgufWriter& w) {
    w.add_bool("llama.rope.scaling.finetuned", true);
    w.add_f32("llama.rope.scaling.yarn_beta_fast", 32.0f);
    w.add_f32("llama.rope.scaling.yarn_beta_slow", 1.0f);
    w.add_f32("llama.rope.scaling.yarn_ext_factor", 1.0f);
    w.add_f32("llama.rope.scaling.yarn_attn_factor", (float)(1.0 + 0.1 * std::log(4.0)));
    w.add_u32("llama.attention.key_length", 16);
    w.add_u32("llama.expert_count", 0);
    w.add_string("general.license", "apache-2.0");
    w.add_string("quantize.imatrix.file", "x.dat");
  });
  CHECK(refusal(p).empty());
}

TEST_CASE("arch: tensors outside the table are refused, naming them", "[arch][keys]") {
  ScratchDir dir("arch_tensors");
  const float zeros[176] = {};
  for (const char* name : {"blk.0.attn_output.bias", "blk.0.ffn_gate.bias", "blk.1.ffn_down.bias",
                           "output.bias", "blk.0.attn_qkv.weight", "blk.2.attn_norm.weight",
                           "blk.0.attn_q_norm.weight", "blk.0.post_attention_norm.weight", "rope_factors_long.weight"}) {
    INFO(name);
    CHECK(refusal(write_preset(dir, "tiny", [&](GgufWriter& w) { w.add_tensor_f32(name, {64}, zeros); })) == name);
  }
  // llama.cpp ignores rope_freqs for qwen2: refused rather than guessed.
  CHECK(refusal(write_preset(dir, "qwen2-tiny", [&](GgufWriter& w) {
          w.add_tensor_f32("rope_freqs.weight", {8}, zeros);
        })) == "rope_freqs.weight");
  const float negative[8] = {1, 1, 1, -8, 8, 8, 8, 8};
  CHECK(refusal(write_preset(dir, "tiny", [&](GgufWriter& w) {
          w.add_tensor_f32("rope_freqs.weight", {8}, negative);
        })) == "rope_freqs.weight");
}

TEST_CASE("arch: a context above the trained one needs allow_context_extension", "[arch][context]") {
  ScratchDir dir("arch_ctx");
  const std::string p = write_preset(dir, "tiny");
  LoadOptions o;
  o.context_length_override = 1024;
  CHECK(refusal(p, o) == "context_length");
  o.context_length_override = 128;  // shorter is always fine
  Model shorter = load_model(p, o);
  CHECK((shorter.config.seq_len == 128 && !shorter.config.context_extended));
  o.context_length_override = 1024;
  o.allow_context_extension = true;
  Model m = load_model(p, o);
  CHECK(m.config.seq_len == 1024);
  CHECK(m.config.trained_context == 256);
  CHECK(m.config.context_extended);
}

// ---- the key table documents what the loader does -----------------------------------------------
TEST_CASE("arch: gguf_key_table lists every key the loader reads", "[arch][keys]") {
  for (const std::string& arch : gguf_accepted_architectures()) {
    const std::vector<GgufKeyRule> t = gguf_key_table(arch);
    for (const char* k : {"context_length", "rope.scaling.type", "rope.scaling.factor",
                          "rope.scaling.original_context_length", "rope.scaling.attn_factor", "rope.freq_base"}) {
      bool found = false;
      for (const GgufKeyRule& r : t) found = found || r.key == arch + "." + k;
      CHECK(found);
    }
  }
}

// ---- honoured keys: the RoPE table changes the documented way -----------------------------------
namespace {
// |cos/sin difference| allowed between the float64 scaled table and the float32
// plain one at an angle a: the plain table rounds freq (rel. 2^-24, times pos)
// and the angle (2^-24 |a|), each moving cos/sin by at most that much; plus
// one rounding of the result (2^-24): 4 * 2^-24 * max(1, |a|) covers it.
float table_tolerance(double angle) { return 4.0f * 5.9604645e-8f * (float)std::max(1.0, std::fabs(angle)); }

struct Row {
  std::vector<float> c, s;
};
Row row(const Config& cfg, int pos) {
  Row r{std::vector<float>(cfg.head_dim / 2), std::vector<float>(cfg.head_dim / 2)};
  rope_table_row(cfg, pos, r.c.data(), r.s.data());
  return r;
}
}  // namespace

TEST_CASE("arch: plain RoPE keeps the original float32 table bit for bit", "[arch][rope]") {
  Config c = synthetic_preset("tiny").config;
  std::vector<float> freqs(8), c0(8), s0(8);
  ops::rope_freqs(freqs.data(), c.rope_theta, c.head_dim);
  for (int pos : {0, 1, 77, 255}) {
    ops::rope_row(c0.data(), s0.data(), freqs.data(), c.head_dim, pos);
    Row r = row(c, pos);
    CHECK(std::memcmp(r.c.data(), c0.data(), 32) == 0);
    CHECK(std::memcmp(r.s.data(), s0.data(), 32) == 0);
  }
}

TEST_CASE("arch: linear factor f at position f*p is the plain table at p", "[arch][rope]") {
  Config plain = synthetic_preset("tiny").config, lin = synthetic_preset("linear-tiny").config;
  REQUIRE(lin.rope.factor == 4.0f);
  for (int p : {1, 3, 10, 60}) {
    Row a = row(plain, p), b = row(lin, 4 * p);
    for (int i = 0; i < 8; i++) {
      const double angle = p * std::pow(10000.0, -2.0 * i / 16);
      CHECK(std::fabs(a.c[i] - b.c[i]) <= table_tolerance(angle));
      CHECK(std::fabs(a.s[i] - b.s[i]) <= table_tolerance(angle));
    }
  }
  // ...and not at p itself (the key is not ignored).
  CHECK(row(plain, 9).c[0] != row(lin, 9).c[0]);
}

TEST_CASE("arch: YaRN extrapolates below the ramp, interpolates above it, scales by 1 + 0.1 ln f",
          "[arch][rope]") {
  Config plain = synthetic_preset("tiny").config, yarn = synthetic_preset("yarn-tiny").config;
  // hd 16, theta 1e4, original context 32: corr dims floor(-1.60) -> 0, ceil(1.41) -> 2
  const YarnCorrDims cd = yarn_corr_dims(16, 32, 10000.0, 32.0, 1.0);
  CHECK(cd.lo == 0.0);
  CHECK(cd.hi == 2.0);
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  for (int p : {4, 40, 200}) {
    Row y = row(yarn, p), ext = row(plain, p), inter = row(plain, p / 4);
    const double a0 = p;  // pair 0: ramp_mix 1, pure extrapolation
    CHECK(std::fabs(y.c[0] - (float)(ext.c[0] * mscale)) <= table_tolerance(a0) * 1.2f);
    for (int i = 2; i < 8; i++) {  // from hi on: pure interpolation (pos / 4)
      const double angle = p / 4 * std::pow(10000.0, -2.0 * i / 16);
      CHECK(std::fabs(y.c[i] - (float)(inter.c[i] * mscale)) <= table_tolerance(angle) * 1.2f);
      CHECK(std::fabs(y.s[i] - (float)(inter.s[i] * mscale)) <= table_tolerance(angle) * 1.2f);
    }
    // pair 1 is half and half (ggml rope_yarn_ramp: y = (1 - 0) / (2 - 0))
    const double f1 = std::pow(10000.0, -2.0 / 16), mix = 0.5;
    const double angle = (p * f1 / 4) * (1 - mix) + p * f1 * mix;
    CHECK(std::fabs(y.c[1] - (float)(std::cos(angle) * mscale)) <= table_tolerance(angle) * 1.2f);
    CHECK(std::fabs(y.s[1] - (float)(std::sin(angle) * mscale)) <= table_tolerance(angle) * 1.2f);
  }
}

// Qwen2.5's release values (config.json rope_scaling: yarn, factor 4, original 32768; head_dim
// 128, rope_theta 1e6): the ramp is not at pair 0, so its start matters. Expected angles
// from ggml's rope_yarn written out here: corr dims floor(128 ln(32768 / (32 * 2 pi)) /
// (2 ln 1e6)) = floor(23.60) = 23 and ceil(128 ln(32768 / (2 pi)) / (2 ln 1e6)) = ceil(39.65)
// = 40; pair i mixes extrapolation by 1 - clamp((i - 23) / 17, 0, 1).
TEST_CASE("arch: YaRN at Qwen2.5's parameters ramps between pairs 23 and 40", "[arch][rope]") {
  Config q = synthetic_preset("yarn-tiny").config;
  q.head_dim = 128;
  q.rope_theta = 1e6f;
  q.rope.factor = 4.0f;
  q.rope.original_context = 32768;
  const YarnCorrDims cd = yarn_corr_dims(128, 32768, 1e6, 32.0, 1.0);
  CHECK(cd.lo == 23.0);
  CHECK(cd.hi == 40.0);
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  for (int p : {1, 1000, 30000, 100000}) {
    Row y = row(q, p);
    for (int i = 0; i < 64; i++) {
      const double extrap = p * std::pow(1e6, -2.0 * i / 128), interp = extrap / 4;
      const double mix = 1.0 - std::clamp((i - 23.0) / 17.0, 0.0, 1.0);
      const double angle = interp * (1 - mix) + extrap * mix;
      INFO("pos " << p << " pair " << i);
      CHECK(std::fabs(y.c[i] - (float)(std::cos(angle) * mscale)) <= table_tolerance(angle) * 1.2f);
      CHECK(std::fabs(y.s[i] - (float)(std::sin(angle) * mscale)) <= table_tolerance(angle) * 1.2f);
    }
  }
}

TEST_CASE("arch: Llama 3 factors divide each pair's frequency", "[arch][rope]") {
  Config l3 = synthetic_preset("llama3-tiny").config;
  Config plain = l3;
  plain.rope = {};
  const std::vector<float>& ff = l3.rope.freq_factors;
  REQUIRE(ff.size() == 8);
  CHECK(ff[0] == 1.0f);  // wavelength 2 pi < 64 / 4: unchanged
  CHECK(ff[7] == 8.0f);  // wavelength > 64: the full factor
  CHECK((ff[1] > 1.0f && ff[1] < 8.0f));  // the smooth band
  for (int p : {8, 64, 200}) {
    Row a = row(l3, p), b = row(plain, p), c = row(plain, p / 8);
    CHECK(std::fabs(a.c[0] - b.c[0]) <= table_tolerance(p));
    const double angle7 = p / 8 * std::pow(500000.0, -14.0 / 16);
    CHECK(std::fabs(a.c[7] - c.c[7]) <= table_tolerance(angle7));
  }
}

TEST_CASE("arch: rope.scaling.attn_factor multiplies every cos and sin", "[arch][rope]") {
  ScratchDir dir("arch_attn_factor");
  const std::string p = write_preset(dir, "tiny", [](GgufWriter& w) { w.add_f32("llama.rope.scaling.attn_factor", 0.5f); });
  const Model m = load_model(p);
  CHECK(m.config.rope.attn_factor == 0.5f);
  const Config plain = synthetic_preset("tiny").config;
  for (int pos : {0, 5, 100}) {
    Row a = row(m.config, pos), b = row(plain, pos);
    for (int i = 0; i < 8; i++)
      CHECK(std::fabs(a.c[i] - 0.5f * b.c[i]) <= table_tolerance(pos) * 0.5f);
  }
}

// ---- GGUF files load to the presets, and the switches reach the logits --------------------------
TEST_CASE("arch: each preset's GGUF loads to the in-memory synthetic model", "[arch][gguf]") {
  ScratchDir dir("arch_presets");
  for (const char* name : {"qwen2-tiny", "llama3-tiny", "linear-tiny", "yarn-tiny"}) {
    INFO(name);
    const SyntheticPreset& p = synthetic_preset(name);
    const Model mem = synthetic_model(p, kSeed, synthetic_byte_vocab(p.config.vocab_size));
    const Model file = load_model(write_preset(dir, name));
    CHECK(file.config.architecture == mem.config.architecture);
    CHECK(file.config.qkv_bias == mem.config.qkv_bias);
    CHECK((int)file.config.rope.scaling == (int)mem.config.rope.scaling);
    CHECK(file.config.rope.factor == mem.config.rope.factor);
    CHECK(file.config.rope.freq_factors == mem.config.rope.freq_factors);
    const std::vector<float> a = logits_of(mem, kTokens), b = logits_of(file, kTokens);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
    // The switch changes the logits (compared with plain tiny weights of the same seed).
    const SyntheticPreset& tiny = synthetic_preset("tiny");
    const std::vector<float> t = logits_of(synthetic_model(tiny, kSeed, synthetic_byte_vocab(384)), kTokens);
    CHECK(std::memcmp(a.data(), t.data(), a.size() * 4) != 0);
  }
}

TEST_CASE("arch: qwen2 q = W q-row . x + b, with NEOX rows permuted to pairs", "[arch][qwen2]") {
  const SyntheticPreset& p = synthetic_preset("qwen2-tiny");
  const Model m = synthetic_model(p, kSeed, synthetic_byte_vocab(384));
  const Config& c = m.config;
  std::vector<float> q0, xb0;
  Trace trace{[&](const std::string& name, int pos, std::span<const float> v) {
    if (pos != 0) return;
    if (name == "blk.0.q") q0.assign(v.begin(), v.end());
    if (name == "blk.0.attn_norm") xb0.assign(v.begin(), v.end());
  }};
  ForwardOptions o;
  o.trace = &trace;
  (void)logits_of(m, {65}, o);
  REQUIRE((q0.size() == 64 && xb0.size() == 64));
  // File tensors (NEOX order), by name; position 0 rotates by the identity.
  const float *wq = nullptr, *bq = nullptr;
  for (const TensorInfo& t : m.tensors) {
    if (t.name == "blk.0.attn_q.weight") wq = reinterpret_cast<const float*>(t.data);
    if (t.name == "blk.0.attn_q.bias") bq = reinterpret_cast<const float*>(t.data);
  }
  REQUIRE((wq && bq));
  for (int h = 0; h < c.n_heads; h++)
    for (int j = 0; j < c.head_dim / 2; j++)
      for (int i = 0; i < 2; i++) {
        const int file_row = h * c.head_dim + i * c.head_dim / 2 + j, our_row = h * c.head_dim + 2 * j + i;
        const float want = num::add_rn(num::dot_canonical(wq + file_row * c.dim, xb0.data(), c.dim), bq[file_row]);
        CHECK(q0[our_row] == want);
      }
}

// ---- safetensors config.json: the same table discipline ------------------------------------------
namespace {
// tiny (or a variant) written as HF safetensors, config.json edited by `edit`.
std::string write_hf(const ScratchDir& dir, const std::string& preset,
                     const std::function<void(nlohmann::json&)>& edit, bool biases = false) {
  const SyntheticPreset& p = synthetic_preset(preset);
  const Model m = synthetic_model(p, kSeed, synthetic_byte_vocab(p.config.vocab_size));
  const std::string d = dir.file(preset + "_hf");
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  write_hf_config(d + "/config.json", m.config, true);
  std::vector<HfTensor> t = hf_tensors(m, false);
  const Config& c = m.config;
  for (int l = 0; biases && l < c.n_layers; l++) {  // HF rows are rotate-half: permute like q/k
    const LayerWeights& w = m.weights.layers[l];
    const std::string b = "model.layers." + std::to_string(l) + ".self_attn.";
    const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
    t.push_back({b + "q_proj.bias", {q}, hf_permute(w.bq, c.n_heads, c.head_dim, 1)});
    t.push_back({b + "k_proj.bias", {kv}, hf_permute(w.bk, c.n_kv_heads, c.head_dim, 1)});
    t.push_back({b + "v_proj.bias", {kv}, std::vector<float>(w.bv, w.bv + kv)});
  }
  write_safetensors(d + "/model.safetensors", t, "F32");
  nlohmann::json j;
  std::ifstream(d + "/config.json") >> j;
  j["rope_theta"] = c.rope_theta;
  if (edit) edit(j);
  std::ofstream(d + "/config.json") << j.dump(2);
  return d;
}
}  // namespace

TEST_CASE("arch: config.json fields that change the math are refused, naming them", "[arch][safetensors]") {
  ScratchDir dir("arch_hf");
  REQUIRE(refusal(write_hf(dir, "tiny", {})).empty());
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"sliding_window", 64},
      {"attention_bias", true},
      {"mlp_bias", true},
      {"final_logit_softcapping", 30.0},
      {"attn_logit_softcapping", 50.0},
      {"partial_rotary_factor", 0.5},
      {"pretraining_tp", 2},
      {"mystery_field", 1},
  };
  for (const auto& kv : cases) {  // no structured binding: clang 14 cannot capture one in a lambda
    const auto& key = kv.first;
    const auto& value = kv.second;
    INFO(key);
    CHECK(refusal(write_hf(dir, "tiny", [&key, &value](nlohmann::json& j) { j[key] = value; })) == key);
  }
  CHECK(refusal(write_hf(dir, "tiny", [](nlohmann::json& j) { j["model_type"] = "gemma"; })) == "model_type");
  CHECK(refusal(write_hf(dir, "tiny", [](nlohmann::json& j) {
          j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 4.0}};
        })) == "rope_scaling");
  CHECK(refusal(write_hf(dir, "tiny", [](nlohmann::json& j) {
          j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"attention_factor", 0.8}};
        })) == "rope_scaling.attention_factor");
  CHECK(refusal(write_hf(dir, "tiny", [](nlohmann::json& j) {
          j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 16}};
        })) == "rope_scaling.beta_fast");
  // A window that hides nothing is a no-op; qwen2's unused window is informational.
  CHECK(refusal(write_hf(dir, "tiny", [](nlohmann::json& j) { j["sliding_window"] = 4096; })).empty());
  // A tensor nothing reads is refused.
  const std::string d = write_hf(dir, "tiny", {});
  std::vector<HfTensor> extra = hf_tensors(synthetic_model(synthetic_preset("tiny"), kSeed, synthetic_byte_vocab(384)), false);
  extra.push_back({"model.layers.0.self_attn.o_proj.bias", {64}, std::vector<float>(64, 0.0f)});
  write_safetensors(d + "/model.safetensors", extra, "F32");
  CHECK(refusal(d) == "model.layers.0.self_attn.o_proj.bias");
}

TEST_CASE("arch: config.json rope_scaling / qwen2 load to the same model as the GGUF presets", "[arch][safetensors]") {
  ScratchDir dir("arch_hf_ok");
  struct Case {
    const char* preset;
    std::function<void(nlohmann::json&)> edit;
    bool biases;
  };
  const std::vector<Case> cases = {
      {"linear-tiny", [](nlohmann::json& j) { j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 4.0}}; }, false},
      {"yarn-tiny", [](nlohmann::json& j) {
         j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32},
                              {"beta_fast", 32}, {"beta_slow", 1}};
       }, false},
      {"llama3-tiny", [](nlohmann::json& j) {
         j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
       }, false},
      {"qwen2-tiny", [](nlohmann::json& j) {
         j["model_type"] = "qwen2";
         j["sliding_window"] = 64;  // unused: use_sliding_window false
         j["use_sliding_window"] = false;
       }, true},
  };
  for (const Case& c : cases) {
    INFO(c.preset);
    const SyntheticPreset& p = synthetic_preset(c.preset);
    const Model mem = synthetic_model(p, kSeed, synthetic_byte_vocab(384));
    const Model hf = load_model(write_hf(dir, c.preset, c.edit, c.biases));
    CHECK(hf.config.rope.freq_factors == mem.config.rope.freq_factors);
    const std::vector<float> a = logits_of(mem, kTokens), b = logits_of(hf, kTokens);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
  }
}
