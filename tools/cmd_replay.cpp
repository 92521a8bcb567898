// oracle replay: re-run every record of a sampling-tuple log (or check foreign
// completion records for plausibility) on the reference; summary table on
// stdout, optional JSON report, exit 1 when a record fails, 2 on unusable
// input (docs/replay.md). A thin layer over audit/replay/replay.h.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "audit/replay/replay.h"
#include "audit/replay/replay_calibration.h"
#include "audit/replay/replay_engines.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "base/atomic_file.h"
#include "base/file_io.h"
#include "tools/commands.h"
#include "base/sha256.h"
#include "tools/device_backend.h"
#include "tools/progress.h"
#include "tools/model_args.h"
#include "tools/shard.h"

namespace oracle::tools {

struct ReplayOptions {
  std::string log;
  std::string json_out;  // --report FILE: the JSON report
  bool json = false;     // --json: the JSON report on stdout instead of the table
  bool quiet = false;    // --quiet: no progress
  ModelOptions model;       // overrides; empty = the first own record's model
  std::string models;       // --models DIR|MANIFEST: mixed-model logs (audit/replay/replay_engines.h)
  oracle::ReplayOptions replay;
  std::string mode = "auto";  // --mode (parsed into replay.mode)
  ShardOptions shard;         // --shard I/N --part FILE (tools/shard.h)
  std::string backend = "reference";  // own records re-run on a device pipeline (tools/device_backend.h)
  std::string numerics = "canonical";  // --numerics (parsed into replay.numerics)
  std::string calibrate;               // --calibrate FILE: measure the engine bound, merge it into FILE
};

// --numerics: the profile engine records are teacher-forced with. A profile
// forward() does not implement is refused here, before any record (exit 2),
// never replaced by another.
static void use_numerics(ReplayOptions& o) {
  const auto p = num::parse_numerics_profile(o.numerics);
  require_input(p.has_value(), o.numerics, "--numerics", "expected canonical or ggml");
  o.replay.numerics = *p;
  if (!o.replay.calibration_file.empty()) o.replay.calibration = read_calibration(o.replay.calibration_file);
}

// One token through forward() with the profile: InputError "numerics" where it is not implemented.
static void probe_numerics(const Model& m, const Tokenizer& t, num::NumericsProfile p) {
  if (p == num::NumericsProfile::Canonical) return;
  KvCache kv(m.config, KvCacheOptions{});
  ForwardOptions fo;
  fo.numerics = p;
  const int token = t.bos_id() >= 0 && t.bos_id() < m.config.vocab_size ? t.bos_id() : 0;
  (void)forward(m, kv, 0, std::span<const int>(&token, 1), fo);
}

// --backend cuda-emu|cuda: own records only (foreign records are teacher-forced on the
// reference), one job at a time; the re-run is the device's generate in deterministic mode.
static void use_backend(ReplayOptions& o) {
  const DevicePipeline* dev = require_backend(o.backend);
  if (!dev) return;
  require_input(o.mode == "own", o.mode, "--mode", "--backend " + o.backend + " replays own records only (--mode own)");
  require_input(o.replay.jobs == 1, std::to_string(o.replay.jobs), "--jobs",
                "--backend " + o.backend + " replays one record at a time");
  require_input(o.models.empty(), o.models, "--models", "--backend " + o.backend + " replays one model (--model)");
  o.replay.generate = [dev](const Model& m, const Tokenizer& t, const std::string& prompt, const GenerateOptions& g) {
    return dev->generate(m, t, prompt, g, DeviceMode::Deterministic);
  };
}

// A loaded model with the ReplayModel view of it (the view points into the holder).
struct ReplayHolder {
  LoadedModel lm;
  ReplayModel rm;
  explicit ReplayHolder(LoadedModel m)
      : lm(std::move(m)), rm{lm.model, lm.tokenizer, lm.model.sha256, lm.tokenizer_sha256} {}
};

static std::shared_ptr<const ReplayModel> load_entry(const CatalogEntry& e, const ReplayOptions& o) {
  ModelOptions args = o.model;
  args.model = e.path;
  args.tokenizer = e.tokenizer;
  auto h = std::make_shared<ReplayHolder>(load_model_and_tokenizer(args));
  probe_numerics(h->lm.model, h->lm.tokenizer, o.replay.numerics);
  return std::shared_ptr<const ReplayModel>(h, &h->rm);
}

static int exit_code(const std::vector<RecordReport>& reports) {
  for (const RecordReport& r : reports)
    if (record_failed(r)) return kExitCheckFailed;
  return kExitOk;
}

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
    // The log's context; loaded even above the trained one so that a model of another hash is
    // named first (check_hashes), then refused there without --allow-context-extension.
    if (args.context == 0) {
      args.context = r.identity.context;
      args.allow_context_extension = true;
    }
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

// A context above the model's trained one is refused as `run` refuses it: the log does not
// record that its run asked for the extension.
static void check_context(const Model& m, const ReplayOptions& o) {
  require_input(!m.config.context_extended || o.model.allow_context_extension,
                m.path.empty() ? std::string("the embedded model") : m.path, "context_length",
                "context " + std::to_string(m.config.seq_len) + " exceeds the trained context " +
                    std::to_string(m.config.trained_context) +
                    " (positions past it were never trained; pass --allow-context-extension to replay anyway)");
}

static void write_report(const std::string& path, const nlohmann::json& report) {
  write_file_atomic(path, "--report", report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

static void finish(const std::vector<RecordReport>& reports, const ReplayOptions& o, const std::string& bound_text) {
  if (!o.json) std::fputs(replay_header(o.replay, bound_text).c_str(), stdout);
  if (o.json)
    std::printf("%s\n", replay_report_json(reports, o.log, o.replay)
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  else
    std::fputs(replay_summary_table(reports).c_str(), stdout);
  if (!o.json_out.empty()) write_report(o.json_out, replay_report_json(reports, o.log, o.replay));
}

// In batches, for the progress line; each record's report depends on that record only.
static std::vector<RecordReport> replay_with_progress(const std::vector<LogLine>& lines, const ModelResolver& models,
                                                      const ReplayOptions& o, bool show) {
  std::vector<RecordReport> reports;
  Progress progress("replay", (int64_t)lines.size(), show && !o.quiet && !o.json);
  const size_t batch = (size_t)std::max(1, o.replay.jobs) * 8;
  for (size_t at = 0; at < lines.size(); at += batch) {
    const std::vector<LogLine> part(lines.begin() + (long)at, lines.begin() + (long)std::min(lines.size(), at + batch));
    for (RecordReport& r : replay_engine_lines(part, o.log, models, o.replay)) reports.push_back(std::move(r));
    progress.update((int64_t)reports.size());
  }
  progress.finish();
  return reports;
}

// Everything the report depends on, and the log's identity: every part of a
// sharded replay must agree on it (tools/shard.h).
static nlohmann::json replay_job(const ReplayOptions& o, const std::vector<LogLine>& lines, const std::string& bound) {
  std::string text;
  for (const LogLine& l : lines) text += std::to_string(l.line_no) + ":" + l.text + "\n";
  return {{"log", o.log}, {"log_sha256", sha256_hex(text.data(), text.size())}, {"model", o.model.model},
          {"models", o.models}, {"mode", replay_mode_name(o.replay.mode)},
          {"prob_tol", o.replay.prob_tolerance}, {"logit_tol", o.replay.logit_tolerance},
          {"logprob_tol", o.replay.logprob_tolerance}, {"json", o.json}, {"report", o.json_out},
          {"numerics", o.numerics}, {"calibration", o.replay.calibration_file}, {"bound_text", bound}};
}

int finish_replay_job(const nlohmann::json& job, const std::vector<nlohmann::json>& results) {
  ReplayOptions o;
  o.log = job.at("log");
  o.replay.mode = parse_replay_mode(job.at("mode"));
  o.replay.prob_tolerance = job.at("prob_tol");
  o.replay.logit_tolerance = job.at("logit_tol");
  o.replay.logprob_tolerance = job.at("logprob_tol");
  o.json = job.at("json");
  o.json_out = job.at("report");
  o.numerics = job.at("numerics");
  o.replay.calibration_file = job.at("calibration");
  use_numerics(o);
  std::vector<RecordReport> reports;
  for (const nlohmann::json& r : results) reports.push_back(replay_record_from_json(r));
  finish(reports, o, job.at("bound_text"));
  return exit_code(reports);
}

// --calibrate FILE: the entry this log measures, merged into FILE (atomically).
static void write_calibration(const std::vector<RecordReport>& reports, const std::vector<LogLine>& lines,
                              const LoadedModel& lm, const ReplayOptions& o) {
  const std::string text = read_regular_file(o.log, "log");
  const CalibrationEntry e = calibrate(reports, lm.model.path, lm.model.sha256, o.replay.numerics, o.log,
                                       sha256_hex(text.data(), text.size()));
  (void)lines;
  std::vector<CalibrationEntry> entries;
  if (std::filesystem::exists(o.calibrate)) entries = read_calibration(o.calibrate);
  write_file_atomic(o.calibrate, "--calibrate", calibration_json(merge_calibration(entries, e)).dump(2) + "\n");
  std::fprintf(stderr, "calibration: %s on %s (%s): %lld logprobs, max |diff| %.4g, bound %.4g nats -> %s\n",
               e.engine.c_str(), e.model.c_str(), e.numerics.c_str(), (long long)e.values, e.max_abs_diff, e.bound,
               o.calibrate.c_str());
}

// This worker's records (all of them in one process; tools/shard.h); `bound`
// says which engine bound they were judged by.
static std::vector<RecordReport> replay_mine(const std::vector<LogLine>& mine, const std::vector<LogLine>& lines,
                                             const ReplayOptions& o, bool show, std::string& bound) {
  if (!o.models.empty()) {  // each record on its own checkpoint; unknown models reported, the rest replayed
    require_input(o.model.model.empty(), "--models", "option", "give --models or --model, not both");
    require_input(o.calibrate.empty(), "--calibrate", "option", "calibrates one model: use --model");
    bound = o.replay.calibration_file.empty() ? engine_bound(o.replay, "", "").source
                                              : "per model from calibration " + o.replay.calibration_file;
    ModelCatalog catalog(o.models, [&o](const CatalogEntry& e) { return load_entry(e, o); });
    return replay_with_progress(mine, catalog.resolver(), o, show);
  }
  const LoadedModel lm = load_model_and_tokenizer(model_for(lines, o));
  if (o.replay.mode != ReplayMode::Foreign) check_hashes(lines, lm, o);
  check_context(lm.model, o);
  probe_numerics(lm.model, lm.tokenizer, o.replay.numerics);
  ReplayOptions ro = o;
  if (!o.calibrate.empty()) {  // measured against the profile's own bound, never a previous calibration
    ro.replay.calibration.clear();
    ro.replay.calibration_file.clear();
  }
  const EngineBound b = engine_bound(ro.replay, lm.model.sha256, lm.model.path);  // exit 2 when the file lacks it
  char v[48];
  std::snprintf(v, sizeof v, "%.4g nats", b.logprob);
  bound = std::string(v) + " (" + b.source + ")";
  const ReplayModel rm{lm.model, lm.tokenizer, lm.model.sha256, lm.tokenizer_sha256};
  std::vector<RecordReport> reports = replay_with_progress(mine, single_model(rm), ro, show);
  if (!o.calibrate.empty()) write_calibration(reports, lines, lm, ro);
  return reports;
}

int run_replay(const ReplayOptions& o) {
  ShardRun run("replay", o.shard);
  if (!o.json_out.empty()) check_output_path(o.json_out, "--report");  // before replaying, not after
  if (!o.calibrate.empty()) {
    check_output_path(o.calibrate, "--calibrate");
    require_input(!run.sharded(), "--calibrate", "option", "calibration runs in one process (no --shard)");
  }
  const std::vector<LogLine> lines = read_log_lines(o.log);
  require_input(!lines.empty(), o.log, "records", "the log holds no records");
  check_log_numerics_version(lines, o.log);  // a log of another numerics contract: exit 2, nothing replayed
  std::vector<LogLine> mine;  // records dealt to this worker: i % N == I
  std::vector<size_t> index;
  for (size_t i = 0; i < lines.size(); i++)
    if (run.mine(i)) mine.push_back(lines[i]), index.push_back(i);
  std::string bound;
  const std::vector<RecordReport> reports = replay_mine(mine, lines, o, run.root(), bound);
  if (!run.sharded()) {
    finish(reports, o, bound);
    return o.calibrate.empty() ? exit_code(reports) : kExitOk;  // a calibration log is measured, not judged
  }
  std::vector<nlohmann::json> results;
  for (size_t k = 0; k < reports.size(); k++)
    results.push_back({{"index", index[k]}, {"result", replay_record_json(reports[k])}});
  const nlohmann::json job = replay_job(o, lines, bound);
  return run.finish(job, lines.size(), std::move(results),
                    [&job](const std::vector<nlohmann::json>& all) { return finish_replay_job(job, all); });
}

Command setup_replay(CLI::App& app) {
  auto opts = std::make_shared<ReplayOptions>();
  auto* sub = app.add_subcommand("replay", "Replay a sampling-tuple log (or check foreign completion records)");
  sub->add_option("log", opts->log, "JSON-lines log: oracle run --log, llama.cpp server, OpenAI or vLLM records")->required();
  sub->add_option("--model,-m", opts->model.model, "Model override (its SHA-256 must match the log)");
  sub->add_option("--tokenizer,-z", opts->model.tokenizer, "Tokenizer override (its SHA-256 must match the log)");
  sub->add_option("--models", opts->models,
                  "Directory of checkpoints (or a JSON manifest): each record replays on the model it names")
      ->check(CLI::ExistingPath);
  sub->add_option("--context", opts->model.context, "Context length (default: the log's)")
      ->check(int_in<int>(0, 1 << 24));
  sub->add_flag("--allow-context-extension", opts->model.allow_context_extension,
                "Allow a context (the log's or --context) above the model's trained context");
  sub->add_option("--mode", opts->mode, "own, foreign or auto (by each record's shape)")
      ->check(CLI::IsMember({"own", "foreign", "auto"}));
  sub->add_option("--jobs,-j", opts->replay.jobs, "Records replayed in parallel (same output)")
      ->check(int_in<int>(1, 256));
  sub->add_option("--report", opts->json_out, "Also write the JSON report to this file");
  sub->add_option("--backend", opts->backend,
                  "reference, cuda-emu or cuda: where own records are re-run (device: with --mode own)");
  sub->add_option("--numerics", opts->numerics,
                  "canonical or ggml: the forward engine records are teacher-forced with (default canonical)")
      ->check(CLI::IsMember({"canonical", "ggml"}));
  sub->add_option("--calibration", opts->replay.calibration_file,
                  "Engine bounds (oracle-replay-calibration JSON): PLAUSIBLE within the model's bound")
      ->check(CLI::ExistingFile);
  sub->add_option("--calibrate", opts->calibrate,
                  "Measure the engine bound on this (calibration) log and merge it into FILE");
  sub->add_flag("--json", opts->json, "Print the JSON report instead of the table");
  sub->add_flag("--quiet,-q", opts->quiet, "No progress on stderr");
  add_shard_options(sub, opts->shard);
  sub->add_option("--prob-tol", opts->replay.prob_tolerance, "Borderline distance in probability mass")
      ->check(float_in(0.0, 1.0));
  sub->add_option("--logit-tol", opts->replay.logit_tolerance, "Borderline distance in logits")
      ->check(float_in(0.0, 3.4e38));
  sub->add_option("--logprob-tol", opts->replay.logprob_tolerance, "Foreign logprob tolerance (nats)")
      ->check(float_in(0.0, 3.4e38));
  return {sub, [opts] {
    opts->replay.mode = parse_replay_mode(opts->mode);
    use_numerics(*opts);
    use_backend(*opts);
    return run_replay(*opts);
  }};
}

}  // namespace oracle::tools
