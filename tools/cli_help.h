#pragma once
// Help text and shell completion for the whole `oracle` command tree.
#include <CLI/CLI.hpp>
#include <string>

namespace oracle::tools {

// After every setup_<cmd>: each option's help shows its default (flags show
// none), and each subcommand's help ends with the llama.cpp / HF spellings it
// accepts (tools/cli_aliases.h).
void finish_help(CLI::App& app);

// A bash completion script for `app` (subcommands, options, aliases; file
// names for values): `source <(oracle completion bash)`.
std::string bash_completion(const CLI::App& app);

}  // namespace oracle::tools
