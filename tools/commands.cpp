#include "tools/commands.h"

namespace oracle::tools {

// One line per subcommand; each is defined in tools/cmd_<name>.cpp.
Command setup_version(CLI::App& app);

std::vector<Command> setup_all(CLI::App& app) {
  return {
      setup_version(app),
  };
}

}  // namespace oracle::tools
