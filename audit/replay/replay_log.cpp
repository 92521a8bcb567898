// The sampling-tuple log: record <-> JSON (strict), the appending writer and
// the line reader (replay_log.h, docs/replay.md).
#include "audit/replay/replay_log.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/json_util.h"
#include "base/numerics_version.h"
#include "base/file_io.h"

namespace oracle {

using nlohmann::json;

namespace {
constexpr const char* kRewriteLog = "re-run the generation with `oracle run ... --log F` to write a new log";
}  // namespace

// ============================================================================
// Building a record
// ============================================================================
LogRecord make_log_record(const std::string& tool_version, const ModelIdentity& identity,
                          const std::string& prompt, const GenerateOptions& o, const GenerationResult& r) {
  LogRecord rec;
  rec.tool_version = tool_version;
  rec.identity = identity;
  rec.prompt = prompt;
  rec.prompt_ids = r.prompt_ids;
  rec.add_bos = o.add_bos;
  rec.add_eos = o.add_eos;
  rec.parse_special = o.parse_special;
  rec.sampler = r.sampler;
  if (rec.sampler.order.empty()) rec.sampler.order = preset_order(rec.sampler.preset);
  rec.seq_id = r.seq_id;
  rec.stop = StopConfig{o.max_tokens, o.stop_strings, o.stop_token_ids, o.stop_on_eos};
  rec.logprobs_top_n = o.logprobs_top_n;
  rec.output_ids = r.output_ids;
  rec.text = r.text;
  rec.finish_reason = r.finish_reason;
  rec.stop_detail = r.stop_detail;
  rec.steps = r.steps;
  return rec;
}

GenerateOptions generate_options(const LogRecord& rec) {
  GenerateOptions o;
  o.max_tokens = rec.stop.max_tokens;
  o.sampler = rec.sampler;
  o.seq_id = rec.seq_id;
  o.stop_strings = rec.stop.stop_strings;
  o.stop_token_ids = rec.stop.stop_token_ids;
  o.stop_on_eos = rec.stop.stop_on_eos;
  o.add_bos = rec.add_bos;
  o.add_eos = rec.add_eos;
  o.parse_special = rec.parse_special;
  o.logprobs_top_n = rec.logprobs_top_n;
  return o;
}

// ============================================================================
// Writing
// ============================================================================
json record_to_json(const LogRecord& r) {
  const ModelIdentity& id = r.identity;
  json out{{"schema", kReplayLogSchema},
              {"version", r.version},
              {"tool_version", r.tool_version},
              {"model", {{"path", id.model}, {"sha256", id.model_sha256}, {"context", id.context}}},
              {"tokenizer", {{"path", id.tokenizer}, {"sha256", id.tokenizer_sha256}}},
              {"prompt", r.prompt},
              {"prompt_ids", r.prompt_ids},
              {"add_bos", r.add_bos},
              {"sampler", r.sampler},
              {"seq_id", r.seq_id},
              {"stop",
               {{"max_tokens", r.stop.max_tokens},
                {"stop_strings", r.stop.stop_strings},
                {"stop_token_ids", r.stop.stop_token_ids},
                {"stop_on_eos", r.stop.stop_on_eos}}},
              {"logprobs_top_n", r.logprobs_top_n},
              {"output_ids", r.output_ids},
              {"text", r.text},
              {"finish_reason", r.finish_reason},
              {"stop_detail", r.stop_detail},
              {"steps", r.steps}};
  stamp_numerics_version(out);  // the contract the logits hashes were computed under (docs/numerics.md "Versioning")
  if (r.add_eos) out["add_eos"] = true;  // optional: records without them stay as they were
  if (r.parse_special) out["parse_special"] = true;
  return out;
}

std::string record_to_line(const LogRecord& r) {
  return record_to_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

void append_log_record(const std::string& path, const LogRecord& r) {
  append_file_atomic(path, "file", record_to_line(r) + "\n");  // a failed append keeps the old log
}

void check_log_numerics_version(const std::vector<LogLine>& lines, const std::string& path) {
  for (const LogLine& l : lines) {
    const json j = json::parse(l.text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("schema", std::string()) != kReplayLogSchema) continue;
    check_numerics_version(j, path + ":" + std::to_string(l.line_no), kRewriteLog);
  }
}

std::vector<LogLine> read_log_lines(const std::string& path) {
  std::istringstream f(read_regular_file(path, "file"));
  std::vector<LogLine> lines;
  std::string s;
  for (int n = 1; std::getline(f, s); n++) {
    if (!s.empty() && s.back() == '\r') s.pop_back();
    if (s.find_first_not_of(" \t") != std::string::npos) lines.push_back({n, s});
  }
  return lines;
}

// ============================================================================
// Strict reading: every field present, right type, nothing unknown
// ============================================================================
namespace {

// The object `j` (at field path `path`) has exactly these keys.
void expect_keys(const json& j, const std::vector<std::string>& keys, const std::string& where,
                 const std::string& path) {
  require_input(j.is_object(), where, path.empty() ? "record" : path, "expected a JSON object");
  const std::string pre = path.empty() ? "" : path + ".";
  for (const std::string& k : keys) require_input(j.contains(k), where, pre + k, "missing");
  for (const auto& [k, v] : j.items())
    require_input(std::find(keys.begin(), keys.end(), k) != keys.end(), where, pre + k, "unknown field");
}

template <class T>
T get_as(const json& j, const std::string& where, const std::string& field) {
  try {
    return j.get<T>();
  } catch (const json::exception&) {
    throw InputError(where, field, "wrong JSON type");
  }
}

// Checked narrowing (base/checked_int.h): 4294967302 is refused, not read as 6.
int get_int(const json& j, const std::string& where, const std::string& field) {
  return int_from_json<int>(j, where, field);
}

std::string get_string(const json& j, const std::string& where, const std::string& field) {
  require_input(j.is_string(), where, field, "expected a string");
  return j.get<std::string>();
}

bool get_bool(const json& j, const std::string& where, const std::string& field) {
  require_input(j.is_boolean(), where, field, "expected true or false");
  return j.get<bool>();
}

std::vector<int> get_ids(const json& j, const std::string& where, const std::string& field) {
  require_input(j.is_array(), where, field, "expected an array of token ids");
  std::vector<int> ids;
  for (size_t i = 0; i < j.size(); i++) {
    ids.push_back(get_int(j[i], where, field + "[" + std::to_string(i) + "]"));
    require_input(ids.back() >= 0, where, field + "[" + std::to_string(i) + "]", "negative token id");
  }
  return ids;
}

std::string get_sha256(const json& j, const std::string& where, const std::string& field) {
  std::string s = get_string(j, where, field);
  bool hex = s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
  require_input(hex, where, field, "expected 64 lowercase hex digits");
  return s;
}

float get_float(const json& j, const std::string& where, const std::string& field) {
  try {
    return float_from_json(j, field);
  } catch (const InputError&) {
    throw InputError(where, field, "expected a number, \"inf\", \"-inf\" or \"nan\"");
  }
}

}  // namespace

// ---- sampler ------------------------------------------------------------------------
static SamplerConfig read_sampler(const json& j, const std::string& where) {
  expect_keys(j,
              {"preset", "order", "temperature", "top_k", "top_p", "min_p", "min_keep", "repetition_penalty",
               "frequency_penalty", "presence_penalty", "penalty_window", "logit_bias", "banned_tokens", "seed"},
              where, "sampler");
  require_input(j.at("seed").is_number_unsigned(), where, "sampler.seed", "expected an unsigned integer");
  for (const char* k : {"top_k", "min_keep", "penalty_window"}) get_int(j.at(k), where, std::string("sampler.") + k);
  for (const char* k : {"temperature", "top_p", "min_p", "repetition_penalty", "frequency_penalty",
                        "presence_penalty"})
    get_float(j.at(k), where, std::string("sampler.") + k);
  try {
    SamplerConfig c = j.get<SamplerConfig>();
    require_input(!c.order.empty(), where, "sampler.order", "must list the processors explicitly");
    return c;
  } catch (const InputError& e) {
    if (e.file() == where) throw;
    throw InputError(where, "sampler." + e.field(), e.what());
  }
}

// ---- steps ----------------------------------------------------------------------------
static std::vector<TokenLogprob> read_top(const json& j, const std::string& where, const std::string& f) {
  require_input(j.is_array(), where, f, "expected an array");
  std::vector<TokenLogprob> top;
  for (size_t i = 0; i < j.size(); i++) {
    const std::string fi = f + "[" + std::to_string(i) + "]";
    expect_keys(j[i], {"id", "logprob"}, where, fi);
    top.push_back({get_int(j[i].at("id"), where, fi + ".id"), get_float(j[i].at("logprob"), where, fi + ".logprob")});
  }
  return top;
}

static LogprobReport read_logprobs(const json& j, const std::string& where, const std::string& f) {
  expect_keys(j, {"token", "raw", "processed"}, where, f);
  expect_keys(j.at("raw"), {"logprob", "rank", "top"}, where, f + ".raw");
  expect_keys(j.at("processed"), {"logprob", "rank", "top"}, where, f + ".processed");
  LogprobReport r;
  r.token = get_int(j.at("token"), where, f + ".token");
  const json& raw = j.at("raw");
  r.raw_logprob = get_float(raw.at("logprob"), where, f + ".raw.logprob");
  r.raw_rank = get_int(raw.at("rank"), where, f + ".raw.rank");
  r.raw_top = read_top(raw.at("top"), where, f + ".raw.top");
  const json& pr = j.at("processed");
  r.processed_logprob = get_float(pr.at("logprob"), where, f + ".processed.logprob");
  r.processed_rank = get_int(pr.at("rank"), where, f + ".processed.rank");
  r.processed_top = read_top(pr.at("top"), where, f + ".processed.top");
  return r;
}

static std::vector<GenerationStep> read_steps(const json& j, const std::string& where) {
  require_input(j.is_array(), where, "steps", "expected an array");
  std::vector<GenerationStep> steps;
  for (size_t i = 0; i < j.size(); i++) {
    const std::string f = "steps[" + std::to_string(i) + "]";
    expect_keys(j[i], {"token", "logits_sha256", "logprobs"}, where, f);
    GenerationStep s;
    s.token = get_int(j[i].at("token"), where, f + ".token");
    s.logits_sha256 = get_sha256(j[i].at("logits_sha256"), where, f + ".logits_sha256");
    s.logprobs = read_logprobs(j[i].at("logprobs"), where, f + ".logprobs");
    require_input(s.logprobs.token == s.token, where, f + ".logprobs.token", "differs from the step's token");
    steps.push_back(std::move(s));
  }
  return steps;
}

// ---- header, identity, stops ----------------------------------------------------------------
static void read_header(const json& j, const std::string& where, LogRecord& r) {
  require_input(j.is_object(), where, "record", "expected a JSON object");
  require_input(j.contains("schema") && j.at("schema") == kReplayLogSchema, where, "schema",
                std::string("expected \"") + kReplayLogSchema + "\"");
  require_input(j.contains("version"), where, "version", "missing");
  r.version = get_int(j.at("version"), where, "version");
  require_input(r.version == kReplayLogVersion, where, "version",
                "unsupported version " + std::to_string(r.version) + " (this tool reads version " +
                    std::to_string(kReplayLogVersion) + ")");
  std::vector<std::string> keys = {"schema", "version", "tool_version", "model", "tokenizer", "prompt",
                                   "prompt_ids", "add_bos", "sampler", "seq_id", "stop", "logprobs_top_n",
                                   "output_ids", "text", "finish_reason", "stop_detail", "steps"};
  // numerics_version: absent in logs written before it existed (read as version 1)
  check_numerics_version(j, where, kRewriteLog);
  for (const char* optional : {"add_eos", "parse_special", kNumericsVersionField})
    if (j.contains(optional)) keys.push_back(optional);
  expect_keys(j, keys, where, "");
  r.tool_version = get_string(j.at("tool_version"), where, "tool_version");
}

static ModelIdentity read_identity(const json& j, const std::string& where) {
  expect_keys(j.at("model"), {"path", "sha256", "context"}, where, "model");
  expect_keys(j.at("tokenizer"), {"path", "sha256"}, where, "tokenizer");
  ModelIdentity id;
  id.model = get_string(j.at("model").at("path"), where, "model.path");
  id.model_sha256 = get_sha256(j.at("model").at("sha256"), where, "model.sha256");
  id.context = get_int(j.at("model").at("context"), where, "model.context");
  require_input(id.context >= 1, where, "model.context", "must be >= 1");
  id.tokenizer = get_string(j.at("tokenizer").at("path"), where, "tokenizer.path");
  id.tokenizer_sha256 = get_sha256(j.at("tokenizer").at("sha256"), where, "tokenizer.sha256");
  return id;
}

static StopConfig read_stop(const json& j, const std::string& where) {
  expect_keys(j, {"max_tokens", "stop_strings", "stop_token_ids", "stop_on_eos"}, where, "stop");
  StopConfig s;
  s.max_tokens = get_int(j.at("max_tokens"), where, "stop.max_tokens");
  require_input(s.max_tokens >= 1, where, "stop.max_tokens", "must be >= 1");
  const json& strs = j.at("stop_strings");
  require_input(strs.is_array(), where, "stop.stop_strings", "expected an array of strings");
  for (size_t i = 0; i < strs.size(); i++)
    s.stop_strings.push_back(get_string(strs[i], where, "stop.stop_strings[" + std::to_string(i) + "]"));
  s.stop_token_ids = get_ids(j.at("stop_token_ids"), where, "stop.stop_token_ids");
  s.stop_on_eos = get_bool(j.at("stop_on_eos"), where, "stop.stop_on_eos");
  return s;
}

// ---- consistency between fields ---------------------------------------------------------------
static void check_consistency(const LogRecord& r, const std::string& where) {
  require_input(!r.prompt_ids.empty(), where, "prompt_ids", "empty");
  require_input(r.logprobs_top_n >= 0, where, "logprobs_top_n", "must be >= 0");
  require_input(!r.output_ids.empty(), where, "output_ids", "empty (a generation samples at least one token)");
  require_input(r.steps.size() == r.output_ids.size(), where, "steps",
                std::to_string(r.steps.size()) + " steps for " + std::to_string(r.output_ids.size()) +
                    " output ids");
  for (size_t i = 0; i < r.steps.size(); i++)
    require_input(r.steps[i].token == r.output_ids[i], where, "steps[" + std::to_string(i) + "].token",
                  "differs from output_ids[" + std::to_string(i) + "]");
  const bool stop = r.finish_reason == "stop", length = r.finish_reason == "length";
  require_input(stop || length, where, "finish_reason", "expected \"stop\" or \"length\"");
  const std::string& d = r.stop_detail;
  bool ok = length ? d == "length" : (d == "eos" || d == "stop_token" || d == "stop_string");
  require_input(ok, where, "stop_detail", "'" + d + "' does not fit finish_reason '" + r.finish_reason + "'");
}

LogRecord record_from_json(const json& j, const std::string& where) {
  LogRecord r;
  read_header(j, where, r);
  r.identity = read_identity(j, where);
  r.prompt = get_string(j.at("prompt"), where, "prompt");
  r.prompt_ids = get_ids(j.at("prompt_ids"), where, "prompt_ids");
  r.add_bos = get_bool(j.at("add_bos"), where, "add_bos");
  r.add_eos = j.contains("add_eos") && get_bool(j.at("add_eos"), where, "add_eos");
  r.parse_special = j.contains("parse_special") && get_bool(j.at("parse_special"), where, "parse_special");
  r.sampler = read_sampler(j.at("sampler"), where);
  r.seq_id = int_from_json<uint32_t>(j.at("seq_id"), where, "seq_id");
  r.stop = read_stop(j.at("stop"), where);
  r.logprobs_top_n = get_int(j.at("logprobs_top_n"), where, "logprobs_top_n");
  r.output_ids = get_ids(j.at("output_ids"), where, "output_ids");
  r.text = get_string(j.at("text"), where, "text");
  r.finish_reason = get_string(j.at("finish_reason"), where, "finish_reason");
  r.stop_detail = get_string(j.at("stop_detail"), where, "stop_detail");
  r.steps = read_steps(j.at("steps"), where);
  check_consistency(r, where);
  return r;
}

LogRecord parse_log_line(const std::string& line, const std::string& where) {
  return record_from_json(parse_json_text(line, where, "json"), where);
}

}  // namespace oracle
