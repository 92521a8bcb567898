// Tokenizer properties (reference/tokenizer/tokenizer.h): decode(encode(s)) == s for
// valid UTF-8 (stories260K tok512, the Llama 2 tokenizer and the synthetic
// byte-level vocabulary); invalid UTF-8 is rejected with an InputError naming
// the field.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "property_tests/generators.h"
#include "base/errors.h"
#include "reference/model/synthetic.h"
#include "reference/tokenizer/detokenizer.h"
#include "reference/tokenizer/tokenizer.h"
#include "llama2c_encode.h"
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
  oracle::prop::Shapes shapes;
  const std::vector<std::pair<std::string, Tokenizer>> toks = {
      {"tok512", load("stories260K/tok512.bin", 512)},
      {"llama2", load("llama2-tokenizer/tokenizer.bin", 32000)},
      {"synthetic", Tokenizer(synthetic_byte_vocab(384))},
  };

  for (const auto& entry : toks) {
    const Tokenizer& tok = entry.second;  // not a structured binding: clang 14 cannot capture those
    oracle::prop::check("decode(encode(s)) == s and streamed decode == s, valid UTF-8: " + entry.first, 1000, shapes, [&] {
      std::string s = *oracle::prop::gen_utf8_text();
      shapes.add("bytes", (long)s.size());
      const std::vector<int> ids = tok.encode(s, true);
      RC_ASSERT(tok.decode(ids) == s);
      // token by token through the streaming detokenizer (holds split characters back)
      StreamingDetokenizer detok(tok);
      std::string streamed;
      for (int id : ids) streamed += detok.push(id);
      streamed += detok.finish();
      RC_ASSERT(detok.n_replaced() == 0);
      RC_ASSERT(streamed == s);
    });
  }

  // Segmentation, not only reversibility: the ids equal llama2.c's encode()
  // (a transcription of run.c, tests_common/llama2c_encode.h) on text built
  // from pieces with merges, runs of one character (score ties) and
  // multi-byte characters.
  for (const char* rel : {"stories260K/tok512.bin", "llama2-tokenizer/tokenizer.bin"}) {
    const std::string path = test::models(rel);
    if (!test::have(path)) FAIL("missing fixture " << path);
    const test::RawTokenizer raw = test::read_raw(path);
    const Tokenizer tok(load_llama2c_tokenizer(path, (int)raw.pieces.size()));
    oracle::prop::check(std::string("encode(s) == llama2.c's encode(s): ") + rel, 1000, shapes, [&] {
      static const std::vector<std::string> pieces = {
          "a", "b", "e", "t", "h", "s", " ", "  ", "the", "Once", "upon", "time", ",", ".", "\n", "l", "o", "ll",
          "!!", "   ", "ee", "aaa", "\t", "'", "!", "1", "9", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
          "\xE6\x88\x91", "\xC3\xBC", "\xD0\xB1"};
      const int n = *rc::gen::inRange(0, 25);
      std::string s;
      for (int i = 0; i < n; i++) s += *rc::gen::elementOf(pieces);
      shapes.add("pieces", n);
      RC_ASSERT(tok.encode(s, true) == test::llama2c_encode(raw, s));
    });
  }

  oracle::prop::check("invalid UTF-8 is rejected with InputError naming the prompt", 1000, shapes, [&] {
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
