#pragma once
// ============================================================================
// Replay of logged generations (docs/replay.md).
//   own     — records of our own log (replay_log.h): re-run with generate()
//             under the logged tuple; MATCH when every id, logprob, logits
//             hash, the text and the finish reason come back bit for bit.
//   foreign — OpenAI-style completion records from another engine: each token
//             is checked against the reference support under the stated
//             parameters, and logprobs (when given) within a tolerance.
// Whenever a record is not an exact MATCH, it is re-run teacher-forced along
// the logged ids so every step has the processed distribution, and each
// logged token gets a verdict:
//   not_reproducible — own log, token inside the support but not our draw
//   different_draw   — foreign log, token inside the support (RNG unknown)
//   impossible       — outside the support (top-k/top-p/min-p/greedy, banned,
//                      zero probability) or after a stop
//   borderline       — outside, but within the tolerance of the boundary
//   logprob_mismatch — foreign logprob further than the tolerance
// ============================================================================
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/errors.h"
#include "reference/generate/generate.h"
#include "numerics/profile.h"
#include "audit/replay/replay_log.h"

namespace oracle {

// Spelled as in the header comment only in the JSON report, the table and on
// the command line (the *_name functions and parse_replay_mode).
enum class ReplayMode { Auto, Own, Foreign };  // Auto: by each record's shape
enum class RecordStatus { Match, Plausible, Diverged, Error, UnknownModel };
enum class Verdict { NotReproducible, DifferentDraw, Impossible, Borderline, LogprobMismatch };
const char* replay_mode_name(ReplayMode m);             // "auto" | "own" | "foreign"
ReplayMode parse_replay_mode(const std::string& name);  // InputError("--mode", "mode", ...)
const char* status_name(RecordStatus s);                // "MATCH" | "PLAUSIBLE" | "DIVERGED" | "ERROR" | "UNKNOWN_MODEL"
const char* verdict_name(Verdict v);                    // "not_reproducible" | ... | "logprob_mismatch"
// Impossible or LogprobMismatch: the logged token cannot have come from the
// reference (a borderline, not-reproducible or different-draw token can).
bool implausible(Verdict v);

// How far an honest engine's logprobs lie from the reference's on one model
// (audit/replay/replay_calibration.h, docs/replay.md "Numerics and bounds").
struct CalibrationEntry {
  std::string model;         // file name, for people
  std::string model_sha256;  // the entry applies to this checkpoint ...
  std::string numerics;      // ... replayed with this profile (numerics_profile_name)
  std::string engine;        // the engine the calibration log came from (llamacpp-server, ...)
  std::string log, log_sha256;  // the calibration log
  int records = 0;
  int64_t values = 0;        // logprobs compared
  double max_abs_diff = 0.0, mean_abs_diff = 0.0;  // |logged - reference| over them (nats)
  double factor = 3.0;       // bound = factor * max_abs_diff (prompts the calibration did not see)
  double bound = 0.0;
};

// The bound a record's logprobs are judged by, and where it comes from.
struct EngineBound {
  double logprob = 0.0;  // nats
  std::string source;    // "calibration F (llamacpp-server, 4 records, max 0.12 x 2)" or "uncalibrated (--logprob-tol)"
};

struct ReplayOptions {
  ReplayMode mode = ReplayMode::Auto;
  // Engine records are teacher-forced with this profile's forward (own records
  // always with the canonical one that wrote them).
  num::NumericsProfile numerics = num::NumericsProfile::Canonical;
  std::vector<CalibrationEntry> calibration;  // --calibration FILE (empty: uncalibrated)
  std::string calibration_file;
  double prob_tolerance = 1e-4;     // borderline: mass distance to a top-p / hf min-p boundary
  double logit_tolerance = 1e-3;    // borderline: logit distance to a top-k / llamacpp min-p / greedy boundary
  double logprob_tolerance = 1e-3;  // foreign logprobs: |logged - reference| in nats; the profile's own
                                    // bound for engine records (MATCH), the engine bound when uncalibrated
  int jobs = 1;                     // records replayed in parallel (changes no output)
  // Own records' re-run: null = the reference's generate(); a device pipeline's
  // generate (oracle replay --backend). The divergence diagnosis stays on the reference.
  std::function<GenerationResult(const Model&, const Tokenizer&, const std::string&, const GenerateOptions&)> generate;
};

// The reference the records are replayed on.
struct ReplayModel {
  const Model& model;
  const Tokenizer& tokenizer;
  std::string model_sha256;
  std::string tokenizer_sha256;
};

// One logged token that is not an exact (own) or possible (foreign) match.
struct TokenFinding {
  int choice = 0;            // which completion of the record (n > 1 choices)
  int index = -1;            // position in the output (0 = first generated token)
  int logged = -1;
  int reproduced = -1;       // the reference's choice at this step, same history; -1 after a stop
  float raw_logprob = 0.0f;  // of the logged token
  int raw_rank = 0;
  float processed_logprob = 0.0f;  // -inf when the chain removed it
  int processed_rank = 0;          // 0 when the chain removed it
  Verdict verdict = Verdict::Impossible;  // see the header comment
  std::string reason;        // top_k, top_p, min_p, greedy, banned, zero_probability, after_stop,
                             // draw, logprobs, logits, logprob
  double margin = 0.0;       // distance past the support boundary (tolerance units of `reason`)
  std::string detail;        // one human sentence
};

struct RecordReport {
  int line = 0;
  std::string mode;     // "own" | "foreign" | an engine (llamacpp-server, openai-chat, vllm-completions, ...)
                        // ("" for an ERROR before the mode was known)
  RecordStatus status = RecordStatus::Error;
  int n_tokens = 0;     // logged output tokens
  int diverged_at = -1; // first failing token, -1 if none
  std::vector<TokenFinding> findings;  // in token order
  std::vector<std::string> notes;      // record-level differences (text, finish reason, length)
  std::string error;    // ERROR / UNKNOWN_MODEL: "<file>:<line>: <field>: <message>"
  std::string model;    // the checkpoint it was replayed on ("" = the single --model)
  int n_choices = 1;    // completions in the record
  // Engine records: the prompt replayed and where it came from ("prompt",
  // "prompt ids", "chat template chatml"), whether the log was a stream
  // (SSE chunks assembled), |logged - reference| over every compared logprob,
  // and the engine bound they were judged by.
  std::vector<int> prompt_ids;
  std::string prompt_from;
  int stream_chunks = 0;
  int64_t n_logprobs = 0;
  double max_logprob_diff = 0.0, sum_logprob_diff = 0.0;
  double bound = 0.0;
};

bool record_failed(const RecordReport& r);  // DIVERGED, ERROR or UNKNOWN_MODEL
// The finding a DIVERGED record's headline names: the first impossible or
// implausible (logprob_mismatch) token, else the first finding; nullptr if none.
const TokenFinding* headline_finding(const RecordReport& r);
// First finding with this verdict, nullptr if none.
const TokenFinding* first_finding(const RecordReport& r, Verdict verdict);

// ---- one record --------------------------------------------------------------------------
RecordReport replay_own(const LogRecord& record, const ReplayModel& rm, const ReplayOptions& o);
RecordReport replay_foreign(const nlohmann::json& record, const std::string& where, const ReplayModel& rm,
                            const ReplayOptions& o);
// Parses one line and replays it; never throws for bad input (status ERROR).
RecordReport replay_line(const LogLine& line, const std::string& file, const ReplayModel& rm,
                         const ReplayOptions& o);
// work(k) for k in [0, jobs), each on its own thread (inline when jobs == 1): worker k
// takes items k, k + jobs, ... into its own slots, so no counter is shared and the
// output order is the input order. A thread the system refuses is an
// InputError("--jobs", "jobs") once the started ones are joined.
void run_strided_jobs(size_t jobs, const std::function<void(size_t)>& work);
// An InputError from replaying the record at `where` as one line: "<where>:
// <field>: <message>", the thrower's file folded into the field unless it is
// the line itself, "record" or "json" ("sampler.top_p").
std::string replay_error_text(const InputError& e, const std::string& where);
// Every line, o.jobs at a time; reports in line order, identical for any jobs.
std::vector<RecordReport> replay_lines(const std::vector<LogLine>& lines, const std::string& file,
                                       const ReplayModel& rm, const ReplayOptions& o);

// ---- reporting -------------------------------------------------------------------------------
nlohmann::json replay_report_json(const std::vector<RecordReport>& reports, const std::string& file,
                                  const ReplayOptions& o);
// "numerics: canonical; profile bound ...; engine bound ..." (the first line of the table).
std::string replay_header(const ReplayOptions& o, const std::string& engine_bound_text);
std::string replay_summary_table(const std::vector<RecordReport>& reports);
// One record's entry of the JSON report, and back (exact: sharded replays
// gather records this way, tools/shard.h). InputError("part", ...) on a bad one.
nlohmann::json replay_record_json(const RecordReport& r);
RecordReport replay_record_from_json(const nlohmann::json& j);

// ---- building blocks (shared by own and foreign replay) ---------------------------------------
// What the teacher-forced re-run saw at one logged step.
struct ForcedStep {
  bool after_stop = false;    // the reference had already stopped before this token
  int reproduced = -1;        // sample() under the logged history and key
  LogprobReport logged_lp;    // the logged token under this step's raw / processed distributions
  std::string logits_sha256;
  std::string removed_by;     // "" if the logged token is in the support
  double margin = 0.0;        // distance past that processor's boundary
  bool margin_in_probability = false;  // its units (Sampler::removal_margin); else logits
};

struct ForcedRun {
  std::vector<ForcedStep> steps;  // (n_logged), the first after_stop one ends it
  bool still_running = false;     // no stop after the last logged token
};

// Re-runs the tuple along `logged` (ids checked against the vocab).
ForcedRun teacher_force(const ReplayModel& rm, const std::vector<int>& prompt_ids, const GenerateOptions& o,
                        const std::vector<int>& logged,
                        num::NumericsProfile numerics = num::NumericsProfile::Canonical);

// The verdict of logged token `index` from its forced step; false when it is
// fine. `own`: a token inside the support that is not our draw is
// not_reproducible (else different_draw).
bool classify_token(int index, int logged, const ForcedStep& s, const SamplerConfig& cfg, bool own,
                    const ReplayOptions& o, TokenFinding& f);

}  // namespace oracle
