// Replay of engine logs and mixed-model logs (replay_engines.h).
#include "audit/replay/replay_engines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "faults/fault.h"
#include "base/errors.h"
#include "base/json_util.h"
#include "base/sha256.h"
#include "audit/replay/replay_calibration.h"

namespace oracle {

using nlohmann::json;

namespace {

std::string fmt(double x) {
  char b[48];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

const TokenLogprob* find_id(const std::vector<TokenLogprob>& v, int id) {
  for (const TokenLogprob& t : v)
    if (t.id == id) return &t;
  return nullptr;
}

TokenFinding mismatch(int choice, int index, const AdaptedStep& step, const ForcedStep& s, const SamplerConfig& cfg,
                      const ReplayOptions& o, const std::string& reason, double margin, const std::string& detail) {
  TokenFinding f;
  classify_token(index, step.id, s, cfg, false, o, f);
  f.choice = choice;
  f.index = index;
  f.verdict = Verdict::LogprobMismatch;
  f.reason = reason;
  f.margin = margin;
  f.detail = detail;
  return f;
}

bool far(float a, float b, double tol) {
  if (a == b) return false;  // also -inf == -inf
  return !(std::fabs((double)a - (double)b) <= tol);
}

// |logged - reference| of one compared logprob, into the record's statistics.
void note_diff(RecordReport& rep, float logged, float ref) {
  if (logged == ref) {  // also -inf == -inf
    rep.n_logprobs++;
    return;
  }
  if (!(logged > -1e30f) || !(ref > -1e30f)) return;  // an impossible token on one side: a support question
  const double d = std::fabs((double)logged - (double)ref);
  rep.n_logprobs++;
  rep.sum_logprob_diff += d;
  rep.max_logprob_diff = std::max(rep.max_logprob_diff, d);
}

// The chosen token's logprob and the logged alternatives against the reference's.
void logprob_findings(int choice, int i, const AdaptedStep& step, const ForcedStep& s, const AdaptedRecord& a,
                      const ReplayOptions& o, std::vector<TokenFinding>& out, RecordReport& rep) {
  const LogprobReport& lp = s.logged_lp;
  const std::vector<TokenLogprob>& ref_top = a.processed_logprobs ? lp.processed_top : lp.raw_top;
  const SamplerConfig& cfg = a.options.sampler;
  if (a.processed_logprobs && cfg.temperature <= 0.0f) {  // llama.cpp: after greedy, the pick has probability 1
    for (const TokenLogprob& t : step.top) note_diff(rep, t.logprob, t.id == step.id ? 0.0f : -INFINITY);
    const TokenLogprob* other = nullptr;
    for (const TokenLogprob& t : step.top) other = other ? other : t.id != step.id ? &t : nullptr;
    if ((step.logprob && *step.logprob != 0.0f) || other)
      out.push_back(mismatch(choice, i, step, s, cfg, o, "logprob", INFINITY,
                             "a greedy pick's post-sampling probability is 1 and it is the only entry; logged " +
                                 (other ? "token " + std::to_string(other->id) + " besides it"
                                        : "p = " + fmt(std::exp((double)*step.logprob)))));
    return;
  }
  if (step.logprob) {
    const float ref = a.processed_logprobs ? lp.processed_logprob : lp.raw_logprob;
    note_diff(rep, *step.logprob, ref);
    if (far(*step.logprob, ref, o.logprob_tolerance))
      out.push_back(mismatch(choice, i, step, s, cfg, o, "logprob", std::fabs((double)*step.logprob - ref),
                             "logged logprob " + fmt(*step.logprob) + ", reference " + fmt(ref) + " (bound " +
                                 fmt(o.logprob_tolerance) + ")"));
  }
  for (const TokenLogprob& t : step.top)  // every compared value counts, whatever is found below
    if (const TokenLogprob* r = find_id(ref_top, t.id)) note_diff(rep, t.logprob, r->logprob);
  for (const TokenLogprob& t : step.top) {
    const TokenLogprob* r = find_id(ref_top, t.id);
    if (!r && t.logprob < -1e30f) continue;  // logged as impossible; the reference list does not reach it
    if (!r || far(t.logprob, r->logprob, o.logprob_tolerance)) {
      out.push_back(mismatch(choice, i, step, s, cfg, o, "top_logprobs", r ? std::fabs((double)t.logprob - r->logprob) : INFINITY,
                             "top_logprobs: token " + std::to_string(t.id) + " logged " + fmt(t.logprob) +
                                 (r ? ", reference " + fmt(r->logprob) + " (bound " + fmt(o.logprob_tolerance) + ")"
                                    : ", not among the reference's top " + std::to_string(ref_top.size()))));
      return;
    }
  }
  if (step.top.empty() || a.top_n <= 0) return;
  float last = step.top.front().logprob;
  for (const TokenLogprob& t : step.top) last = std::min(last, t.logprob);
  for (int k = 0; k < a.top_n && k < (int)ref_top.size(); k++) {
    const TokenLogprob& r = ref_top[(size_t)k];
    if (find_id(step.top, r.id) || !(r.logprob > last + o.logprob_tolerance)) continue;
    out.push_back(mismatch(choice, i, step, s, cfg, o, "top_logprobs", (double)r.logprob - last,
                           "top_logprobs: the reference's rank-" + std::to_string(k + 1) + " token " +
                               std::to_string(r.id) + " (" + fmt(r.logprob) + ") is missing from the logged list"));
    return;
  }
}

// The tolerances an engine record is judged by: logprobs within the engine
// bound b; a support boundary (greedy argmax, top-k, llama.cpp min-p: logit
// gaps between two tokens, each off by up to b) within 2b; a mass boundary
// (top-p, hf min-p: a sum of probabilities, each off by a factor up to e^b)
// within e^b - 1.
ReplayOptions engine_tolerances(const ReplayOptions& o, double b) {
  ReplayOptions e = o;
  e.logprob_tolerance = b;
  const double gaps = fault::active(fault::Fault::REPLAY_TIE_WITHIN_ONE_BOUND) ? 1.0 : 2.0;  // FAULT
  e.logit_tolerance = std::max(o.logit_tolerance, gaps * b);
  e.prob_tolerance = std::max(o.prob_tolerance, std::expm1(b));
  return e;
}

}  // namespace

RecordReport replay_adapted(const AdaptedRecord& a, const ReplayModel& rm, const ReplayOptions& options) {
  RecordReport rep;
  rep.mode = a.engine;
  rep.n_choices = (int)a.choices.size();
  rep.prompt_ids = a.prompt_ids;
  rep.prompt_from = a.prompt_from;
  rep.bound = engine_bound(options, rm.model_sha256, rm.model.path).logprob;
  rep.notes = a.notes;
  const ReplayOptions o = engine_tolerances(options, rep.bound);
  GenerateOptions go = a.options;
  go.logprobs_top_n = 2 * std::max(a.top_n, 1) + 4;
  for (const AdaptedChoice& c : a.choices) {
    std::vector<int> ids;
    for (const AdaptedStep& s : c.steps) ids.push_back(s.id);
    rep.n_tokens += (int)ids.size();
    const ForcedRun run = teacher_force(rm, a.prompt_ids, go, ids, o.numerics);
    std::vector<TokenFinding> found;
    for (size_t i = 0; i < run.steps.size(); i++) {
      TokenFinding t;
      if (classify_token((int)i, ids[i], run.steps[i], a.options.sampler, false, o, t)) {
        t.choice = c.index;
        found.push_back(t);
      }
      if (!run.steps[i].after_stop) logprob_findings(c.index, (int)i, c.steps[i], run.steps[i], a, o, found, rep);
    }
    for (const TokenFinding& t : found)
      if (implausible(t.verdict) && rep.diverged_at < 0) rep.diverged_at = t.index;
    if (c.finish_reason == "stop" && run.still_running)
      rep.notes.push_back("choice " + std::to_string(c.index) +
                          ": logged finish_reason stop, but no stated stop condition ends the text there");
    rep.findings.insert(rep.findings.end(), found.begin(), found.end());
  }
  // MATCH: within the profile's own bound (--logprob-tol) and no tie at a
  // support boundary; PLAUSIBLE: within the engine bound; else DIVERGED.
  bool tie = false;
  for (const TokenFinding& t : rep.findings) tie = tie || t.verdict == Verdict::Borderline;
  const bool own_bound = rep.n_logprobs > 0 && rep.max_logprob_diff <= options.logprob_tolerance && !tie;
  rep.status = rep.diverged_at >= 0 ? RecordStatus::Diverged : own_bound ? RecordStatus::Match : RecordStatus::Plausible;
  return rep;
}

// ============================================================================
// Models
// ============================================================================
ModelResolver single_model(const ReplayModel& rm) {
  ModelResolver r;
  r.resolve = [&rm](const json&, std::string&) { return &rm; };
  r.describe = [](const ReplayModel*) { return std::string(); };
  return r;
}

std::string ModelResolver::name_of(const ReplayModel* m) const { return describe ? describe(m) : ""; }

namespace {

std::string stem(const std::string& p) { return std::filesystem::path(p).stem().string(); }
std::string base(const std::string& p) { return std::filesystem::path(p).filename().string(); }

bool model_file(const std::filesystem::path& p) {
  const std::string e = p.extension().string();
  return e == ".gguf" || e == ".bin" || e == ".safetensors";
}

std::vector<CatalogEntry> scan(const std::string& where) {
  namespace fs = std::filesystem;
  std::vector<CatalogEntry> out;
  if (fs::is_regular_file(where)) {  // manifest
    std::ifstream in(where, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json m = parse_json_text(text, where, "manifest");
    require_input(m.is_object() && m.contains("models") && m.at("models").is_array(), where, "models",
                  "expected {\"models\": [{\"name\", \"path\"}]}");
    const fs::path dir = fs::path(where).parent_path();
    for (const json& e : m.at("models")) {
      require_input(e.is_object() && e.contains("path") && e.at("path").is_string(), where, "models[].path", "missing");
      CatalogEntry c;
      const fs::path p = e.at("path").get<std::string>();
      c.path = (p.is_absolute() ? p : dir / p).string();
      if (e.contains("tokenizer") && e.at("tokenizer").is_string()) {
        const fs::path t = e.at("tokenizer").get<std::string>();
        c.tokenizer = (t.is_absolute() ? t : dir / t).string();
      }
      if (e.contains("name") && e.at("name").is_string()) c.names.push_back(e.at("name").get<std::string>());
      c.names.insert(c.names.end(), {base(c.path), stem(c.path)});
      out.push_back(c);
    }
    return out;
  }
  require_input(fs::is_directory(where), where, "--models", "neither a directory nor a manifest file");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(where))
    if (e.is_regular_file() && model_file(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) out.push_back({{base(f.string()), stem(f.string())}, f.string(), ""});
  require_input(!out.empty(), where, "--models", "no .gguf, .bin or .safetensors model in the directory");
  return out;
}

// The record's own hash, if it states one.
std::string record_sha(const json& j) {
  if (j.contains("schema") && j.contains("model") && j.at("model").is_object()) {
    const json& m = j.at("model");
    if (m.contains("sha256") && m.at("sha256").is_string()) return m.at("sha256").get<std::string>();
  }
  for (const char* k : {"model_sha256"})
    if (j.contains(k) && j.at(k).is_string()) return j.at(k).get<std::string>();
  return "";
}

}  // namespace

ModelCatalog::ModelCatalog(const std::string& where, CatalogLoader load) : entries_(scan(where)), load_(std::move(load)) {
  loaded_.resize(entries_.size());
  sha256_.resize(entries_.size());
}

const ReplayModel* ModelCatalog::get(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_[i]) loaded_[i] = load_(entries_[i]);
  return loaded_[i].get();
}

const ReplayModel* ModelCatalog::find(const json& j, std::string& why) {
  const std::string sha = record_sha(j);
  if (!sha.empty()) {
    for (size_t i = 0; i < entries_.size(); i++) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (sha256_[i].empty()) sha256_[i] = sha256_file(entries_[i].path);
        if (sha256_[i] != sha) continue;
      }
      return get(i);
    }
    why = "model sha256 " + sha + " matches no checkpoint of --models";
    return nullptr;
  }
  std::string name = engine_model_name(j);
  if (name.empty() && j.contains("model") && j.at("model").is_string()) name = j.at("model").get<std::string>();
  if (name.empty()) {
    why = "the record names no model (model / model_sha256)";
    return nullptr;
  }
  const std::string last = name.substr(name.find_last_of('/') + 1);
  for (const std::string& want : {name, base(name), stem(name), last})
    for (size_t i = 0; i < entries_.size(); i++)
      if (std::find(entries_[i].names.begin(), entries_[i].names.end(), want) != entries_[i].names.end()) return get(i);
  why = "model '" + name + "' matches no checkpoint of --models";
  return nullptr;
}

ModelResolver ModelCatalog::resolver() {
  ModelResolver r;
  r.resolve = [this](const json& j, std::string& why) { return find(j, why); };
  r.describe = [this](const ReplayModel* m) {
    for (size_t i = 0; i < loaded_.size(); i++)
      if (loaded_[i].get() == m) return entries_[i].path;
    return std::string();
  };
  return r;
}

// ============================================================================
// Lines
// ============================================================================
namespace {

RecordReport replay_json(const json& j, const std::string& where, const ModelResolver& models, const ReplayOptions& o,
                         std::string& model_name) {
  std::string why;
  const ReplayModel* rm = models.resolve(j, why);
  if (!rm) {
    RecordReport r;
    r.status = RecordStatus::UnknownModel;
    r.error = where + ": model: " + why;
    return r;
  }
  model_name = models.name_of(rm);
  const std::string engine = engine_of(j);
  const bool own = j.is_object() && j.contains("schema");
  if (o.mode == ReplayMode::Own || (o.mode == ReplayMode::Auto && own)) return replay_own(record_from_json(j, where), *rm, o);
  if (!engine.empty()) return replay_adapted(adapt_engine_record(j, where, rm->tokenizer), *rm, o);
  if (j.is_object() && j.contains("response")) {  // a logged exchange whose response no adapter reads
    const json& resp = j.at("response");
    require_input(resp.is_object(), where, "response", "expected a JSON object or an SSE body (string)");
    require_input(!(resp.contains("object") && resp.at("object").is_string()), where, "response.object",
                  "'" + (resp.contains("object") && resp.at("object").is_string() ? resp.at("object").get<std::string>() : "") +
                      "' is not a completion (text_completion, chat.completion, or their stream chunks)");
    throw InputError(where, "response",
                     "not a llama.cpp server response (generation_settings, completion_probabilities, stop_type) nor an "
                     "OpenAI / vLLM one (object)");
  }
  require_input(j.is_object() && j.contains("choices"), where, "record",
                "neither an oracle log record, a llama.cpp server / OpenAI / vLLM response, nor a completion record");
  return replay_foreign(j, where, *rm, o);
}

}  // namespace

RecordReport replay_engine_line(const LogLine& line, const std::string& file, const ModelResolver& models,
                                const ReplayOptions& o) {
  const std::string where = file + ":" + std::to_string(line.line_no);
  RecordReport rep;
  std::string model, mode;  // mode: what the record looked like, for its ERROR row
  int chunks = 0;
  try {
    json j = parse_json_text(line.text, where, "json");
    if (is_stream_line(j)) j = assemble_stream(j, where, &chunks);  // SSE body -> the response it streamed
    mode = j.is_object() && j.contains("schema") ? "own" : engine_of(j);
    rep = replay_json(j, where, models, o, model);
  } catch (const InputError& e) {
    rep.status = RecordStatus::Error;
    rep.error = replay_error_text(e, where);
    rep.mode = mode;
  } catch (const std::exception& e) {
    rep.status = RecordStatus::Error;
    rep.error = where + ": " + e.what();
    rep.mode = mode;
  }
  rep.line = line.line_no;
  rep.model = model;
  rep.stream_chunks = chunks;
  return rep;
}

std::vector<RecordReport> replay_engine_lines(const std::vector<LogLine>& lines, const std::string& file,
                                              const ModelResolver& models, const ReplayOptions& o) {
  std::vector<RecordReport> reports(lines.size());  // (n_lines): records in == records reported
  const size_t jobs = (size_t)std::max(1, o.jobs);
  run_strided_jobs(jobs, [&](size_t k) {
    for (size_t i = k; i < lines.size(); i += jobs) reports[i] = replay_engine_line(lines[i], file, models, o);
  });
  return reports;
}

}  // namespace oracle
