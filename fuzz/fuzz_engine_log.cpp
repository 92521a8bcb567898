// libFuzzer: the engine-log adapters (audit/replay/replay_adapters.h) — llama.cpp
// server, OpenAI and vLLM records — on a byte-level synthetic vocabulary, and
// the interop file readers (.npy, llama.cpp KLD base, safetensors dumps) on
// the same bytes. Expected failures: nlohmann::json::exception and InputError.
#include <nlohmann/json.hpp>

#include "audit/interop/dumps.h"
#include "audit/interop/kld_base.h"
#include "audit/interop/npy.h"
#include "audit/replay/replay_adapters.h"
#include "fuzz/fuzz_support.h"
#include "reference/model/synthetic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const oracle::Tokenizer tok(oracle::synthetic_byte_vocab(512));  // >= the pieces it needs
  const std::string bytes((const char*)data, size);
  try {
    const nlohmann::json j = nlohmann::json::parse(bytes);
    if (!oracle::engine_of(j).empty()) {
      const oracle::AdaptedRecord r = oracle::adapt_engine_record(j, "fuzz", tok);
      for (const oracle::AdaptedChoice& c : r.choices)
        if (c.steps.empty()) std::abort();  // adapters promise at least one token per choice
    }
  } catch (const nlohmann::json::exception&) {
  } catch (const oracle::InputError&) {
  }
  oracle::fuzz::expect_input_error_only([&] { oracle::parse_npy(bytes, "fuzz.npy"); });
  const std::string path = oracle::fuzz::scratch_path(".bin");
  oracle::fuzz::write_file(path, data, size);
  oracle::fuzz::expect_input_error_only([&] { oracle::read_kld_base(path); });
  oracle::fuzz::expect_input_error_only([&] { oracle::read_logits_input(path); });
  oracle::fuzz::expect_input_error_only([&] { oracle::read_trace_dump(path); });
  std::remove(path.c_str());
  return 0;
}
