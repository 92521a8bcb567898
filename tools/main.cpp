// oracle — the LLM Oracle command line. Each subcommand lives in its own file
// (tools/cmd_<name>.cpp) exposing setup_<name>(CLI::App&). argv goes through
// the alias table first (tools/cli_aliases.h: llama.cpp / HF spellings,
// `help CMD`, `--version`, "did you mean").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "tools/cli_aliases.h"
#include "tools/cli_help.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"LLM Oracle: deterministic reference LLM inference and test oracle.\n"
               "oracle help CMD shows one subcommand; docs/cli.md has them all"};
  app.name("oracle");
  app.require_subcommand(1);
  std::vector<oracle::tools::Command> commands = oracle::tools::setup_all(app);
  oracle::tools::finish_help(app);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    args = oracle::tools::normalize_args(app, args);
  } catch (const oracle::tools::UsageError& e) {
    std::fprintf(stderr, "oracle%s%s: error: %s\n", e.command.empty() ? "" : " ", e.command.c_str(), e.what());
    return oracle::tools::kExitBadInput;
  }
  if (args == std::vector<std::string>{"help-aliases"}) {
    std::fputs(oracle::tools::alias_table_markdown().c_str(), stdout);
    return 0;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : oracle::tools::kExitBadInput;
  }
  for (auto& cmd : commands)
    if (cmd.app->parsed()) return oracle::tools::guarded(cmd.app->get_name(), cmd.run);
  return oracle::tools::kExitBadInput;
}
