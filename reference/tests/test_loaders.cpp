// Loaders: the same checkpoint in llama2.c, GGUF and Hugging Face safetensors
// form gives the identical in-memory model, tensor by tensor, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "loader_fixtures.h"
#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/gguf_writer.h"
#include "reference/model/loaders.h"
#include "reference/model/quant.h"

using namespace oracle;
using namespace oracle::test;

namespace {

struct Pair {
  const char* bin;
  const char* gguf;
  const char* tokenizer;
};

const Pair kPairs[] = {
    {"stories260K/stories260K.bin", "gguf/stories260K.gguf", "stories260K/tok512.bin"},
    {"llama2xs/llama2xs.bin", "gguf/llama2xs.gguf", "stories260K/tok512.bin"},
    {"aidreams260K/aidreams260K.bin", "gguf/aidreams260K.gguf", "aidreams260K/tok512.bin"},
};

bool inside(const void* p, const Model& m) {
  auto* b = reinterpret_cast<const uint8_t*>(p);
  return b >= m.file->data() && b < m.file->data() + m.file->size();
}

// llama2.c tokenizer.bin, parsed here independently of the tokenizer module:
// int32 max_token_length, then per token: float32 score, int32 length, bytes.
void read_tok_bin(const std::string& path, int n, std::vector<std::string>& tokens, std::vector<float>& scores) {
  std::vector<uint8_t> b = read_bytes(path);
  size_t pos = 4;
  for (int i = 0; i < n; i++) {
    float score;
    int32_t len;
    std::memcpy(&score, &b.at(pos), 4);
    std::memcpy(&len, &b.at(pos + 4), 4);
    tokens.emplace_back(reinterpret_cast<const char*>(&b.at(pos + 8)), size_t(len));
    scores.push_back(score);
    pos += 8 + size_t(len);
  }
}

// tokenizer.bin writes BOS/EOS as "\n<s>\n" / "\n</s>\n" and spaces as ' ';
// GGUF (SentencePiece pieces) has "<s>" / "</s>" and U+2581.
std::string as_gguf_piece(const std::string& t) {
  if (t == "\n<s>\n" || t == "\n</s>\n") return t.substr(1, t.size() - 2);
  std::string out;
  for (char ch : t) out += ch == ' ' ? std::string("\xe2\x96\x81") : std::string(1, ch);
  return out;
}

}  // namespace

// ---- llama2.c vs GGUF -----------------------------------------------------------------------------
TEST_CASE("loaders: llama2.c .bin and its GGUF conversion give identical weights", "[loaders]") {
  for (const Pair& p : kPairs) {
    INFO(p.bin << " vs " << p.gguf);
    Model bin = load_model(fixture(p.bin));
    LoadOptions opt;
    opt.context_length_override = bin.config.seq_len;  // the converter wrote 128
    opt.allow_context_extension = true;
    Model gguf = load_model(fixture(p.gguf), opt);
    CHECK(bin.format == "llama2c");
    CHECK(gguf.format == "gguf");
    compare_configs(gguf.config, bin.config);
    compare_models(gguf, bin, identity);
  }
}

TEST_CASE("loaders: F32 weights stay memory-mapped (no copy)", "[loaders]") {
  for (const Pair& p : kPairs) {
    for (const char* rel : {p.bin, p.gguf}) {
      INFO(rel);
      Model m = load_model(fixture(rel));
      CHECK(m.weights.owned.empty());
      for (const NamedTensor& t : weight_list(m)) {
        INFO(t.name);
        CHECK(inside(t.data, m));
      }
    }
  }
}

TEST_CASE("loaders: llama2.c config conventions", "[loaders]") {
  Model m = load_model(fixture("stories260K/stories260K.bin"));
  const Config& c = m.config;
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.head_dim == 8);
  CHECK(c.vocab_size == 512);
  CHECK(c.seq_len == 512);
  CHECK(c.tied_classifier);
  CHECK(c.stop_on_bos);
  CHECK(m.weights.classifier == m.weights.token_embedding);
  CHECK(m.vocab.tokens.empty());  // llama2.c keeps the tokenizer in a separate file
  CHECK(m.sha256 == "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
  // Raw table in GGUF naming: 1 embedding + 9 per layer + final norm.
  CHECK(m.tensors.size() == 1 + 9 * 5 + 1);
}

TEST_CASE("loaders: GGUF metadata, context override, converter stop-on-BOS rule", "[loaders]") {
  Model g = load_model(fixture("gguf/stories260K.gguf"));
  CHECK(g.config.seq_len == 128);  // what the converter wrote
  CHECK(g.config.stop_on_bos);     // llama-convert-llama2c-to-ggml output
  CHECK(g.config.tied_classifier); // output.weight is a byte copy of token_embd
  CHECK(g.tensors.size() == 48);
  CHECK(g.tensors[0].name == "token_embd.weight");
  CHECK(g.tensors[0].shape == std::vector<int64_t>{64, 512});
  LoadOptions opt;
  opt.context_length_override = 512;
  CHECK_THROWS_AS(load_model(fixture("gguf/stories260K.gguf"), opt), InputError);  // above the file's 128
  opt.allow_context_extension = true;
  const Model extended = load_model(fixture("gguf/stories260K.gguf"), opt);
  CHECK(extended.config.seq_len == 512);
  CHECK(extended.config.trained_context == 128);
  CHECK(extended.config.context_extended);
}

TEST_CASE("loaders: GGUF embedded vocabulary equals the llama2.c tokenizer.bin", "[loaders]") {
  for (const Pair& p : kPairs) {
    INFO(p.gguf);
    Model g = load_model(fixture(p.gguf));
    std::vector<std::string> tokens;
    std::vector<float> scores;
    read_tok_bin(fixture(p.tokenizer), 512, tokens, scores);
    REQUIRE(g.vocab.tokens.size() == 512);
    CHECK(g.vocab.type == VocabType::SentencePiece);
    CHECK(g.vocab.bos_id == 1);
    CHECK(g.vocab.eos_id == 2);
    CHECK(g.vocab.unk_id == 0);
    CHECK(g.vocab.scores == scores);
    int differing = 0;
    for (int i = 0; i < 512; i++) differing += g.vocab.tokens[i] != as_gguf_piece(tokens[i]);
    CHECK(differing == 0);
  }
}

TEST_CASE("loaders: F16 GGUF equals fp16 rounding of the F32 model", "[loaders]") {
  Model f32 = load_model(fixture("gguf/stories260K.gguf"));
  Model f16 = load_model(fixture("gguf/stories260K-f16.gguf"));
  compare_configs(f16.config, f32.config);
  compare_models(f16, f32, round_fp16, identity);  // norms are stored as F32
  // Matrices stay mapped as F16 (no float32 copy); the F32 norms are mapped too.
  CHECK(f16.weights.owned.empty());
  for (const NamedTensor& t : weight_list(f16)) {
    INFO(t.name);
    CHECK(inside(t.stored, f16));
  }
  CHECK(f16.weights.layers[0].wq.type == DType::F16);
}

// Q8_0 / Q4_0 from llama-quantize: each value within the format's rounding
// error of the F32 original (a wrong block layout would be far off).
TEST_CASE("loaders: llama.cpp-quantized GGUF dequantizes close to the F32 model", "[loaders]") {
  Model f32 = load_model(fixture("gguf/llama2xs.gguf"));
  const std::pair<const char*, float> files[] = {{"gguf/llama2xs-q8_0.gguf", 127.0f / 0.6f},
                                                 {"gguf/llama2xs-q4_0.gguf", 8.0f / 1.05f}};
  for (const auto& [rel, levels] : files) {
    Model q = load_model(fixture(rel));
    auto a = weight_list(q), b = weight_list(f32);
    for (size_t k = 0; k < a.size(); k++) {
      size_t bad = 0;
      for (size_t blk = 0; blk < a[k].n / 32; blk++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(b[k].data[blk * 32 + j]));
        for (int j = 0; j < 32; j++)
          bad += std::fabs(a[k].data[blk * 32 + j] - b[k].data[blk * 32 + j]) > amax / levels;
      }
      INFO(rel << " " << a[k].name);
      CHECK(bad == 0);
    }
  }
}

// BF16 GGUF written by our writer from the F32 one: matrices bf16-rounded, norms kept F32.
TEST_CASE("loaders: BF16 GGUF equals bf16 rounding of the F32 model", "[loaders][gguf]") {
  const std::string src = fixture("gguf/stories260K.gguf");
  GgufFile in(src);
  GgufWriter w;
  w.copy_metadata(in);
  for (const GgufTensorInfo& t : in.tensors()) {
    if (t.dims.size() == 1) {
      w.add_tensor(t.name, DType::F32, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
      continue;
    }
    std::vector<uint8_t> bytes;
    for (int64_t k = 0; k < t.n_elements(); k++) {
      float x;
      std::memcpy(&x, t.data + 4 * k, 4);
      const uint16_t h = num::f32_to_bf16(x);
      bytes.push_back(uint8_t(h & 0xff));
      bytes.push_back(uint8_t(h >> 8));
    }
    w.add_tensor(t.name, DType::BF16, t.dims, std::move(bytes));
  }
  ScratchDir dir("gguf_bf16");
  w.write(dir.file("bf16.gguf"));
  Model bf16 = load_model(dir.file("bf16.gguf")), f32 = load_model(src);
  compare_configs(bf16.config, f32.config);
  compare_models(bf16, f32, round_bf16, identity);
}

TEST_CASE("loaders: GGUF v2 header reads like v3", "[loaders][gguf]") {
  ScratchDir dir("gguf_v2");
  std::vector<uint8_t> b = read_bytes(fixture("gguf/stories260K.gguf"));
  b[4] = 2;  // u32 version 3 -> 2: same layout (v1 with 32-bit counts is rejected)
  write_bytes(dir.file("v2.gguf"), b.data(), b.size());
  GgufFile g(dir.file("v2.gguf"));
  CHECK(g.version() == 2);
  compare_models(load_model(dir.file("v2.gguf")), load_model(fixture("gguf/stories260K.gguf")), identity);
}

TEST_CASE("loaders: quantized GGUF keeps the raw tensor table", "[loaders][gguf]") {
  Model q = load_model(fixture("gguf/llama2xs-q8_0.gguf"));
  REQUIRE(q.tensors.size() == 48);
  for (const TensorInfo& t : q.tensors) {
    INFO(t.name);
    const bool norm = t.name.find("norm") != std::string::npos;
    CHECK(t.type == (norm ? DType::F32 : DType::Q8_0));
    CHECK(t.n_bytes == uint64_t(dtype_row_bytes(t.type, t.shape[0])) * uint64_t(t.shape.size() > 1 ? t.shape[1] : 1));
  }
}

// ---- vocabulary-only GGUF files -------------------------------------------------------------------
TEST_CASE("loaders: vocabulary-only GGUF files", "[loaders]") {
  Vocab spm = load_gguf_vocab(fixture("vocab-only/ggml-vocab-llama-spm.gguf"));
  CHECK(spm.type == VocabType::SentencePiece);
  CHECK(spm.tokens.size() == 32000);
  CHECK(spm.scores.size() == 32000);
  CHECK(spm.token_types.size() == 32000);
  CHECK(spm.bos_id == 1);
  CHECK(spm.eos_id == 2);
  CHECK(spm.add_bos);
  CHECK(spm.tokens[1] == "<s>");
  Vocab gpt2 = load_gguf_vocab(fixture("vocab-only/ggml-vocab-gpt-2.gguf"));
  CHECK(gpt2.type == VocabType::Gpt2);
  CHECK(gpt2.tokens.size() == 50257);
  CHECK(gpt2.merges.size() == 50000);
  CHECK(gpt2.bos_id == 50256);
  CHECK(gpt2.pre == "gpt-2");
  CHECK_FALSE(gpt2.add_space_prefix);
  Vocab phi3 = load_gguf_vocab(fixture("vocab-only/ggml-vocab-phi-3.gguf"));
  CHECK(phi3.tokens.size() == 32064);
  CHECK(phi3.eos_id == 32000);
}

// ---- Hugging Face safetensors ----------------------------------------------------------------------
TEST_CASE("loaders: HF safetensors (rotate-half q/k) equals the llama2.c model", "[loaders][safetensors]") {
  Model bin = load_model(fixture("stories260K/stories260K.bin"));
  const std::pair<const char*, float (*)(float)> dtypes[] = {
      {"F32", identity}, {"F16", round_fp16}, {"BF16", round_bf16}};
  for (const auto& [dtype, expect] : dtypes) {
    INFO(dtype);
    ScratchDir dir(std::string("hf_") + dtype);
    write_hf_model(dir.path.string(), bin, dtype, /*tied=*/true);
    Model hf = load_model(dir.path.string());
    CHECK(hf.format == "safetensors");
    Config want = bin.config;
    want.stop_on_bos = false;  // nothing in an HF config says so
    compare_configs(hf.config, want);
    compare_models(hf, bin, expect, expect);
    CHECK(hf.weights.classifier == hf.weights.token_embedding);
    CHECK(hf.sha256.size() == 64);
  }
}

TEST_CASE("loaders: HF safetensors entry points and untied lm_head", "[loaders][safetensors]") {
  Model bin = load_model(fixture("stories260K/stories260K.bin"));
  ScratchDir dir("hf_untied");
  write_hf_model(dir.path.string(), bin, "F32", /*tied=*/false);
  for (const std::string& entry : {dir.path.string(), dir.file("config.json"), dir.file("model.safetensors")}) {
    INFO(entry);
    Model hf = load_model(entry);
    CHECK_FALSE(hf.config.tied_classifier);
    CHECK(hf.weights.classifier != hf.weights.token_embedding);
    compare_models(hf, bin, identity);
    // v_proj etc. are mapped; only q/k (rows permuted, stored type kept) are owned: 2 per layer.
    CHECK(hf.weights.owned_raw.size() == size_t(2 * bin.config.n_layers));
    CHECK(hf.weights.owned.empty());
  }
}

TEST_CASE("loaders: rotate-half permutation round trip", "[loaders][safetensors]") {
  const int n_heads = 3, head_dim = 6, cols = 2;
  std::vector<float> w(n_heads * head_dim * cols);
  for (size_t i = 0; i < w.size(); i++) w[i] = float(i);
  std::vector<float> hf = hf_permute(w.data(), n_heads, head_dim, cols);
  // head 0, HF rows: pair members 0 of pairs 0..2, then members 1: original rows 0, 2, 4, 1, 3, 5.
  CHECK(hf[1 * cols] == w[2 * cols]);
  CHECK(hf[3 * cols] == w[1 * cols]);
  CHECK(unpermute_rotate_half(hf.data(), n_heads, head_dim, cols) == w);
}

// ---- GGUF writer ---------------------------------------------------------------------------------------
TEST_CASE("gguf writer: every value type and tensors read back", "[loaders][gguf]") {
  ScratchDir dir("gguf_writer");
  GgufWriter w;
  w.set_alignment(64);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -7);
  w.add_u64("t.u64", 1ull << 40);
  w.add_f32("t.f32", 0.1f);
  w.add_bool("t.bool", true);
  w.add_string("t.str", std::string("a\0b", 3));
  w.add_strings("t.strs", {"x", "", "\xe2\x96\x81y"});
  w.add_f32s("t.f32s", {1.5f, -2.0f});
  w.add_i32s("t.i32s", {3, -4, 5});
  GgufValue i8;
  i8.type = GgufType::INT8;
  i8.i = -100;
  w.add("t.i8", i8);
  GgufValue f64;
  f64.type = GgufType::FLOAT64;
  f64.f = 1.0 / 3.0;
  w.add("t.f64", f64);
  const float a[6] = {1, 2, 3, 4, 5, 6};
  w.add_tensor_f32("a", {3, 2}, a);
  w.add_tensor("b", DType::F16, {2}, {0x00, 0x3C, 0x00, 0xC0});  // 1, -2
  w.write(dir.file("t.gguf"));

  GgufFile g(dir.file("t.gguf"));
  CHECK(g.version() == 3);
  CHECK(g.alignment() == 64);
  CHECK(g.get_int("t.u32") == 4000000000ll);
  CHECK(g.get_int("t.i32") == -7);
  CHECK(g.get_int("t.u64") == (1ll << 40));
  CHECK(static_cast<float>(g.get_float("t.f32")) == 0.1f);
  CHECK(g.get_bool("t.bool", false));
  CHECK(g.get_string("t.str") == std::string("a\0b", 3));
  CHECK(g.get_strings("t.strs") == std::vector<std::string>{"x", "", "\xe2\x96\x81y"});
  CHECK(g.get_floats("t.f32s") == std::vector<double>{1.5, -2.0});
  CHECK(g.get_ints("t.i32s") == std::vector<int64_t>{3, -4, 5});
  CHECK(g.get_int("t.i8") == -100);
  CHECK(g.get_float("t.f64") == 1.0 / 3.0);
  CHECK(g.find("t.i8")->type == GgufType::INT8);
  REQUIRE(g.tensors().size() == 2);
  CHECK(g.data_offset() % 64 == 0);
  CHECK(g.tensors()[1].offset == 64);
  CHECK(std::memcmp(g.tensors()[0].data, a, sizeof(a)) == 0);
  float b[2];
  dequantize_row(DType::F16, g.tensors()[1].data, 2, b);
  CHECK(b[0] == 1.0f);
  CHECK(b[1] == -2.0f);
  CHECK_THROWS_AS(g.get_string("t.u32"), InputError);  // wrong type names the key
}

TEST_CASE("gguf writer: re-writing a real GGUF gives the same model", "[loaders][gguf]") {
  const std::string src = fixture("gguf/stories260K-f16.gguf");
  GgufFile in(src);
  GgufWriter w;
  w.copy_metadata(in);
  for (const GgufTensorInfo& t : in.tensors())
    w.add_tensor(t.name, static_cast<DType>(t.ggml_type), t.dims,
                 std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  ScratchDir dir("gguf_rewrite");
  w.write(dir.file("copy.gguf"));
  CHECK(read_bytes(dir.file("copy.gguf")) == read_bytes(src));  // llama.cpp wrote it the same way
  Model a = load_model(src), b = load_model(dir.file("copy.gguf"));
  compare_configs(b.config, a.config);
  compare_models(b, a, identity);
  CHECK(b.vocab.tokens == a.vocab.tokens);
}
