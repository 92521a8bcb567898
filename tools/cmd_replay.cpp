// oracle replay: re-run every record of a sampling-tuple log (or check foreign
// completion records for plausibility) on the reference; summary table on
// stdout, optional JSON report, exit 1 when a record fails, 2 on unusable
// input (docs/replay.md). A thin layer over audit/replay.h.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "reference/base/errors.h"
#include "audit/replay.h"
#include "tools/commands.h"
#include "tools/model_args.h"

namespace oracle::tools {

struct ReplayOptions {
  std::string log;
  std::string json_out;  // --json report file
  ModelOptions model;       // overrides; empty = the first own record's model
  oracle::ReplayOptions replay;
};

// The model to replay on: --model/--tokenizer, else the first own record's
// (with its context length). A log without own records needs --model.
static ModelOptions model_for(const std::vector<LogLine>& lines, const ReplayOptions& o) {
  ModelOptions args = o.model;
  for (const LogLine& l : lines) {
    LogRecord r;
    try {
      r = parse_log_line(l.text, o.log + ":" + std::to_string(l.line_no));
    } catch (const InputError&) {
      continue;  // reported per line by the replay itself
    }
    if (o.model.model.empty()) {
      args.model = r.identity.model;
      if (o.model.tokenizer.empty()) args.tokenizer = r.identity.tokenizer == "embedded" ? "" : r.identity.tokenizer;
    }
    if (args.context == 0) args.context = r.identity.context;
    return args;
  }
  require_input(!o.model.model.empty(), o.log, "model",
                "no valid oracle log record names a model; pass --model (and --tokenizer) for foreign records");
  return args;
}

// Every parseable own record must name the model and tokenizer being used.
static void check_hashes(const std::vector<LogLine>& lines, const LoadedModel& lm, const ReplayOptions& o) {
  for (const LogLine& l : lines) {
    const std::string where = o.log + ":" + std::to_string(l.line_no);
    LogRecord r;
    try {
      r = parse_log_line(l.text, where);
    } catch (const InputError&) {
      continue;
    }
    require_input(r.identity.model_sha256 == lm.model.sha256, where, "model.sha256",
                  "the log was written with model " + r.identity.model_sha256 + " but " +
                      (lm.model.path.empty() ? std::string("the embedded model") : lm.model.path) + " has " +
                      lm.model.sha256);
    require_input(r.identity.tokenizer_sha256 == lm.tokenizer_sha256, where, "tokenizer.sha256",
                  "the log was written with tokenizer " + r.identity.tokenizer_sha256 + " but " +
                      lm.tokenizer_source + " has " + lm.tokenizer_sha256);
  }
}

static void write_report(const std::string& path, const nlohmann::json& report) {
  std::ofstream f(path, std::ios::binary);
  require_input((bool)f, path, "file", "cannot write the report");
  f << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  require_input((bool)f, path, "file", "write failed");
}

int run_replay(const ReplayOptions& o) {
  const std::vector<LogLine> lines = read_log_lines(o.log);
  require_input(!lines.empty(), o.log, "records", "the log holds no records");
  const LoadedModel lm = load_model_and_tokenizer(model_for(lines, o));
  if (o.replay.mode != "foreign") check_hashes(lines, lm, o);
  const ReplayModel rm{lm.model, lm.tokenizer, lm.model.sha256, lm.tokenizer_sha256};
  const std::vector<RecordReport> reports = replay_lines(lines, o.log, rm, o.replay);
  std::fputs(replay_summary_table(reports).c_str(), stdout);
  if (!o.json_out.empty()) write_report(o.json_out, replay_report_json(reports, o.log, o.replay));
  for (const RecordReport& r : reports)
    if (record_failed(r)) return kExitCheckFailed;
  return kExitOk;
}

Command setup_replay(CLI::App& app) {
  auto opts = std::make_shared<ReplayOptions>();
  auto* sub = app.add_subcommand("replay", "Replay a sampling-tuple log (or check foreign completion records)");
  sub->add_option("log", opts->log, "JSON-lines log (oracle run --log, or OpenAI-style records)")->required();
  sub->add_option("--model,-m", opts->model.model, "Model override (its SHA-256 must match the log)");
  sub->add_option("--tokenizer,-z", opts->model.tokenizer, "Tokenizer override (its SHA-256 must match the log)");
  sub->add_option("--context", opts->model.context, "Context length (default: the log's)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--mode", opts->replay.mode, "own, foreign or auto (by each record's shape)")
      ->check(CLI::IsMember({"own", "foreign", "auto"}));
  sub->add_option("--jobs,-j", opts->replay.jobs, "Records replayed in parallel (same output)")
      ->check(CLI::Range(1, 256));
  sub->add_option("--json", opts->json_out, "Write the JSON report to this file");
  sub->add_option("--prob-tol", opts->replay.prob_tolerance, "Borderline distance in probability mass");
  sub->add_option("--logit-tol", opts->replay.logit_tolerance, "Borderline distance in logits");
  sub->add_option("--logprob-tol", opts->replay.logprob_tolerance, "Foreign logprob tolerance (nats)");
  return {sub, [opts] { return run_replay(*opts); }};
}

}  // namespace oracle::tools
