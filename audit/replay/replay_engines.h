#pragma once
// ============================================================================
// Replay of engine logs (replay_adapters.h) and of logs that mix models
// (docs/replay.md, "Engine logs", "Mixed-model logs").
// Every choice of an adapted record is teacher-forced along its logged ids on
// the reference; each token gets replay.h's support verdict, the chosen
// token's logprob and the full logged top-N list are compared with the
// reference's (raw, or processed for llama.cpp post_sampling_probs):
//   - a logged alternative whose logprob is further than logprob_tolerance
//     from the reference's, or that is not in the reference's top 2N+4;
//   - a reference top-N token missing from the logged list while it beats the
//     list's last entry by more than the tolerance (ties at the cut are fine);
// each is a logprob_mismatch (implausible) finding, reason "top_logprobs".
// Records in == records reported: one RecordReport per line, whatever happens.
// ============================================================================
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/replay/replay_adapters.h"
#include "audit/replay/replay.h"

namespace oracle {

RecordReport replay_adapted(const AdaptedRecord& record, const ReplayModel& rm, const ReplayOptions& o);

// Which checkpoint a record belongs to. `resolve` returns nullptr with `why`
// set (naming the record's model) when the record's model is not available.
struct ModelResolver {
  std::function<const ReplayModel*(const nlohmann::json& record, std::string& why)> resolve;
  std::string name_of(const ReplayModel* m) const;  // "" for the single-model case
  std::function<std::string(const ReplayModel*)> describe;
};

// A resolver that always answers `rm` (the single --model case). Own records
// still have their hashes checked by replay_own.
ModelResolver single_model(const ReplayModel& rm);

// --models DIR or a manifest: checkpoints found by SHA-256 (own records, or a
// record's "model_sha256") or by name (engine "model" fields: exact path,
// file name, or file name without extension; for "org/name" the last part).
// Manifest: JSON {"models": [{"name": "...", "path": "...", "tokenizer": "..."}]}.
// Models are loaded on first use by `load` (thread-safe).
struct CatalogEntry {
  std::vector<std::string> names;  // names the entry answers to
  std::string path, tokenizer;
};
using CatalogLoader = std::function<std::shared_ptr<const ReplayModel>(const CatalogEntry&)>;
class ModelCatalog {
 public:
  ModelCatalog(const std::string& dir_or_manifest, CatalogLoader load);
  ModelResolver resolver();
  const std::vector<CatalogEntry>& entries() const { return entries_; }

 private:
  const ReplayModel* get(size_t i);
  const ReplayModel* find(const nlohmann::json& record, std::string& why);
  std::vector<CatalogEntry> entries_;
  std::vector<std::shared_ptr<const ReplayModel>> loaded_;  // (entries) null until used
  std::vector<std::string> sha256_;                    // (entries) "" until hashed
  CatalogLoader load_;
  std::mutex mu_;
};

// One line -> one report (never throws): own, legacy foreign or engine records.
RecordReport replay_engine_line(const LogLine& line, const std::string& file, const ModelResolver& models,
                                const ReplayOptions& o);
std::vector<RecordReport> replay_engine_lines(const std::vector<LogLine>& lines, const std::string& file,
                                              const ModelResolver& models, const ReplayOptions& o);

}  // namespace oracle
