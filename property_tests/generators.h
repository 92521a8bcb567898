#pragma once
// ============================================================================
// RapidCheck generators shared by every property test (one header, as the
// issue asks): logit rows (huge values, -inf masks, ties), small model shapes
// (GQA ratios, head widths, tied/untied heads), sampler configs, KV block
// sizes, stop strings and valid UTF-8 text.
// Seeds and case counts: see "running a property" below.
// ============================================================================
#include <algorithm>
#include <cstdint>
#include <map>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <limits>
#include <string>
#include <vector>

#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/model/model.h"
#include "reference/sampling/sampler.h"
#include "reference/model/synthetic.h"

namespace oracle {
// How a failing case prints its model shape (found by RapidCheck through ADL).
inline void showValue(const Config& c, std::ostream& os) {
  os << "Config{dim " << c.dim << ", hidden " << c.hidden_dim << ", layers " << c.n_layers << ", heads "
     << c.n_heads << "/" << c.n_kv_heads << " kv, head_dim " << c.head_dim << ", vocab " << c.vocab_size
     << ", tied " << c.tied_classifier << "}";
}
}  // namespace oracle

namespace oracle::prop {

// ---- running a property ------------------------------------------------------
// Seeds: RapidCheck draws a fresh random seed per run unless RC_PARAMS sets one,
// and prints "Using configuration: seed=N" first; RC_PARAMS="seed=N" replays a
// whole run, and a failure prints RC_PARAMS="reproduce=..." for its case.
// Case counts: each property states its own default-CI count; the environment
// variable ORACLE_PROP_SCALE multiplies it (the `soak` label runs 10x);
// RC_PARAMS="max_success=N" overrides both. Shrinking stays on unless
// RC_PARAMS="noshrink=1" (scripts/fault_check.sh sets it).

// Sizes seen by one property: min / median / max per named dimension, printed
// after it passes (docs/testing.md records them).
class Shapes {
 public:
  void add(const std::string& dim, long v) { seen_[dim].push_back(v); }
  std::string summary() const {
    std::ostringstream s;
    for (const auto& [dim, vals] : seen_) {
      std::vector<long> v = vals;
      std::sort(v.begin(), v.end());
      s << "  " << dim << ": min " << v.front() << " median " << v[v.size() / 2] << " max " << v.back() << "\n";
    }
    return s.str();
  }
  void clear() { seen_.clear(); }

 private:
  std::map<std::string, std::vector<long>> seen_;
};

inline int scaled_cases(int cases) {
  const char* scale = std::getenv("ORACLE_PROP_SCALE");
  const long k = scale && *scale ? std::max(1L, std::atol(scale)) : 1L;
  return (int)std::min<long>(1000000L, (long)cases * k);
}

// rc::prop for Catch, with a test id and a case count: prints "- <name>",
// "OK, passed N tests" and the shape summary; on failure the counterexample,
// and at exit RC_PARAMS="reproduce=..." for every failed property.
template <typename Testable>
void check(const std::string& name, int cases, Shapes& shapes, Testable&& testable) {
  SECTION(name) {
    rc::detail::TestMetadata metadata;
    metadata.id = name;
    metadata.description = name;
    rc::detail::TestParams params = rc::detail::configuration().testParams;
    const char* env = std::getenv("RC_PARAMS");
    if (!(env && std::string(env).find("max_success") != std::string::npos)) params.maxSuccess = scaled_cases(cases);
    shapes.clear();
    // Every case at RapidCheck's nominal size 100: inRange, element, container
    // lengths are then uniform over their stated ranges from the first case on
    // (RapidCheck otherwise ramps the size from 0, so early cases collapse to
    // the smallest values). Shrinking still minimises a failing case.
    const auto property = rc::gen::resize(100, rc::detail::toProperty(std::forward<Testable>(testable)));
    const auto result = rc::detail::checkProperty(property, metadata, params);
    std::ostringstream msg;
    rc::detail::printResultMessage(result, msg);
    if (result.template is<rc::detail::SuccessResult>()) {
      std::cout << "- " << name << "\n" << msg.str() << "\n" << shapes.summary() << std::flush;
      SUCCEED();
    } else {
      INFO(msg.str());
      FAIL("property failed: " << name);
    }
  }
}

template <typename Testable>
void check(const std::string& name, int cases, Testable&& testable) {
  Shapes none;
  check(name, cases, none, std::forward<Testable>(testable));
}

// ---- logits -----------------------------------------------------------------
// One logit: ordinary values, values near the float range (±1e30), exact ties
// (a few small integers), and -inf (a masked entry).
inline rc::Gen<float> gen_logit() {
  return rc::gen::weightedOneOf<float>({
      {6, rc::gen::map(rc::gen::inRange(-20000, 20001), [](int v) { return (float)v / 100.0f; })},
      {2, rc::gen::map(rc::gen::inRange(-4, 5), [](int v) { return (float)v; })},
      {1, rc::gen::map(rc::gen::inRange(-1000, 1001), [](int v) { return (float)v * 1e27f; })},
      {1, rc::gen::element(1e30f, -1e30f)},
      {1, rc::gen::just(-std::numeric_limits<float>::infinity())},
  });
}

// A row of n in [1, max_n] logits.
inline rc::Gen<std::vector<float>> gen_logits(int max_n) {
  return rc::gen::mapcat(rc::gen::inRange(1, max_n + 1), [](int n) {
    return rc::gen::container<std::vector<float>>((size_t)n, gen_logit());
  });
}

// Finite logits only, in [-20, 20], with ties from a coarse grid.
inline rc::Gen<std::vector<float>> gen_finite_logits(int min_n, int max_n) {
  return rc::gen::mapcat(rc::gen::inRange(min_n, max_n + 1), [](int n) {
    auto v = rc::gen::map(rc::gen::inRange(-80, 81), [](int k) { return (float)k / 4.0f; });
    return rc::gen::container<std::vector<float>>((size_t)n, v);
  });
}

// ---- model shapes -------------------------------------------------------------------
// Small Llama shapes: head_dim in {2,4,8,16}, n_kv_heads in {1,2,3}, GQA ratio
// n_heads / n_kv_heads in {1,2,4}, 1-2 layers, tied or untied classifier.
// Vocabulary 384 (the synthetic byte-level vocabulary), context 96.
inline rc::Gen<Config> gen_config() {
  return rc::gen::exec([] {
    Config c;
    c.head_dim = *rc::gen::element(2, 4, 8, 16);
    c.n_kv_heads = *rc::gen::inRange(1, 4);
    c.n_heads = c.n_kv_heads * *rc::gen::element(1, 2, 4);
    c.dim = c.n_heads * c.head_dim;
    c.hidden_dim = c.dim * *rc::gen::inRange(1, 4) + *rc::gen::inRange(0, 3);
    c.n_layers = *rc::gen::inRange(1, 3);
    c.vocab_size = 384;
    c.seq_len = 96;
    c.tied_classifier = *rc::gen::arbitrary<bool>();
    return c;
  });
}

// An in-memory model with random weights for `c` (synthetic_model, seeded).
inline Model make_model(const Config& c, uint64_t seed) {
  SyntheticPreset preset{"property", "property test shape", c, true};
  return synthetic_model(preset, seed, synthetic_byte_vocab(c.vocab_size));
}

// Token ids of the byte-level vocabulary that are ordinary text (printable ASCII bytes).
inline rc::Gen<int> gen_token() { return rc::gen::inRange(3 + 0x20, 3 + 0x7f); }
inline rc::Gen<std::vector<int>> gen_tokens(int min_n, int max_n) {
  return rc::gen::mapcat(rc::gen::inRange(min_n, max_n + 1), [](int n) {
    return rc::gen::container<std::vector<int>>((size_t)n, gen_token());
  });
}

inline rc::Gen<int> gen_block_size() { return rc::gen::element(1, 2, 3, 4, 7, 8, 16, 32); }

// ---- sampler configs ---------------------------------------------------------------------
// llamacpp preset with random processors: temperature, top-k, top-p, min-p and
// penalties, some of them switched off.
inline rc::Gen<SamplerConfig> gen_sampler_config() {
  return rc::gen::exec([] {
    SamplerConfig s = preset_config(*rc::gen::element(0, 1) ? Preset::Hf : Preset::LlamaCpp);
    s.temperature = *rc::gen::element(0.25f, 0.7f, 1.0f, 1.5f);
    s.top_k = *rc::gen::element(0, 1, 2, 5, 40);
    s.top_p = *rc::gen::element(1.0f, 0.95f, 0.5f, 0.1f);
    s.min_p = *rc::gen::element(0.0f, 0.05f, 0.3f);
    s.repetition_penalty = *rc::gen::element(1.0f, 1.1f, 1.5f);
    s.frequency_penalty = *rc::gen::element(0.0f, 0.5f);
    s.presence_penalty = *rc::gen::element(0.0f, 0.25f);
    s.seed = *rc::gen::inRange<uint64_t>(0, 1000000);
    return s;
  });
}

// ---- text --------------------------------------------------------------------------------
// Short strings over a small alphabet, so stop strings occur often.
inline rc::Gen<std::string> gen_stop_string() {
  return rc::gen::mapcat(rc::gen::inRange(1, 7), [](int n) {
    return rc::gen::container<std::string>((size_t)n, rc::gen::element('a', 'b', 'n', ' '));
  });
}
inline rc::Gen<std::vector<std::string>> gen_stop_strings() {
  return rc::gen::mapcat(rc::gen::inRange(1, 4), [](int n) {
    return rc::gen::container<std::vector<std::string>>((size_t)n, gen_stop_string());
  });
}

// A Unicode scalar value: mostly ASCII, then 2-, 3- and 4-byte UTF-8 (no
// surrogates, no U+2581: SentencePiece's space symbol, which decode() turns into
// ' ' by design — sentencepiece and llama.cpp do the same — so a text holding it
// does not round-trip).
inline rc::Gen<uint32_t> gen_codepoint() {
  return rc::gen::weightedOneOf<uint32_t>({
      {8, rc::gen::inRange<uint32_t>(0x20, 0x7f)},
      {1, rc::gen::element<uint32_t>(' ', '\n', '\t')},
      {2, rc::gen::inRange<uint32_t>(0x80, 0x800)},
      {2, rc::gen::suchThat(rc::gen::inRange<uint32_t>(0x800, 0x10000),
                            [](uint32_t c) { return (c < 0xD800 || c > 0xDFFF) && c != 0x2581; })},
      {1, rc::gen::inRange<uint32_t>(0x10000, 0x110000)},
  });
}

inline void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += (char)c;
  } else if (c < 0x800) {
    out += (char)(0xC0 | (c >> 6));
    out += (char)(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += (char)(0xE0 | (c >> 12));
    out += (char)(0x80 | ((c >> 6) & 0x3F));
    out += (char)(0x80 | (c & 0x3F));
  } else {
    out += (char)(0xF0 | (c >> 18));
    out += (char)(0x80 | ((c >> 12) & 0x3F));
    out += (char)(0x80 | ((c >> 6) & 0x3F));
    out += (char)(0x80 | (c & 0x3F));
  }
}

// 0-80 code points (the length drawn uniformly, not from RapidCheck's size).
inline rc::Gen<std::string> gen_utf8_text() {
  auto cps = rc::gen::mapcat(rc::gen::inRange(0, 81), [](int n) {
    return rc::gen::container<std::vector<uint32_t>>((size_t)n, gen_codepoint());
  });
  return rc::gen::map(cps, [](const std::vector<uint32_t>& cps) {
    std::string s;
    for (uint32_t c : cps) append_utf8(s, c);
    return s;
  });
}

}  // namespace oracle::prop
