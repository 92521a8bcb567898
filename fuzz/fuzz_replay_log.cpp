// libFuzzer: the JSON record parsing behind replay logs. The replay log
// parser (audit/replay/replay_log.h parse_log_line) had not landed when this
// target was written, so it parses each input line as JSON and reads it as
// a GenerationResult (reference/generate/generate.h from_json), the record the log
// stores. Expected failures: nlohmann::json::exception and InputError.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.h"
#include "reference/generate/generate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line((const char*)data, size);
  try {
    nlohmann::json j = nlohmann::json::parse(line);
    oracle::GenerationResult r = j.get<oracle::GenerationResult>();
    nlohmann::json back = r;  // a record that parsed must serialise again
    back.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const nlohmann::json::exception&) {
  } catch (const oracle::InputError&) {
  }
  return 0;
}
