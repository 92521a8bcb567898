#pragma once
// ============================================================================
// Sharded audit jobs (docs/scale.md): replay, certify and golden verify deal
// their work items (records, corpus chunks) to workers in a fixed order —
// item i goes to worker i % N — and reduce the results in item order, so the
// report is byte-identical to one process's.
//   mpirun -np N oracle CMD ...       ranks gather their results on rank 0,
//                                     which writes the report (the others print nothing)
//   oracle CMD ... --shard I/N --part FILE   one worker of a job array writes
//                                     its results to FILE (a "part")
//   oracle merge FILE...              the N parts -> the report, exit code as CMD's
// A part holds the command, the job (inputs' identity and every option the
// report depends on: all parts must agree), the shard and its results.
// ============================================================================
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "distributed/communicator.h"

namespace oracle::tools {

struct Shard {
  int index = 0, count = 1;
  bool mine(size_t item) const { return (int)(item % (size_t)count) == index; }
};
// "I/N", 0 <= I < N: else InputError("--shard", "shard", ...).
Shard parse_shard(const std::string& spec);

struct ShardOptions {
  std::string shard;  // --shard I/N ("" = not a job-array worker)
  std::string part;   // --part FILE (required with --shard)
};
void add_shard_options(CLI::App* sub, ShardOptions& o);

// The whole items' results in item order -> the command's output; returns its exit code.
using Finisher = std::function<int(const std::vector<nlohmann::json>& results)>;

// One command's view of how its items are dealt.
class ShardRun {
 public:
  // Checks --shard/--part (InputError naming the option) and joins the MPI
  // world when launched by mpirun (--shard and mpirun exclude each other).
  ShardRun(const std::string& command, const ShardOptions& o);
  bool mine(size_t item) const { return shard_.mine(item); }
  const Shard& shard() const { return shard_; }
  // --shard given or more than one rank: results go through finish() (else the caller reports directly)
  bool sharded() const { return !opt_.shard.empty() || world_->size() > 1; }
  bool root() const { return world_->root(); }       // prints progress and output
  dist::Communicator& world() { return *world_; }
  // `results` = {index, result} of this worker's items (in item order), `n_items`
  // in all. --shard: writes the part and returns 0; MPI: gathers on rank 0,
  // which runs `finish`; every rank returns its exit code.
  int finish(const nlohmann::json& job, size_t n_items, std::vector<nlohmann::json> results, const Finisher& finish);

 private:
  std::string command_;
  ShardOptions opt_;
  Shard shard_;
  std::unique_ptr<dist::Communicator> world_;
};

// `oracle merge`: each command's finisher from its job (tools/cmd_<command>.cpp).
int finish_replay_job(const nlohmann::json& job, const std::vector<nlohmann::json>& results);
int finish_certify_job(const nlohmann::json& job, const std::vector<nlohmann::json>& results);
// ranks: --tp's per-rank statistics for the JSON output (null: none).
int finish_golden_verify_job(const nlohmann::json& job, const std::vector<nlohmann::json>& results,
                             const nlohmann::json& ranks);
// Reads and checks parts (same command and job, shards 0..N-1 once each, every
// item once) and returns the command, the job and the results in item order.
struct MergedParts {
  std::string command;
  nlohmann::json job;
  std::vector<nlohmann::json> results;
};
MergedParts read_parts(const std::vector<std::string>& files);

// A double as JSON that survives a round trip: finite numbers as numbers (the
// shortest exact decimal), else "inf", "-inf", "nan". And back.
nlohmann::json exact_double(double x);
double exact_double_from(const nlohmann::json& j, const std::string& where);

}  // namespace oracle::tools
