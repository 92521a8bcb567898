// oracle — the LLM Oracle command line. Each subcommand lives in its own file
// (tools/cmd_<name>.cpp) exposing setup_<name>(CLI::App&). argv goes through
// the alias table first (tools/cli_aliases.h: llama.cpp / HF spellings,
// `help CMD`, `--version`, "did you mean") and every error, from CLI11's
// parser or from a subcommand, leaves through print_error (tools/cli_common.h):
// one line on stderr, and with --json one JSON object on stdout.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "reference/compute/isa.h"
#include "tools/cli_aliases.h"
#include "tools/cli_help.h"
#include "tools/commands.h"

namespace {

// "golden verify" for nested subcommands.
std::string command_path(const CLI::App* app) {
  std::string path;
  for (const CLI::App* at = app; at && at->get_parent(); at = at->get_parent())
    path = at->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"LLM Oracle: deterministic reference LLM inference and test oracle.\n"
               "oracle help CMD shows one subcommand; docs/cli.md has them all"};
  app.name("oracle");
  app.require_subcommand(1);
  std::vector<oracle::tools::Command> commands = oracle::tools::setup_all(app);
  oracle::tools::finish_help(app);
  const bool json = oracle::tools::wants_json(argc, argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    args = oracle::tools::normalize_args(app, args);
  } catch (const oracle::tools::UsageError& e) {
    oracle::tools::print_error({e.command, oracle::tools::kCommandLine, "option", e.what()}, json);
    return oracle::tools::kExitBadInput;
  }
  if (args == std::vector<std::string>{"help-aliases"}) {
    std::fputs(oracle::tools::alias_table_markdown().c_str(), stdout);
    return 0;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    oracle::tools::print_error(oracle::tools::parse_error_report(app, e), json);
    return oracle::tools::kExitBadInput;
  }
  for (auto& cmd : commands)
    if (cmd.app->parsed()) {
      const CLI::App* leaf = cmd.app;
      for (const CLI::App* sub : cmd.app->get_subcommands()) leaf = sub;
      // The ISA path is chosen before any command runs, so that a bad
      // $ORACLE_ISA is refused (exit 2) here rather than inside a kernel.
      return oracle::tools::guarded(command_path(leaf), json, [&] {
        oracle::isa::kernels();
        return cmd.run();
      });
    }
  return oracle::tools::kExitBadInput;
}
