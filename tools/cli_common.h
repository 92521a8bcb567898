#pragma once
// Shared pieces of the `oracle` command: exit codes, option validators built
// on the one checked-integer reader, and the one error format (docs/cli.md,
// "Errors"):
//   stderr, always one line:  oracle <cmd>: error: <file>: <field>: <message>
//   stdout, with --json:      {"error": {"file", "field", "message", "exit_code"}}
// Every byte that came from a file or the command line is escaped
// (base/errors.h escape_bytes). Command-line mistakes name the file
// "command line" and the option as the field.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "base/checked_int.h"
#include "base/escape.h"

namespace oracle::tools {

// Stable exit codes for every subcommand.
enum ExitCode : int { kExitOk = 0, kExitCheckFailed = 1, kExitBadInput = 2 };

// The "file" of an error in an option's value.
inline const char* const kCommandLine = "command line";

struct ErrorReport {
  std::string command;  // "run", "golden verify", "" before a subcommand is known
  std::string file, field, message;
  int exit_code = kExitBadInput;
};

// Prints the report: one line on stderr; with json also one object on stdout.
void print_error(const ErrorReport& e, bool json);

// Runs `body`, turning InputError / std::bad_alloc / std::exception into
// print_error(...) and exit code 2.
int guarded(const std::string& command, bool json, const std::function<int()>& body);
// The per-subcommand wrapper: main() already runs every subcommand inside
// guarded(path, json, ...), so this one only runs the body.
inline int guarded(const std::string& /*command*/, const std::function<int()>& body) { return body(); }

// A CLI11 parse error (unknown option or subcommand, bad value, missing
// argument) as a report: the option becomes the field.
ErrorReport parse_error_report(const CLI::App& app, const CLI::ParseError& e);

// True when argv asks for JSON output (--json anywhere, with or without a value).
bool wants_json(int argc, const char* const* argv);

// Option validators: the value text is read by checked_int (no saturation:
// 2^64 and -1 are errors for a uint64 seed) or as a finite float in range.
// `hidden_name`: the option's name for options in the hidden group "" (CLI11
// reports those with an empty name; the message then carries it).
template <typename T>
CLI::Validator int_in(T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max(),
                      const std::string& hidden_name = "") {
  return CLI::Validator(
      [lo, hi, hidden_name](std::string& text) -> std::string {
        try {
          checked_int<T>(text, kCommandLine, "", lo, hi);
          return "";
        } catch (const InputError& e) {
          return (hidden_name.empty() ? "" : hidden_name + ": ") + input_error_message(e);
        }
      },
      "INT in " + int_range_text(lo, hi));
}
// A finite float in [lo, hi] (lo_open: (lo, hi]).
CLI::Validator float_in(double lo, double hi, bool lo_open = false);

}  // namespace oracle::tools
