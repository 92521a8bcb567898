#pragma once
// Shared by the libFuzzer targets: the loaders take paths, so each input is
// written to a per-process scratch file first. Any exception other than
// InputError (or a crash, leak or sanitizer report) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "base/errors.h"

namespace oracle::fuzz {

inline std::string scratch_path(const char* suffix) {
  const char* tmp = getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/oracle_fuzz_" + std::to_string(getpid()) + suffix;
}

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
}

// Runs body; InputError is the expected outcome for bad bytes.
template <typename F>
void expect_input_error_only(F body) {
  try {
    body();
  } catch (const InputError&) {
  }
}

}  // namespace oracle::fuzz
