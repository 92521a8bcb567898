// Tokenizer properties (reference/tokenizer/tokenizer.h): decode(encode(s)) == s for
// valid UTF-8 (stories260K tok512, the Llama 2 tokenizer and the synthetic
// byte-level vocabulary); invalid UTF-8 is rejected with an InputError naming
// the field.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "property_tests/generators.h"
#include "reference/base/errors.h"
#include "reference/model/synthetic.h"
#include "reference/tokenizer/tokenizer.h"
#include "test_support.h"

using namespace oracle;

namespace {

Tokenizer load(const std::string& rel, int n) {
  std::string path = test::models(rel);
  if (!test::have(path)) FAIL("missing fixture " << path);
  return Tokenizer(load_llama2c_tokenizer(path, n));
}

// Valid UTF-8 with one ill-formed piece spliced in at a random place.
std::string gen_invalid_utf8() {
  std::string s = *oracle::prop::gen_utf8_text();
  std::string bad = *rc::gen::element(std::string("\xFF"), std::string("\x80"), std::string("\xC3"),
                                      std::string("\xE2\x82"), std::string("\xED\xA0\x80"),
                                      std::string("\xC0\xAF"), std::string("\xF4\x90\x80\x80"));
  size_t at = (size_t)*rc::gen::inRange<size_t>(0, s.size() + 1);
  return s.substr(0, at) + bad + s.substr(at);
}

}  // namespace

TEST_CASE("property: tokenizer round trip and invalid input", "[property][tokenizer]") {
  oracle::prop::seed_rapidcheck();
  const std::vector<std::pair<std::string, Tokenizer>> toks = {
      {"tok512", load("stories260K/tok512.bin", 512)},
      {"llama2", load("llama2-tokenizer/tokenizer.bin", 32000)},
      {"synthetic", Tokenizer(synthetic_byte_vocab(384))},
  };

  for (const auto& entry : toks) {
    const Tokenizer& tok = entry.second;  // not a structured binding: clang 14 cannot capture those
    oracle::prop::check("decode(encode(s)) == s for valid UTF-8: " + entry.first, [&] {
      std::string s = *oracle::prop::gen_utf8_text();
      RC_ASSERT(tok.decode(tok.encode(s, true)) == s);
    });
  }

  oracle::prop::check("invalid UTF-8 is rejected with InputError naming the prompt", [&] {
    std::string s = gen_invalid_utf8();
    const Tokenizer& tok = toks[(size_t)*rc::gen::inRange(0, 3)].second;
    try {
      tok.encode(s, true);
      RC_FAIL("accepted invalid UTF-8");
    } catch (const InputError& e) {
      RC_ASSERT(std::string(e.what()).find("prompt") != std::string::npos);
    }
  });
}
