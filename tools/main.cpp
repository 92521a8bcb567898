// oracle — the LLM Oracle command line. Each subcommand lives in its own file
// (tools/cmd_<name>.cpp) exposing setup_<name>(CLI::App&).
#include <CLI/CLI.hpp>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"LLM Oracle: deterministic reference LLM inference and test oracle"};
  app.require_subcommand(1);
  std::vector<oracle::tools::Command> commands = oracle::tools::setup_all(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : oracle::tools::kExitBadInput;
  }
  for (auto& cmd : commands)
    if (cmd.app->parsed()) return oracle::tools::guarded(cmd.app->get_name(), cmd.run);
  return oracle::tools::kExitBadInput;
}
