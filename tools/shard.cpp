// Sharded audit jobs: --shard/--part, the MPI gather, parts and their merge (shard.h).
#include "tools/shard.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "base/errors.h"
#include "base/file_io.h"
#include "base/json_util.h"
#include "base/numerics_version.h"

namespace oracle::tools {

using nlohmann::json;

Shard parse_shard(const std::string& spec) {
  const size_t slash = spec.find('/');
  auto number = [&](const std::string& s) {
    require_input(!s.empty() && s.size() < 9 && s.find_first_not_of("0123456789") == std::string::npos, "--shard",
                  "shard", "expected I/N with 0 <= I < N (e.g. 0/4), got '" + spec + "'");
    return std::stoi(s);
  };
  require_input(slash != std::string::npos, "--shard", "shard", "expected I/N (e.g. 0/4), got '" + spec + "'");
  Shard s{number(spec.substr(0, slash)), number(spec.substr(slash + 1))};
  require_input(s.count >= 1 && s.index < s.count, "--shard", "shard",
                "expected I/N with 0 <= I < N, got '" + spec + "'");
  return s;
}

void add_shard_options(CLI::App* sub, ShardOptions& o) {
  sub->add_option("--shard", o.shard, "Job-array worker I of N (I/N): compute items i with i % N == I, write --part")
      ->group("Sharding (docs/scale.md)");
  sub->add_option("--part", o.part, "With --shard: write this worker's results here (oracle merge joins the parts)")
      ->group("Sharding (docs/scale.md)");
}

ShardRun::ShardRun(const std::string& command, const ShardOptions& o) : command_(command), opt_(o) {
  if (!o.shard.empty()) {
    shard_ = parse_shard(o.shard);
    require_input(!o.part.empty(), "--part", "part", "--shard needs --part FILE (the worker's results)");
    check_output_path(o.part, "--part");
  } else {
    require_input(o.part.empty(), "--part", "part", "--part is written by a --shard I/N worker only");
  }
  world_ = dist::world();
  if (world_->size() > 1) {
    require_input(o.shard.empty(), "--shard", "shard", "give --shard or run under mpirun, not both");
    shard_ = {world_->rank(), world_->size()};
  }
}

int ShardRun::finish(const json& job, size_t n_items, std::vector<json> results, const Finisher& finish) {
  if (!opt_.shard.empty()) {
    json part{{"schema", "oracle-shard-part"}, {"version", 1}, {"command", command_}, {"job", job},
              {"shard", {shard_.index, shard_.count}}, {"items", n_items}, {"results", results}};
    stamp_numerics_version(part);  // docs/numerics.md "Versioning": merge refuses parts of another contract
    write_file_atomic(opt_.part, "--part", part.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
    std::fprintf(stderr, "%s: shard %d/%d: %zu of %zu items written to %s (oracle merge joins the parts)\n",
                 command_.c_str(), shard_.index, shard_.count, results.size(), n_items, opt_.part.c_str());
    return 0;
  }
  if (world_->size() == 1) {
    std::vector<json> ordered;
    for (json& r : results) ordered.push_back(std::move(r["result"]));
    return finish(ordered);
  }
  const std::vector<std::string> parts = world_->gather(json(results).dump());
  int code = 0;
  if (world_->root()) {
    std::vector<json> all(n_items);  // (items) in item order
    for (const std::string& p : parts)
      for (json& r : json::parse(p)) all[r["index"].get<size_t>()] = std::move(r["result"]);
    code = finish(all);
  }
  return world_->broadcast(code);
}

// ---- parts -------------------------------------------------------------------------------
namespace {

json read_part(const std::string& file) {
  const json p = parse_json_text(read_regular_file(file, "part"), file, "part");
  require_input(p.is_object() && p.value("schema", "") == "oracle-shard-part", file, "schema",
                "not an oracle shard part (written by CMD --shard I/N --part FILE)");
  require_input(p.value("version", 0) == 1, file, "version", "unsupported part version");
  check_numerics_version(p, file, "re-run that worker (CMD --shard I/N --part FILE) with this oracle");
  for (const char* k : {"command", "job", "shard", "items", "results"})
    require_input(p.contains(k), file, k, "missing");
  require_input(p["results"].is_array() && p["shard"].is_array() && p["shard"].size() == 2, file, "shard",
                "malformed part");
  return p;
}

}  // namespace

MergedParts read_parts(const std::vector<std::string>& files) {
  require_input(!files.empty(), "command line", "parts", "oracle merge needs the part files");
  MergedParts m;
  std::vector<json> parts;
  for (const std::string& f : files) parts.push_back(read_part(f));
  const int count = parts[0]["shard"][1].get<int>();
  const size_t n_items = parts[0]["items"].get<size_t>();
  m.command = parts[0]["command"].get<std::string>();
  m.job = parts[0]["job"];
  require_input((int)files.size() == count, files[0], "shard",
                "the job has " + std::to_string(count) + " shards but " + std::to_string(files.size()) +
                    " parts were given");
  std::vector<int> seen(count, 0);
  std::vector<int> have(n_items, 0);
  m.results.resize(n_items);
  for (size_t f = 0; f < parts.size(); f++) {
    const json& p = parts[f];
    require_input(p["command"] == m.command && p["job"] == m.job && p["items"] == parts[0]["items"] &&
                      p["shard"][1] == count,
                  files[f], "job", "not a part of the same job as " + files[0] + " (command, inputs or options differ)");
    const int index = p["shard"][0].get<int>();
    require_input(index >= 0 && index < count && !seen[index]++, files[f], "shard",
                  "shard " + std::to_string(index) + " given twice or out of range");
    for (const json& r : p["results"]) {
      const size_t i = r.at("index").get<size_t>();
      require_input(i < n_items && (int)(i % count) == index && !have[i]++, files[f], "results",
                    "item " + std::to_string(i) + " is not this shard's, or repeated");
      m.results[i] = r.at("result");
    }
  }
  for (size_t i = 0; i < n_items; i++)
    require_input(have[i] == 1, files[0], "results", "item " + std::to_string(i) + " is in no part");
  return m;
}

json exact_double(double x) {
  if (std::isfinite(x)) return x;
  return x != x ? "nan" : x > 0 ? "inf" : "-inf";
}

double exact_double_from(const json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.is_string() ? j.get<std::string>() : "";
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  throw InputError(where, "results", "expected a number, \"inf\", \"-inf\" or \"nan\"");
}

}  // namespace oracle::tools
