// libFuzzer: llama2.c checkpoint loader on arbitrary bytes.
#include "fuzz/fuzz_support.h"
#include "reference/model/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = oracle::fuzz::scratch_path(".bin");
  oracle::fuzz::write_file(path, data, size);
  oracle::fuzz::expect_input_error_only([&] {
    oracle::LoadOptions o;
    o.compute_sha256 = false;
    oracle::load_llama2c(path, o);
  });
  return 0;
}
