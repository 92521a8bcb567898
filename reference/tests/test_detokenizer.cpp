// StreamingDetokenizer: complete UTF-8 only, byte-fallback assembly, the
// SentencePiece leading space, GPT-2 byte mapping, visible U+FFFD replacement.
#include <catch2/catch.hpp>

#include <random>

#include "reference/tokenizer/detokenizer.h"
#include "reference/model/gguf.h"
#include "reference/tokenizer/tokenizer.h"
#include "base/utf8.h"
#include "fixture.h"

using namespace oracle;

namespace {

using test::fixture;

Tokenizer tok512() { return Tokenizer(load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), 512)); }

int byte_token(uint8_t b) { return 3 + b; }  // tok512: <0x00> is id 3

// Streams `bytes` as byte-fallback tokens; returns the concatenated output.
std::string stream_bytes(const Tokenizer& tok, const std::string& bytes, int* n_replaced) {
  StreamingDetokenizer d(tok, 5);
  std::string out;
  for (char c : bytes) out += d.push(byte_token((uint8_t)c));
  out += d.finish();
  if (n_replaced) *n_replaced = d.n_replaced();
  return out;
}

const std::string kFFFD = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("byte-fallback tokens assemble into one character") {
  StreamingDetokenizer d(tok512(), 403);
  CHECK(d.push(byte_token(0xE2)).empty());
  CHECK(d.n_pending() == 1);
  CHECK(d.push(byte_token(0x82)).empty());
  CHECK(d.n_pending() == 2);
  CHECK(d.push(byte_token(0xAC)) == "\xE2\x82\xAC");  // €
  CHECK(d.n_pending() == 0);
  CHECK(d.push(407) == " upon");
  CHECK(d.finish().empty());
  CHECK(d.n_replaced() == 0);
}

TEST_CASE("SentencePiece: the first piece after BOS loses its leading space") {
  Tokenizer tok = tok512();
  StreamingDetokenizer after_bos(tok, tok.bos_id());
  CHECK(after_bos.push(403) == "Once");
  CHECK(after_bos.push(407) == " upon");
  StreamingDetokenizer mid_text(tok, 378);  // continuing after " time"
  CHECK(mid_text.push(403) == " Once");
}

TEST_CASE("streaming any encoded text gives back the text, in complete characters") {
  std::vector<std::pair<std::string, Tokenizer>> toks{
      {"tok512", tok512()},
      {"gpt-2", Tokenizer(load_gguf_vocab(fixture("vocab-only/ggml-vocab-gpt-2.gguf")))}};
  const std::string texts[] = {"Once upon a time \xE2\x82\xAC\xF0\x9F\xA6\x99 caf\xC3\xA9",
                               "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" "apple \xF0\x9F\x98\x81 ?",
                               "\xE1\x9E\x80\xE1\x9E\xB6\xE1\x9E\x93\xE1\x9F\x8B \n\t x"};
  for (auto& [name, tok] : toks) {
    bool saw_partial = false;
    for (const std::string& text : texts) {
      std::vector<int> ids = tok.encode(text, tok.vocab().add_bos);
      StreamingDetokenizer d(tok, -1);
      std::string out;
      for (int id : ids) {
        std::string chunk = d.push(id);
        INFO(name << " token " << id);
        CHECK(utf8_valid(chunk));
        saw_partial = saw_partial || d.n_pending() > 0;
        out += chunk;
      }
      out += d.finish();
      CHECK(out == text);
      CHECK(d.n_replaced() == 0);
    }
    INFO(name << ": some token must end inside a character for this test to mean anything");
    CHECK(saw_partial);
  }
}

TEST_CASE("ill-formed bytes become one U+FFFD per maximal subpart (Unicode Table 3-8)") {
  Tokenizer tok = tok512();
  int n = 0;
  // The example of Unicode 15 section 3.9, "U+FFFD Substitution of Maximal Subparts".
  CHECK(stream_bytes(tok, "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", &n) ==
        "a" + kFFFD + kFFFD + kFFFD + "b" + kFFFD + "c" + kFFFD + kFFFD + "d");
  CHECK(n == 6);
  CHECK(stream_bytes(tok, "\xED\xA0\x80", &n) == kFFFD + kFFFD + kFFFD);  // surrogate
  CHECK(n == 3);
  CHECK(stream_bytes(tok, "\xC0\xAF", &n) == kFFFD + kFFFD);  // overlong
  CHECK(n == 2);
  CHECK(stream_bytes(tok, "ok\xE2\x82", &n) == "ok" + kFFFD);  // cut off at the end: finish()
  CHECK(n == 1);
  CHECK(stream_bytes(tok, "\xF4\x90\x80\x80", &n) == kFFFD + kFFFD + kFFFD + kFFFD);  // > U+10FFFF
  CHECK(n == 4);
}

TEST_CASE("random bytes always come out as valid UTF-8, replaced only when ill-formed") {
  Tokenizer tok = tok512();
  std::mt19937 rng(424242);
  std::uniform_int_distribution<int> len(0, 12), byte(0, 255), kind(0, 3);
  const char* const valid[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  for (int i = 0; i < 2000; i++) {
    std::string bytes;
    for (int n = len(rng); n > 0; n--) {
      if (kind(rng) == 0) bytes += (char)byte(rng);
      else bytes += valid[kind(rng)];
    }
    int replaced = 0;
    std::string out = stream_bytes(tok, bytes, &replaced);
    INFO("bytes of length " << bytes.size());
    REQUIRE(utf8_valid(out));
    REQUIRE((replaced == 0) == utf8_valid(bytes));
    if (replaced == 0) REQUIRE(out == bytes);
  }
}
