// oracle version (also `oracle --version`): the tool version and the backends
// this binary carries.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/version.h"
#include "distributed/communicator.h"

namespace oracle::tools {

Command setup_version(CLI::App& app) {
  auto* sub = app.add_subcommand("version", "Print the oracle version and the backends it carries");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print one JSON object");
  return {sub, [json] {
            nlohmann::json backends = {"reference", "cuda-emu"};
            if (device_pipeline_cuda() != nullptr) backends.push_back("cuda");
            if (*json) {
              std::printf("%s\n", nlohmann::json{{"version", kOracleVersion}, {"backends", backends}, {"mpi", dist::mpi_built()}}.dump().c_str());
            } else {
              std::string list;
              for (const auto& b : backends) list += (list.empty() ? "" : ", ") + b.get<std::string>();
              std::printf("oracle %s (backends: %s)\n", kOracleVersion, list.c_str());
            }
            return int(kExitOk);
          }};
}

}  // namespace oracle::tools
