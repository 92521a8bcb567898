// quantize_policy.h on a Llama-3-8B-shaped tensor list (32 layers, rows of 4096
// and 14336, GQA 4): the choices llama-quantize's rules give, worked out by
// hand from llama.cpp src/llama-quant.cpp (use_more_bits(i, 32) holds for
// i < 4, i >= 28 and i = 6, 9, ..., 27), where the real fixtures (rows of 64,
// 576) fall back before the rules matter. Plus the order and fallbacks.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "base/errors.h"
#include "reference/model/quant.h"
#include "audit/interop/quantize_policy.h"

using namespace oracle;

namespace {

std::vector<QuantTensorIn> llama3_8b_tensors(bool tied) {
  std::vector<QuantTensorIn> t;
  t.push_back({"token_embd.weight", {4096, 128256}, DType::F16});
  t.push_back({"output_norm.weight", {4096}, DType::F32});
  if (!tied) t.push_back({"output.weight", {4096, 128256}, DType::F16});
  for (int i = 0; i < 32; i++) {
    std::string b = "blk." + std::to_string(i) + ".";
    t.push_back({b + "attn_norm.weight", {4096}, DType::F32});
    t.push_back({b + "attn_q.weight", {4096, 4096}, DType::F16});
    t.push_back({b + "attn_k.weight", {4096, 1024}, DType::F16});
    t.push_back({b + "attn_v.weight", {4096, 1024}, DType::F16});
    t.push_back({b + "attn_output.weight", {4096, 4096}, DType::F16});
    t.push_back({b + "ffn_gate.weight", {4096, 14336}, DType::F16});
    t.push_back({b + "ffn_up.weight", {4096, 14336}, DType::F16});
    t.push_back({b + "ffn_down.weight", {14336, 4096}, DType::F16});
    t.push_back({b + "ffn_norm.weight", {4096}, DType::F32});
  }
  sort_llama_order(t);
  return t;
}

const QuantModelFacts kLlama3{"llama", 32, 32, 8, 0, false};

DType choice(const std::vector<QuantTensorIn>& in, const std::vector<QuantChoice>& out, const std::string& name) {
  for (size_t i = 0; i < in.size(); i++)
    if (in[i].name == name) return out[i].type;
  FAIL("no tensor " << name);
  return DType::F32;
}

bool more_bits(int i) { return i < 4 || i >= 28 || (i - 4) % 3 == 2; }

}  // namespace

TEST_CASE("llama.cpp's tensor order: non-layer tensors first, then by layer number, then by name") {
  auto t = llama3_8b_tensors(false);
  CHECK(t[0].name == "output.weight");
  CHECK(t[1].name == "output_norm.weight");
  CHECK(t[2].name == "token_embd.weight");
  CHECK(t[3].name == "blk.0.attn_k.weight");
  CHECK(t[3 + 9 * 2].name == "blk.2.attn_k.weight");  // blk.2 before blk.10
  CHECK(t.back().name == "blk.31.ffn_up.weight");
}

TEST_CASE("Q4_K_M on a Llama-3-8B shape: Q6_K for output, attn_v and ffn_down where use_more_bits") {
  auto in = llama3_8b_tensors(false);
  auto out = choose_quant_types(kLlama3, parse_quant_mix("q4_k_m"), false, in);
  CHECK(choice(in, out, "output.weight") == DType::Q6_K);
  CHECK(choice(in, out, "token_embd.weight") == DType::Q4_K);
  CHECK(choice(in, out, "output_norm.weight") == DType::F32);
  for (int i = 0; i < 32; i++) {
    std::string b = "blk." + std::to_string(i) + ".";
    INFO("layer " << i);
    CHECK(choice(in, out, b + "attn_v.weight") == (more_bits(i) ? DType::Q6_K : DType::Q4_K));
    CHECK(choice(in, out, b + "ffn_down.weight") == (more_bits(i) ? DType::Q6_K : DType::Q4_K));
    CHECK(choice(in, out, b + "attn_q.weight") == DType::Q4_K);
    CHECK(choice(in, out, b + "ffn_up.weight") == DType::Q4_K);
    CHECK(choice(in, out, b + "attn_norm.weight") == DType::F32);
  }
}

TEST_CASE("Q3_K_M, Q2_K, Q4_K_S, Q5_K_M and Q8_0 rules on a Llama-3-8B shape") {
  auto in = llama3_8b_tensors(false);
  auto q3 = choose_quant_types(kLlama3, parse_quant_mix("Q3_K_M"), false, in);
  CHECK(choice(in, q3, "blk.0.attn_v.weight") == DType::Q5_K);  // i_attention_wv < 2
  CHECK(choice(in, q3, "blk.1.attn_v.weight") == DType::Q5_K);
  CHECK(choice(in, q3, "blk.2.attn_v.weight") == DType::Q4_K);
  CHECK(choice(in, q3, "blk.1.ffn_down.weight") == DType::Q5_K);  // i < 32/16
  CHECK(choice(in, q3, "blk.2.ffn_down.weight") == DType::Q4_K);  // not falcon
  CHECK(choice(in, q3, "blk.5.attn_output.weight") == DType::Q4_K);
  CHECK(choice(in, q3, "blk.5.attn_q.weight") == DType::Q3_K);
  auto q2 = choose_quant_types(kLlama3, parse_quant_mix("Q2_K"), false, in);
  CHECK(choice(in, q2, "blk.7.attn_v.weight") == DType::Q4_K);  // n_gqa = 4
  CHECK(choice(in, q2, "blk.7.ffn_down.weight") == DType::Q3_K);
  CHECK(choice(in, q2, "blk.7.attn_output.weight") == DType::Q3_K);
  CHECK(choice(in, q2, "blk.7.ffn_gate.weight") == DType::Q2_K);
  auto q4s = choose_quant_types(kLlama3, parse_quant_mix("Q4_K_S"), false, in);
  CHECK(choice(in, q4s, "blk.3.attn_v.weight") == DType::Q5_K);
  CHECK(choice(in, q4s, "blk.4.attn_v.weight") == DType::Q4_K);
  CHECK(choice(in, q4s, "blk.3.ffn_down.weight") == DType::Q5_K);  // i < 32/8
  CHECK(choice(in, q4s, "blk.4.ffn_down.weight") == DType::Q4_K);
  auto q5 = choose_quant_types(kLlama3, parse_quant_mix("Q5_K"), false, in);  // alias of Q5_K_M
  CHECK(choice(in, q5, "blk.6.ffn_down.weight") == DType::Q6_K);
  CHECK(choice(in, q5, "blk.7.ffn_down.weight") == DType::Q5_K);
  auto q8 = choose_quant_types(kLlama3, parse_quant_mix("Q8_0"), false, in);
  CHECK(choice(in, q8, "output.weight") == DType::Q8_0);  // Q8_0 stays Q8_0
  auto pure = choose_quant_types(kLlama3, parse_quant_mix("Q4_K"), true, in);
  CHECK(choice(in, pure, "output.weight") == DType::Q4_K);
  CHECK(choice(in, pure, "blk.0.attn_v.weight") == DType::Q4_K);
}

TEST_CASE("tied embeddings: token_embd takes output's rule; 70B attn_v gets Q5_K; 8 experts Q8_0") {
  auto in = llama3_8b_tensors(true);
  auto out = choose_quant_types(kLlama3, parse_quant_mix("Q4_0"), false, in);
  CHECK(choice(in, out, "token_embd.weight") == DType::Q6_K);
  CHECK(choice(in, out, "blk.0.attn_v.weight") == DType::Q4_0);
  QuantModelFacts big = kLlama3;
  big.is_70b = true;
  auto s = choose_quant_types(big, parse_quant_mix("Q4_K_S"), false, in);
  CHECK(choice(in, s, "blk.10.attn_v.weight") == DType::Q5_K);
  QuantModelFacts moe = kLlama3;
  moe.n_expert = 8;
  auto m = choose_quant_types(moe, parse_quant_mix("Q4_K_M"), false, in);
  CHECK(choice(in, m, "blk.10.attn_v.weight") == DType::Q8_0);
  CHECK(choice(in, m, "blk.10.attn_k.weight") == DType::Q8_0);
  CHECK(choice(in, m, "blk.10.attn_output.weight") == DType::Q5_K);
}

TEST_CASE("fallbacks: rows that fit no 256-block, and none of 32") {
  std::vector<QuantTensorIn> in = {{"blk.0.attn_q.weight", {576, 576}, DType::F32},
                                   {"blk.0.ffn_down.weight", {172, 64}, DType::F32},
                                   {"blk.0.attn_v.weight", {576, 192}, DType::F32}};
  QuantModelFacts f{"llama", 1, 9, 3, 0, false};
  for (auto [mix, q, v] : {std::tuple{"Q2_K", DType::Q4_0, DType::Q4_0}, std::tuple{"Q4_K_S", DType::Q5_0, DType::Q5_1},
                           std::tuple{"Q6_K", DType::Q8_0, DType::Q8_0}}) {
    INFO(mix);
    auto out = choose_quant_types(f, parse_quant_mix(mix), false, in);
    CHECK(out[0].type == q);
    CHECK(out[0].fallback);
    CHECK(out[1].type == DType::F16);  // 172 is no multiple of 32
    // attn_v: Q2_K -> Q3_K (n_gqa 3) -> Q4_0; Q4_K_S -> Q5_K (first four) -> Q5_1; Q6_K -> Q8_0
    CHECK(out[2].type == v);
  }
}

TEST_CASE("mix names: case-insensitive, aliases, refusals name the type") {
  CHECK(parse_quant_mix("bf16").ftype == 32);
  CHECK(parse_quant_mix("Q4_K").name == "Q4_K_M");
  CHECK(parse_quant_mix("q3_k").ftype == 12);
  CHECK(parse_quant_mix("f32").default_type == DType::F32);
  CHECK_THROWS_AS(parse_quant_mix("IQ4_NL"), InputError);
  CHECK_THROWS_AS(parse_quant_mix("Q2_K_S"), InputError);
  CHECK_THROWS_AS(parse_quant_mix("Q7_0"), InputError);
}
