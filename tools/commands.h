#pragma once
// Subcommand registry. Each tools/cmd_<name>.cpp defines
//   Command setup_<name>(CLI::App& app);
// which adds the subcommand, binds its options struct (owned by the returned
// closure, no globals) and returns how to run it. main() runs the one parsed.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "tools/cli_common.h"

namespace oracle::tools {

struct Command {
  CLI::App* app = nullptr;   // the subcommand
  std::function<int()> run;  // returns an ExitCode
};

std::vector<Command> setup_all(CLI::App& app);

}  // namespace oracle::tools
