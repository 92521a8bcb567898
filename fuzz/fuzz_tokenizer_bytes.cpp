// libFuzzer: the tokenizer (stories260K tok512 and the Llama 2 vocabulary) on
// arbitrary bytes: encode must return ids or throw InputError for invalid
// UTF-8; valid input must round-trip with U+2581 read as a space (SentencePiece's
// space symbol: a literal one in the text is the same piece as an escaped space,
// in sentencepiece and llama.cpp alike); decoding the bytes as ids must not crash.
#include <cstdlib>

#include "fuzz/fuzz_support.h"
#include "reference/tokenizer/tokenizer.h"
#include "base/utf8.h"

// The text decode(encode(text)) must give: every U+2581 becomes a space.
static std::string spaces_for_sentencepiece_symbol(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

static std::string shared(const char* rel) {
  const char* env = getenv("ORACLE_SHARED_DIR");
  return std::string(env && *env ? env : "../shared") + "/models/" + rel;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const oracle::Tokenizer tok512(oracle::load_llama2c_tokenizer(shared("stories260K/tok512.bin"), 512));
  static const oracle::Tokenizer llama(oracle::load_llama2c_tokenizer(shared("llama2-tokenizer/tokenizer.bin"), 32000));
  const std::string text((const char*)data, size);
  const std::string expected = spaces_for_sentencepiece_symbol(text);
  for (const oracle::Tokenizer* tok : {&tok512, &llama}) {
    oracle::fuzz::expect_input_error_only([&] {
      std::vector<int> ids = tok->encode(text, true);
      if (tok->decode(ids) != expected) std::abort();  // round trip of valid UTF-8
    });
    std::vector<int> ids;
    for (size_t i = 0; i + 1 < size; i += 2) ids.push_back((data[i] | data[i + 1] << 8) % tok->vocab_size());
    tok->decode(ids);
  }
  return 0;
}
