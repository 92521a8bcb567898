#pragma once
// llama.cpp / Hugging Face spellings of the oracle's options (docs/cli.md,
// "Aliases"): one table, applied to argv before CLI11 parses it, so every
// subcommand accepts them without listing them itself.
//   * an alias is rewritten to its canonical option where the subcommand has it
//     (`--temp 0.7` -> `--temperature 0.7`, `-c 256` -> `--context 256`);
//   * underscores in long names are dashes (`--top_p`, `--max_new_tokens`);
//   * `oracle help CMD...` is `oracle CMD... --help`; `oracle --version` is `oracle version`;
//   * an unknown option is a UsageError naming the closest known spelling.
#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace oracle::tools {

struct Alias {
  const char* spelling;   // "--temp", "-c"
  const char* canonical;  // "--temperature"
  const char* commands;   // subcommands it applies to ("run diff"), "*" = every one with `canonical`
  const char* origin;     // whose spelling: "llama.cpp", "llama-bench", "transformers", ...
};
const std::vector<Alias>& alias_table();

// An unknown option or subcommand: `command` is the subcommand path ("run",
// "golden verify"), what() the message with the "did you mean" suggestion.
struct UsageError : std::runtime_error {
  UsageError(std::string command, const std::string& message)
      : std::runtime_error(message), command(std::move(command)) {}
  std::string command;
};

// argv (without argv[0]) rewritten as described above. Throws UsageError.
std::vector<std::string> normalize_args(CLI::App& app, const std::vector<std::string>& args);

// The closest of `candidates` to `word` (edit distance, at most a third of its
// length, at least 2), or "" if none is close.
std::string closest_spelling(const std::string& word, const std::vector<std::string>& candidates);

// Every long option name and applicable alias of `sub` (completion, suggestions).
std::vector<std::string> option_spellings(const CLI::App& sub, const std::string& command);

// The canonical option `spelling` stands for in `sub` (its own name when it is
// one of sub's), or "" when sub has no such option.
std::string alias_target(const CLI::App& sub, const std::string& command, const std::string& spelling);

// The alias table as Markdown (docs/cli.md#aliases is this output: `oracle help aliases`).
std::string alias_table_markdown();

// "run", "golden verify": the subcommand path of `sub` below the root.
std::string command_path(const CLI::App* sub);

}  // namespace oracle::tools
