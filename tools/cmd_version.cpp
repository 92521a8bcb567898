// oracle version: prints the tool version (and the numerics spec revision).
#include <cstdio>

#include "tools/commands.h"
#include "tools/version.h"

namespace oracle::tools {

Command setup_version(CLI::App& app) {
  auto* sub = app.add_subcommand("version", "Print the oracle version");
  return {sub, [] {
            std::printf("oracle %s\n", kOracleVersion);
            return int(kExitOk);
          }};
}

}  // namespace oracle::tools
