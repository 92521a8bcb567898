// Plausibility replay of foreign (OpenAI-style completion) records: each token
// is checked against the reference support under the stated parameters, and
// logprobs, where given, within a tolerance (replay.h, docs/replay.md).
#include <cmath>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/json_util.h"
#include "audit/replay/replay.h"

namespace oracle {

using nlohmann::json;

namespace {

struct ForeignRecord {
  std::vector<int> prompt_ids;              // (n_prompt)
  GenerateOptions options;
  std::vector<int> output_ids;              // (n_logged)
  std::vector<std::optional<float>> logprobs;  // (n_logged) or empty
  bool processed_logprobs = false;          // logprobs_kind "processed" (default "raw")
  std::string finish_reason;                // "" when not given
};

// ---- field readers: optional keys keep their defaults, wrong types name the key ---------
// Numbers are range-checked (int_from_json): 4294967302 is not 6, 1e300 is not inf.
template <class T>
void opt(const json& j, const char* key, T& out, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    out = int_from_json<T>(j.at(key), where, key);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    out = ints_from_json(j.at(key), where, key);
  } else {
    try {
      j.at(key).get_to(out);
    } catch (const json::exception&) {
      throw InputError(where, key, "wrong JSON type");
    }
  }
}

void opt_float(const json& j, const char* key, float& out, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return;
  require_input(j.at(key).is_number(), where, key, "expected a number");
  const double v = j.at(key).get<double>();
  require_input(std::isfinite(v) && std::fabs(v) <= 3.4e38, where, key, "outside the float32 range: " + j.at(key).dump());
  out = (float)v;
}

SamplerConfig foreign_sampler(const json& j, const std::string& where) {
  SamplerConfig c;
  std::string preset = preset_name(c.preset);
  opt(j, "preset", preset, where);
  c.preset = parse_preset(preset, where, "preset");
  c.order = preset_order(c.preset);
  opt_float(j, "temperature", c.temperature, where);
  opt_float(j, "top_p", c.top_p, where);
  opt(j, "top_k", c.top_k, where);
  opt_float(j, "min_p", c.min_p, where);
  opt_float(j, "repetition_penalty", c.repetition_penalty, where);
  opt_float(j, "frequency_penalty", c.frequency_penalty, where);
  opt_float(j, "presence_penalty", c.presence_penalty, where);
  opt(j, "penalty_window", c.penalty_window, where);
  opt(j, "seed", c.seed, where);
  if (j.contains("logit_bias")) {  // OpenAI: {"<token id>": bias}
    require_input(j.at("logit_bias").is_object(), where, "logit_bias", "expected {\"<id>\": bias}");
    for (const auto& [k, v] : j.at("logit_bias").items()) {
      require_input(v.is_number() && k.find_first_not_of("0123456789") == std::string::npos && !k.empty() &&
                        k.size() < 10,
                    where, "logit_bias", "expected {\"<id>\": bias} with ids below 10^9");
      float bias = 0.0f;
      opt_float(j.at("logit_bias"), k.c_str(), bias, where);
      c.logit_bias.emplace_back(std::stoi(k), bias);
    }
  }
  return c;
}

std::vector<std::string> foreign_stops(const json& j, const std::string& where) {
  std::vector<std::string> stops;
  if (!j.contains("stop") || j.at("stop").is_null()) return stops;
  if (j.at("stop").is_string()) return {j.at("stop").get<std::string>()};
  opt(j, "stop", stops, where);
  return stops;
}

// Token ids of the completion: given, or re-tokenized as prompt + text.
std::vector<int> completion_ids(const json& choice, const std::vector<int>& prompt_ids, const std::string& prompt,
                                const ReplayModel& rm, bool add_bos, const std::string& where) {
  std::vector<int> ids;
  if (choice.contains("token_ids")) {
    opt(choice, "token_ids", ids, where);
    return ids;
  }
  require_input(choice.contains("text") && choice.at("text").is_string(), where, "choices[0].text",
                "a completion needs token_ids or text");
  std::vector<int> full = rm.tokenizer.encode(prompt + choice.at("text").get<std::string>(), add_bos);
  bool prefix = full.size() >= prompt_ids.size() && std::equal(prompt_ids.begin(), prompt_ids.end(), full.begin());
  require_input(prefix, where, "choices[0].text", "prompt + text does not re-tokenize after the prompt; give token_ids");
  return std::vector<int>(full.begin() + (long)prompt_ids.size(), full.end());
}

std::vector<std::optional<float>> choice_logprobs(const json& choice, const std::string& where) {
  std::vector<std::optional<float>> lps;
  if (!choice.contains("logprobs") || choice.at("logprobs").is_null()) return lps;
  const json& l = choice.at("logprobs");
  require_input(l.is_object() && l.contains("token_logprobs") && l.at("token_logprobs").is_array(), where,
                "choices[0].logprobs.token_logprobs", "expected an array");
  for (const json& v : l.at("token_logprobs")) {
    if (v.is_null()) lps.push_back(std::nullopt);
    else lps.push_back(float_from_json(v, "choices[0].logprobs.token_logprobs"));
  }
  return lps;
}

ForeignRecord parse_foreign(const json& j, const std::string& where, const ReplayModel& rm) {
  require_input(j.is_object(), where, "record", "expected a JSON object");
  require_input(j.contains("choices") && j.at("choices").is_array() && j.at("choices").size() == 1, where,
                "choices", "expected exactly one choice per record");
  const json& choice = j.at("choices")[0];
  require_input(choice.is_object(), where, "choices[0]", "expected a JSON object");
  ForeignRecord f;
  std::string prompt;
  opt(j, "prompt", prompt, where);
  opt(j, "add_bos", f.options.add_bos, where);
  if (j.contains("prompt_ids")) opt(j, "prompt_ids", f.prompt_ids, where);
  else f.prompt_ids = rm.tokenizer.encode(prompt, f.options.add_bos);
  f.options.sampler = foreign_sampler(j, where);
  f.options.stop_strings = foreign_stops(j, where);
  f.output_ids = completion_ids(choice, f.prompt_ids, prompt, rm, f.options.add_bos, where);
  require_input(!f.output_ids.empty(), where, "choices[0].token_ids", "empty completion");
  f.options.max_tokens = (int)f.output_ids.size();
  opt(j, "max_tokens", f.options.max_tokens, where);
  require_input(f.options.max_tokens >= 1, where, "max_tokens", "must be >= 1");
  f.logprobs = choice_logprobs(choice, where);
  require_input(f.logprobs.empty() || f.logprobs.size() == f.output_ids.size(), where,
                "choices[0].logprobs.token_logprobs", "one entry per completion token expected");
  std::string kind = "raw";
  opt(j, "logprobs_kind", kind, where);
  require_input(kind == "raw" || kind == "processed", where, "logprobs_kind", "expected \"raw\" or \"processed\"");
  f.processed_logprobs = kind == "processed";
  opt(choice, "finish_reason", f.finish_reason, where);
  return f;
}

// |logged - reference| > tolerance; the reference logprob is raw or processed.
bool logprob_finding(int i, const ForeignRecord& f, const ForcedStep& s, const ReplayOptions& o, TokenFinding& out) {
  if (f.logprobs.empty() || !f.logprobs[(size_t)i] || s.after_stop) return false;
  const float ref = f.processed_logprobs ? s.logged_lp.processed_logprob : s.logged_lp.raw_logprob;
  const float got = *f.logprobs[(size_t)i];
  const double diff = std::fabs((double)got - (double)ref);
  if (got == ref || diff <= o.logprob_tolerance) return false;
  classify_token(i, f.output_ids[(size_t)i], s, f.options.sampler, false, o, out);
  out.verdict = Verdict::LogprobMismatch;
  out.reason = "logprob";
  out.margin = diff;
  out.detail = "logged logprob " + std::to_string(got) + ", reference " + std::to_string(ref) +
               " (tolerance " + std::to_string(o.logprob_tolerance) + ")";
  return true;
}

}  // namespace

RecordReport replay_foreign(const json& j, const std::string& where, const ReplayModel& rm, const ReplayOptions& o) {
  const ForeignRecord f = parse_foreign(j, where, rm);
  if (j.contains("model_sha256"))
    require_input(j.at("model_sha256") == rm.model_sha256, where, "model_sha256",
                  "the record names another model than the replay model (" + rm.model_sha256 + ")");
  RecordReport rep;
  rep.mode = "foreign";
  rep.n_tokens = (int)f.output_ids.size();
  const ForcedRun run = teacher_force(rm, f.prompt_ids, f.options, f.output_ids);
  for (size_t i = 0; i < run.steps.size(); i++) {
    TokenFinding t;
    if (classify_token((int)i, f.output_ids[i], run.steps[i], f.options.sampler, false, o, t)) rep.findings.push_back(t);
    if (logprob_finding((int)i, f, run.steps[i], o, t)) rep.findings.push_back(t);
  }
  for (const TokenFinding& t : rep.findings)
    if (implausible(t.verdict) && rep.diverged_at < 0) rep.diverged_at = t.index;
  if (f.finish_reason == "stop" && run.still_running)
    rep.notes.push_back("logged finish_reason stop, but no stated stop condition ends the text there");
  rep.status = rep.diverged_at >= 0 ? RecordStatus::Diverged : RecordStatus::Plausible;
  return rep;
}

}  // namespace oracle
