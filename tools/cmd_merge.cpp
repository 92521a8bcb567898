// oracle merge PART...: the parts of a sharded job (CMD --shard I/N --part FILE)
// -> the report CMD would have written in one process, byte for byte, and its
// exit code (tools/shard.h, docs/scale.md).
#include <string>
#include <vector>

#include "tools/commands.h"
#include "tools/shard.h"

namespace oracle::tools {

struct MergeOptions {
  std::vector<std::string> parts;
};

static int run_merge(const MergeOptions& o) {
  const MergedParts m = read_parts(o.parts);
  if (m.command == "replay") return finish_replay_job(m.job, m.results);
  if (m.command == "certify") return finish_certify_job(m.job, m.results);
  if (m.command == "golden verify") return finish_golden_verify_job(m.job, m.results, nullptr);
  throw InputError(o.parts[0], "command", "unknown command '" + m.command + "' (replay, certify or golden verify)");
}

Command setup_merge(CLI::App& app) {
  auto opts = std::make_shared<MergeOptions>();
  auto* sub = app.add_subcommand(
      "merge", "Join the parts of a sharded replay / certify / golden verify (--shard I/N --part FILE) into its report");
  sub->add_option("parts", opts->parts, "Every part of the job (one per shard, any order)")->required();
  // The report's format (table or --json) is what the shards' command line asked for;
  // --json here makes an error one JSON object on stdout, as for every command.
  sub->add_flag("--json", [](int64_t) {}, "Errors as one JSON object (the report's format is the shards')");
  return {sub, [opts] { return run_merge(*opts); }};
}

}  // namespace oracle::tools
