// oracle completion bash: prints a bash completion script generated from the
// command tree itself (so it lists every subcommand, option and alias).
//   source <(oracle completion bash)
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tools/cli_help.h"
#include "tools/commands.h"

namespace oracle::tools {

Command setup_completion(CLI::App& app) {
  auto* sub = app.add_subcommand("completion", "Print a shell completion script: source <(oracle completion bash)");
  auto shell = std::make_shared<std::string>("bash");
  auto json = std::make_shared<bool>(false);
  sub->add_option("shell", *shell, "Shell (bash)")->check(CLI::IsMember({"bash"}));
  sub->add_flag("--json", *json, "Print one JSON object {shell, script}");
  return {sub, [&app, shell, json] {
            const std::string script = bash_completion(app);
            if (*json) std::printf("%s\n", nlohmann::json{{"shell", *shell}, {"script", script}}.dump().c_str());
            else std::fputs(script.c_str(), stdout);
            return int(kExitOk);
          }};
}

}  // namespace oracle::tools
