// Replay driver and reports: one line -> one RecordReport (never throws for
// bad input), lines in parallel with a fixed output order, the JSON report
// and the terminal summary table (replay.h, docs/replay.md).
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/json_util.h"
#include "audit/replay/replay.h"

namespace oracle {

using nlohmann::json;

const char* replay_mode_name(ReplayMode m) {
  return m == ReplayMode::Own ? "own" : m == ReplayMode::Foreign ? "foreign" : "auto";
}

ReplayMode parse_replay_mode(const std::string& name) {
  if (name == "auto") return ReplayMode::Auto;
  if (name == "own") return ReplayMode::Own;
  if (name == "foreign") return ReplayMode::Foreign;
  throw InputError("--mode", "mode", "unknown replay mode '" + name + "' (own, foreign or auto)");
}

const char* status_name(RecordStatus s) {
  static const char* names[] = {"MATCH", "PLAUSIBLE", "DIVERGED", "ERROR", "UNKNOWN_MODEL"};
  return names[(int)s];
}

const char* verdict_name(Verdict v) {
  static const char* names[] = {"not_reproducible", "different_draw", "impossible", "borderline", "logprob_mismatch"};
  return names[(int)v];
}

bool implausible(Verdict v) { return v == Verdict::Impossible || v == Verdict::LogprobMismatch; }

bool record_failed(const RecordReport& r) {
  return r.status == RecordStatus::Diverged || r.status == RecordStatus::Error || r.status == RecordStatus::UnknownModel;
}

const TokenFinding* headline_finding(const RecordReport& r) {
  for (const TokenFinding& f : r.findings)
    if (implausible(f.verdict)) return &f;
  return r.findings.empty() ? nullptr : &r.findings.front();
}

const TokenFinding* first_finding(const RecordReport& r, Verdict verdict) {
  for (const TokenFinding& f : r.findings)
    if (f.verdict == verdict) return &f;
  return nullptr;
}

// "<where>: <field>: <message>", folding the thrower's file into the field
// when it is not the log line itself ("sampler.top_p"; "record"/"json" dropped).
std::string replay_error_text(const InputError& e, const std::string& where) {
  const std::string what = e.what();
  const std::string prefix = e.file() + ": " + e.field() + ": ";
  const std::string msg = what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what;
  std::string field = e.field();
  if (e.file() != where && e.file() != "record" && e.file() != "json") field = e.file() + "." + field;
  return where + ": " + field + ": " + msg;
}

// ============================================================================
// One line, all lines
// ============================================================================
namespace {


ReplayMode record_mode(const json& j, ReplayMode mode, const std::string& where) {
  if (mode != ReplayMode::Auto) return mode;
  require_input(j.is_object(), where, "record", "expected a JSON object");
  if (j.contains("schema")) return ReplayMode::Own;
  if (j.contains("choices")) return ReplayMode::Foreign;
  throw InputError(where, "record", "neither an oracle log record (\"schema\") nor a completion record (\"choices\")");
}

RecordReport replay_parsed(const std::string& text, const std::string& where, const ReplayModel& rm,
                           const ReplayOptions& o) {
  const json j = parse_json_text(text, where, "json");
  if (record_mode(j, o.mode, where) == ReplayMode::Own) return replay_own(record_from_json(j, where), rm, o);
  return replay_foreign(j, where, rm, o);
}

}  // namespace

RecordReport replay_line(const LogLine& line, const std::string& file, const ReplayModel& rm, const ReplayOptions& o) {
  const std::string where = file + ":" + std::to_string(line.line_no);
  RecordReport rep;
  try {
    rep = replay_parsed(line.text, where, rm, o);
  } catch (const InputError& e) {
    rep.status = RecordStatus::Error;
    rep.error = replay_error_text(e, where);
  } catch (const std::exception& e) {
    rep.status = RecordStatus::Error;
    rep.error = where + ": " + e.what();
  }
  rep.line = line.line_no;
  return rep;
}

void run_strided_jobs(size_t jobs, const std::function<void(size_t)>& work) {
  if (jobs <= 1) {
    work(0);
    return;
  }
  std::vector<std::thread> threads;
  try {
    for (size_t k = 0; k < jobs; k++) threads.emplace_back(work, k);
  } catch (const std::system_error& e) {  // joined first: never std::terminate on a joinable thread
    for (std::thread& t : threads) t.join();
    throw InputError("--jobs", "jobs", "cannot start worker " + std::to_string(threads.size() + 1) + " of " +
                                           std::to_string(jobs) + ": " + e.what() + " (lower --jobs)");
  }
  for (std::thread& t : threads) t.join();
}

std::vector<RecordReport> replay_lines(const std::vector<LogLine>& lines, const std::string& file,
                                       const ReplayModel& rm, const ReplayOptions& o) {
  std::vector<RecordReport> reports(lines.size());  // (n_lines)
  const size_t jobs = (size_t)std::max(1, o.jobs);
  run_strided_jobs(jobs, [&](size_t k) {
    for (size_t i = k; i < lines.size(); i += jobs) reports[i] = replay_line(lines[i], file, rm, o);
  });
  return reports;
}

// ============================================================================
// JSON report
// ============================================================================
namespace {

json finding_json(const TokenFinding& f) {
  return json{{"choice", f.choice},
              {"index", f.index},
              {"logged", f.logged},
              {"reproduced", f.reproduced},
              {"raw_logprob", json_float(f.raw_logprob)},
              {"raw_rank", f.raw_rank},
              {"processed_logprob", json_float(f.processed_logprob)},
              {"processed_rank", f.processed_rank},
              {"verdict", verdict_name(f.verdict)},
              {"reason", f.reason},
              {"margin", std::isfinite(f.margin) ? json(f.margin) : json("inf")},
              {"detail", f.detail}};
}

Verdict verdict_from(const std::string& name) {
  for (int v = 0; v <= (int)Verdict::LogprobMismatch; v++)
    if (name == verdict_name((Verdict)v)) return (Verdict)v;
  throw InputError("part", "verdict", "unknown verdict '" + name + "'");
}

RecordStatus status_from(const std::string& name) {
  for (int v = 0; v <= (int)RecordStatus::UnknownModel; v++)
    if (name == status_name((RecordStatus)v)) return (RecordStatus)v;
  throw InputError("part", "status", "unknown status '" + name + "'");
}

TokenFinding finding_from_json(const json& j) {
  TokenFinding f;
  f.choice = j.at("choice");
  f.index = j.at("index");
  f.logged = j.at("logged");
  f.reproduced = j.at("reproduced");
  f.raw_logprob = float_from_json(j.at("raw_logprob"), "raw_logprob");
  f.raw_rank = j.at("raw_rank");
  f.processed_logprob = float_from_json(j.at("processed_logprob"), "processed_logprob");
  f.processed_rank = j.at("processed_rank");
  f.verdict = verdict_from(j.at("verdict"));
  f.reason = j.at("reason");
  f.margin = j.at("margin").is_string() ? std::numeric_limits<double>::infinity() : j.at("margin").get<double>();
  f.detail = j.at("detail");
  return f;
}

json record_json(const RecordReport& r) {
  json findings = json::array();
  for (const TokenFinding& f : r.findings) findings.push_back(finding_json(f));
  return json{{"line", r.line},         {"mode", r.mode},           {"status", status_name(r.status)},
              {"n_tokens", r.n_tokens}, {"diverged_at", r.diverged_at}, {"findings", findings},
              {"notes", r.notes},       {"error", r.error},         {"model", r.model},
              {"n_choices", r.n_choices},
              {"prompt_ids", r.prompt_ids}, {"prompt_from", r.prompt_from}, {"stream_chunks", r.stream_chunks},
              {"logprobs", {{"compared", r.n_logprobs}, {"max_abs_diff", r.max_logprob_diff},
                            {"sum_abs_diff", r.sum_logprob_diff}, {"bound", r.bound}}}};
}

}  // namespace

json replay_record_json(const RecordReport& r) { return record_json(r); }

RecordReport replay_record_from_json(const json& j) {
  RecordReport r;
  r.line = j.at("line");
  r.mode = j.at("mode");
  r.status = status_from(j.at("status"));
  r.n_tokens = j.at("n_tokens");
  r.diverged_at = j.at("diverged_at");
  for (const json& f : j.at("findings")) r.findings.push_back(finding_from_json(f));
  r.notes = j.at("notes").get<std::vector<std::string>>();
  r.error = j.at("error");
  r.model = j.at("model");
  r.n_choices = j.at("n_choices");
  r.prompt_ids = j.at("prompt_ids").get<std::vector<int>>();
  r.prompt_from = j.at("prompt_from");
  r.stream_chunks = j.at("stream_chunks");
  const json& lp = j.at("logprobs");
  r.n_logprobs = lp.at("compared");
  r.max_logprob_diff = lp.at("max_abs_diff");
  r.sum_logprob_diff = lp.at("sum_abs_diff");
  r.bound = lp.at("bound");
  return r;
}

json replay_report_json(const std::vector<RecordReport>& reports, const std::string& file, const ReplayOptions& o) {
  json records = json::array();
  int counts[5] = {0, 0, 0, 0, 0};  // by RecordStatus: MATCH, PLAUSIBLE, DIVERGED, ERROR, UNKNOWN_MODEL
  for (const RecordReport& r : reports) {
    records.push_back(record_json(r));
    counts[(int)r.status]++;
  }
  return json{{"schema", "oracle-replay-report"},
              {"version", 1},
              {"file", file},
              {"mode", replay_mode_name(o.mode)},
              {"numerics", std::string(num::numerics_profile_name(o.numerics))},
              {"calibration", o.calibration_file},
              {"tolerances",
               {{"prob", o.prob_tolerance}, {"logit", o.logit_tolerance}, {"logprob", o.logprob_tolerance}}},
              {"summary",
               {{"records", reports.size()}, {"match", counts[0]}, {"plausible", counts[1]},
                {"diverged", counts[2]}, {"error", counts[3]}, {"unknown_model", counts[4]}}},
              {"records", records}};
}

// ============================================================================
// Terminal table
// ============================================================================
namespace {

std::string finding_text(const TokenFinding& f, int n_choices) {
  char b[200];
  std::snprintf(b, sizeof b, "token %d: logged %d, reproduced %d (p=%.4g, rank %d) %s", f.index, f.logged,
                f.reproduced, std::exp((double)f.processed_logprob), f.processed_rank, verdict_name(f.verdict));
  const std::string choice = n_choices > 1 ? "choice " + std::to_string(f.choice) + " " : "";
  return choice + b + (f.reason.empty() ? "" : " [" + f.reason + "]");
}

// The headline names the first impossible or implausible token, not a
// same-token "not reproducible" line; other findings follow.
std::string record_detail(const RecordReport& r) {
  if (r.status == RecordStatus::Error || r.status == RecordStatus::UnknownModel) return r.error;
  std::string d;
  const TokenFinding* head = r.status == RecordStatus::Diverged ? headline_finding(r) : nullptr;
  if (head) {
    d = "DIVERGED at " + finding_text(*head, r.n_choices);
    if (!implausible(head->verdict))
      d += " (no impossible or implausible token)";
    if (head != &r.findings.front()) d += "; earlier: " + finding_text(r.findings.front(), r.n_choices);
  }
  for (const std::string& n : r.notes) d += (d.empty() ? "" : "; ") + n;
  if (r.n_logprobs > 0) {  // engine records: how close the logged logprobs came
    char b[120];
    std::snprintf(b, sizeof b, "max |dlogprob| %.3g over %lld (bound %.3g)", r.max_logprob_diff,
                  (long long)r.n_logprobs, r.bound);
    d += (d.empty() ? "" : "; ") + std::string(b);
  }
  int ties = 0;
  for (const TokenFinding& f : r.findings) ties += f.verdict == Verdict::Borderline;
  if (ties > 0 && r.status != RecordStatus::Diverged) d += "; " + std::to_string(ties) + " tie(s) within the bound";
  if (r.prompt_from.rfind("chat template", 0) == 0) {
    d += "; prompt: " + r.prompt_from + ", ids [";
    for (size_t i = 0; i < r.prompt_ids.size(); i++) d += (i ? "," : "") + std::to_string(r.prompt_ids[i]);
    d += "]";
  }
  if (r.stream_chunks > 0) d += "; stream of " + std::to_string(r.stream_chunks) + " chunks";
  return d;
}

}  // namespace

std::string replay_header(const ReplayOptions& o, const std::string& engine_bound_text) {
  char b[160];
  std::snprintf(b, sizeof b, "numerics: %s; profile bound %.3g nats (MATCH); engine bound (PLAUSIBLE): ",
                std::string(num::numerics_profile_name(o.numerics)).c_str(), o.logprob_tolerance);
  return b + engine_bound_text + "\n";
}

std::string replay_summary_table(const std::vector<RecordReport>& reports) {
  std::string out = "  line  mode              status         tokens  detail\n";
  int failed = 0;
  char b[96];
  for (const RecordReport& r : reports) {
    std::snprintf(b, sizeof b, "%6d  %-16s  %-13s  %6d  ", r.line, r.mode.empty() ? "-" : r.mode.c_str(),
                  status_name(r.status), r.n_tokens);
    out += b + record_detail(r) + "\n";
    failed += record_failed(r);
  }
  std::snprintf(b, sizeof b, "records: %zu in, %zu reported, %d failed\n", reports.size(), reports.size(), failed);
  return out + b;
}

}  // namespace oracle
