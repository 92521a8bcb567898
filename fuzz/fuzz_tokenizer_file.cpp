// libFuzzer: llama2.c tokenizer.bin loader (and the Tokenizer built from it).
#include "fuzz/fuzz_support.h"
#include "reference/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = oracle::fuzz::scratch_path(".tok");
  oracle::fuzz::write_file(path, data, size);
  oracle::fuzz::expect_input_error_only([&] {
    oracle::Tokenizer tok(oracle::load_llama2c_tokenizer(path, 0));
    std::vector<int> ids = tok.encode("Once upon a time \xE2\x82\xAC", true);
    tok.decode(ids);
  });
  return 0;
}
