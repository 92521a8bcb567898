// libFuzzer: safetensors loader. The input is the shard; config.json is a
// fixed tiny Llama config (dim 8, 1 layer, 2 heads, vocab 4) written once.
#include <filesystem>

#include "fuzz/fuzz_support.h"
#include "reference/model/loaders.h"

static std::string make_dir() {
  std::string dir = oracle::fuzz::scratch_path(".st");
  std::filesystem::create_directories(dir);
  const std::string config =
      R"({"architectures":["LlamaForCausalLM"],"hidden_size":8,"intermediate_size":16,)"
      R"("num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":4,)"
      R"("max_position_embeddings":16,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":true})";
  oracle::fuzz::write_file(dir + "/config.json", (const uint8_t*)config.data(), config.size());
  return dir;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = make_dir();
  oracle::fuzz::write_file(dir + "/model.safetensors", data, size);
  oracle::fuzz::expect_input_error_only([&] {
    oracle::LoadOptions o;
    o.compute_sha256 = false;
    oracle::load_safetensors(dir, o);
  });
  return 0;
}
