#pragma once
// ============================================================================
// The sampling-tuple log (docs/replay.md): one JSON line per generation with
// everything needed to replay it — tool version, model and tokenizer SHA-256,
// prompt text and ids, the complete sampler config (preset, order, seed), the
// stop config, output ids and text, finish reason and per-token logprobs.
// Schema "oracle-replay-log", version 1. Reading is strict: every field must
// be present with the right type and no unknown field is accepted; errors are
// InputError("<file>:<line>", "<field path>", ...).
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reference/generate/generate.h"

namespace oracle {

inline constexpr const char* kReplayLogSchema = "oracle-replay-log";
inline constexpr int kReplayLogVersion = 1;

// Which model produced the record (paths are hints; the hashes are checked).
struct ModelIdentity {
  std::string model;             // path; "" = the tools' embedded default model
  std::string model_sha256;
  std::string tokenizer;         // path or "embedded"
  std::string tokenizer_sha256;
  int context = 0;               // context length the model ran with
};

// The stop part of the tuple.
struct StopConfig {
  int max_tokens = 0;
  std::vector<std::string> stop_strings;
  std::vector<int> stop_token_ids;
  bool stop_on_eos = true;
};

// One generation: the tuple (identity, prompt, sampler, seq id, stops) and
// what it produced (ids, text, finish reason, per-step logits hash + logprobs).
struct LogRecord {
  int version = kReplayLogVersion;
  std::string tool_version;
  ModelIdentity identity;
  std::string prompt;
  std::vector<int> prompt_ids;  // (n_prompt) with BOS when add_bos
  bool add_bos = true;
  bool add_eos = false;        // written only when true (older records lack it)
  bool parse_special = false;  // written only when true
  SamplerConfig sampler;        // complete: preset, explicit order, seed
  uint32_t seq_id = 0;
  StopConfig stop;
  int logprobs_top_n = 0;
  std::vector<int> output_ids;  // (n_steps) including the token that stopped
  std::string text;
  std::string finish_reason;    // "stop" | "length"
  std::string stop_detail;      // "eos" | "stop_token" | "stop_string" | "length"
  std::vector<GenerationStep> steps;  // (n_steps)
};

// The record of one finished generate() call.
LogRecord make_log_record(const std::string& tool_version, const ModelIdentity& identity,
                          const std::string& prompt, const GenerateOptions& options,
                          const GenerationResult& result);
// The options that re-run the record's tuple (threads 1, no streaming callback).
GenerateOptions generate_options(const LogRecord& record);

nlohmann::json record_to_json(const LogRecord& record);
// Strict: InputError(where, field, ...) naming the first bad field.
LogRecord record_from_json(const nlohmann::json& j, const std::string& where);
// parse + record_from_json; a JSON syntax error names field "json".
LogRecord parse_log_line(const std::string& line, const std::string& where);
// One line (no trailing newline), UTF-8, no pretty-printing.
std::string record_to_line(const LogRecord& record);

// ---- log files ---------------------------------------------------------------------
// Appends record_to_line + "\n" (creates the file); InputError(path, ...) on I/O failure.
void append_log_record(const std::string& path, const LogRecord& record);

struct LogLine {
  int line_no = 0;   // 1-based
  std::string text;  // without the newline
};
// The non-blank lines of a log file; InputError(path, "file", ...) if unreadable.
std::vector<LogLine> read_log_lines(const std::string& path);
// Every own record (schema "oracle-replay-log") among `lines` must carry this oracle's
// numerics_version (docs/numerics.md §8): a log of another contract is refused whole,
// InputError("<path>:<line>", "numerics_version", ...), before anything replays. Lines
// that do not parse, and foreign records, are left to the per-line replay.
void check_log_numerics_version(const std::vector<LogLine>& lines, const std::string& path);

}  // namespace oracle
