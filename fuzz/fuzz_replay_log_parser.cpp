// libFuzzer: the replay log parser itself (audit/replay/replay_log.h) —
// read_log_lines on the input as a file (line splitting, CR handling, blank
// lines) and parse_log_line on every line (strict schema, checked integers,
// consistency checks). A record that parses must serialise and parse again to
// the same line. Expected failures: InputError only (never a nlohmann
// exception, a crash or undefined behaviour).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "fuzz/fuzz_support.h"
#include "audit/replay/replay_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char path[] = "/tmp/fuzz_replay_log_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return 0;
  const bool ok = ::write(fd, data, size) == (ssize_t)size;
  ::close(fd);
  try {
    if (ok)
      for (const oracle::LogLine& l : oracle::read_log_lines(path)) {
        try {
          const oracle::LogRecord r = oracle::parse_log_line(l.text, "fuzz:" + std::to_string(l.line_no));
          const std::string line = oracle::record_to_line(r);
          if (oracle::record_to_line(oracle::parse_log_line(line, "again")) != line) __builtin_trap();
        } catch (const oracle::InputError&) {
        }
      }
  } catch (const oracle::InputError&) {
  }
  ::unlink(path);
  return 0;
}
