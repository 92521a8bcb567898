// oracle version (also `oracle --version`): the tool version, the backends
// this binary carries and the CPU kernels' ISA path (reference/compute/isa.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/numerics_version.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/version.h"
#include "distributed/communicator.h"
#include "reference/compute/isa.h"

namespace oracle::tools {

Command setup_version(CLI::App& app) {
  auto* sub = app.add_subcommand("version", "Print the oracle version and the backends it carries");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print one JSON object");
  return {sub, [json] {
            nlohmann::json backends = {"reference", "cuda-emu"};
            if (cuda_backend_installed()) backends.push_back("cuda");
            const char* path = isa::isa_name(isa::kernels().isa);  // ORACLE_ISA or the CPU's best
            const std::vector<std::string> features = isa::feature_names(isa::cpu_features());
            const char* vendor = isa::vendor_name(isa::cpu_vendor());
            const char* prefetch = isa::prefetch_name(isa::decode_prefetch());  // ORACLE_PREFETCH or the vendor's
            if (*json) {
              std::printf("%s\n", nlohmann::json{{"version", kOracleVersion}, {kNumericsVersionField, num::kNumericsContractVersion},
                                                 {"backends", backends}, {"mpi", dist::mpi_built()}, {"isa", path},
                                                 {"cpu_features", features}, {"cpu_vendor", vendor},
                                                 {"decode_prefetch", prefetch}}.dump().c_str());
            } else {
              std::string list, flags;
              for (const auto& b : backends) list += (list.empty() ? "" : ", ") + b.get<std::string>();
              for (const auto& f : features) flags += (flags.empty() ? "" : " ") + f;
              std::printf("oracle %s (numerics_version %d; backends: %s; ISA path %s; CPU features: %s; CPU vendor %s, "
                          "decode prefetch %s)\n",
                          kOracleVersion, num::kNumericsContractVersion, list.c_str(), path, flags.c_str(), vendor,
                          prefetch);
            }
            return int(kExitOk);
          }};
}

}  // namespace oracle::tools
