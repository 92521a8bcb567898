#pragma once
// Shared pieces of the `oracle` command: exit codes and error reporting.
#include <functional>
#include <string>

namespace oracle::tools {

// Stable exit codes for every subcommand.
enum ExitCode : int { kExitOk = 0, kExitCheckFailed = 1, kExitBadInput = 2 };

// Runs `body`, turning InputError / CLI errors / std::exception into one line on
// stderr ("oracle <cmd>: error: <file>: <field>: <message>") and exit code 2.
int guarded(const std::string& command, const std::function<int()>& body);

}  // namespace oracle::tools
