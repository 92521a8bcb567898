// Synthetic models: the generator's bits (cross-checked against an independent
// Python/numpy implementation of the formula in synthetic.h), tensor plan
// shapes, and the byte-level vocabulary the Tokenizer loads.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

#include "base/errors.h"
#include "reference/model/synthetic.h"
#include "reference/tokenizer/tokenizer.h"

using namespace oracle;

static uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static const SyntheticTensor& find(const std::vector<SyntheticTensor>& plan, const std::string& name) {
  for (const SyntheticTensor& t : plan)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return plan.front();
}

// Expected bit patterns: numpy float32 evaluation of the documented formula (seed 20240601).
TEST_CASE("synthetic_fill matches the documented splitmix64 formula bit for bit") {
  const auto plan = synthetic_tensor_plan(synthetic_preset("gqa").config);
  struct Case { const char* tensor; int64_t k; uint32_t bits; };
  const Case cases[] = {
      {"token_embd.weight", 0, 0x3e88ae36u},     {"token_embd.weight", 1, 0x3ed6ed1cu},
      {"token_embd.weight", 24575, 0xbdc47808u}, {"blk.1.ffn_norm.weight", 0, 0x3f85fcf9u},
      {"blk.1.ffn_norm.weight", 63, 0x3f6a7b38u}, {"output.weight", 0, 0xbd648a24u},
      {"output.weight", 1000000, 0xbd8b5afeu},
  };
  for (const Case& c : cases) {
    float v = 0.0f;
    synthetic_fill(find(plan, c.tensor), kDefaultSeed, c.k, 1, &v);
    INFO(c.tensor << "[" << c.k << "]: got 0x" << std::hex << bits_of(v) << " want 0x" << c.bits);
    CHECK(bits_of(v) == c.bits);
  }
}

TEST_CASE("synthetic_fill is counter-based: any sub-range gives the same elements") {
  const auto plan = synthetic_tensor_plan(synthetic_preset("tiny").config);
  const SyntheticTensor& t = find(plan, "blk.0.attn_q.weight");
  std::vector<float> whole((size_t)t.n_elements()), part(100);
  synthetic_fill(t, 7, 0, t.n_elements(), whole.data());
  synthetic_fill(t, 7, 1000, 100, part.data());
  CHECK(std::memcmp(part.data(), whole.data() + 1000, 100 * sizeof(float)) == 0);
}

TEST_CASE("tensor plan has llama GGUF names and ggml-order shapes") {
  const Config c = synthetic_preset("gqa").config;
  const auto plan = synthetic_tensor_plan(c);
  CHECK(plan.size() == 1 + 9 * (size_t)c.n_layers + 2);  // untied: output.weight present
  CHECK(find(plan, "blk.3.attn_k.weight").shape == std::vector<int64_t>{256, 2 * 32});
  CHECK(find(plan, "blk.0.ffn_down.weight").shape == std::vector<int64_t>{688, 256});
  CHECK(find(plan, "token_embd.weight").shape == std::vector<int64_t>{256, 512});
  const auto tied = synthetic_tensor_plan(synthetic_preset("tiny").config);
  for (const SyntheticTensor& t : tied) CHECK(t.name != "output.weight");
}

TEST_CASE("unknown preset is an InputError naming the preset field") {
  try {
    synthetic_preset("nosuch");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field() == "preset");
    CHECK(std::string(e.what()).find("tiny") != std::string::npos);
  }
}

TEST_CASE("byte-level vocabulary: pieces, merges and byte fallback through the Tokenizer") {
  Vocab v = synthetic_byte_vocab(384);
  REQUIRE(v.tokens.size() == 384);  // tiny's vocabulary has no padding
  CHECK(v.tokens[3 + 0x41] == "<0x41>");
  Tokenizer tok(v);
  // " the" with the dummy prefix is the merged piece "▁the"; BOS first.
  const std::vector<int> ids = tok.encode("the", true);
  REQUIRE(ids.size() == 2);
  CHECK(ids[0] == 1);
  CHECK(v.tokens[(size_t)ids[1]] == "\xE2\x96\x81the");
  // Non-ASCII text goes through byte tokens and round-trips.
  const std::string text = "h\xC3\xA9llo, w\xE2\x82\xAC rld \xF0\x9F\x99\x82!";
  CHECK(tok.decode(tok.encode(text, false)) == text);
}

TEST_CASE("synthetic_model: tied head is the embedding, every tensor in the table") {
  const SyntheticPreset& p = synthetic_preset("tiny");
  Model m = synthetic_model(p, 3, synthetic_byte_vocab(p.config.vocab_size));
  CHECK(m.weights.classifier == m.weights.token_embedding);
  CHECK(m.tensors.size() == synthetic_tensor_plan(p.config).size());
  float first = 0.0f;
  synthetic_fill(synthetic_tensor_plan(p.config)[0], 3, 0, 1, &first);
  CHECK(bits_of(m.weights.token_embedding.f32()[0]) == bits_of(first));
}
