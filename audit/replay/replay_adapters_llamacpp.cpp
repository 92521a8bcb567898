// llama.cpp server /completion records (replay_adapters.h). Field map:
// docs/replay.md "llama.cpp server"; names from tools/server/server-schema.cpp
// and task_params::to_json (server-task.cpp) of the llama.cpp the peer builds.
#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "audit/replay/replay_adapters.h"
#include "base/errors.h"
#include "base/json_util.h"

namespace oracle {

using nlohmann::json;

namespace {

// ============================================================================
// Field table: mapped (read below), inert (cannot change the sampled token's
// support), or accepted only while `off` holds. Any other name is an error.
// ============================================================================
using Off = std::function<bool(const json& value, const json& settings)>;
enum class Kind { kMapped, kInert, kOffOnly };
struct FieldRule {
  const char* name;
  Kind kind;
  Off off;
  const char* parent = nullptr;  // off-only fields that matter only while `parent` is on
};

double num_or(const json& s, const char* key, double dflt) {
  return s.contains(key) && s.at(key).is_number() ? s.at(key).get<double>() : dflt;
}
bool empty_value(const json& v) {
  return v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_array() && v.empty()) ||
         (v.is_object() && v.empty()) || (v.is_boolean() && !v.get<bool>());
}
Off below(double limit) { return [limit](const json& v, const json&) { return v.is_number() && v.get<double>() <= limit; }; }
Off parent_off(const char* key, double off_at_or_below) {
  return [key, off_at_or_below](const json&, const json& s) { return num_or(s, key, 0.0) <= off_at_or_below; };
}
bool lora_off(const json& v, const json&) {
  if (!v.is_array()) return false;
  for (const json& a : v)
    if (!a.is_object() || num_or(a, "scale", 1.0) != 0.0) return false;
  return true;
}
bool samplers_lack_adaptive(const json&, const json& s) {
  if (!s.contains("samplers") || !s.at("samplers").is_array()) return true;
  for (const json& n : s.at("samplers"))
    if (n == "adaptive_p") return false;
  return true;
}

const std::vector<FieldRule>& rules() {
  static const std::vector<FieldRule> r = {
      // mapped
      {"prompt", Kind::kMapped, {}}, {"n_predict", Kind::kMapped, {}}, {"max_tokens", Kind::kMapped, {}},
      {"temperature", Kind::kMapped, {}}, {"top_k", Kind::kMapped, {}}, {"top_p", Kind::kMapped, {}},
      {"min_p", Kind::kMapped, {}}, {"repeat_last_n", Kind::kMapped, {}}, {"repeat_penalty", Kind::kMapped, {}},
      {"frequency_penalty", Kind::kMapped, {}}, {"presence_penalty", Kind::kMapped, {}}, {"seed", Kind::kMapped, {}},
      {"n_probs", Kind::kMapped, {}}, {"min_keep", Kind::kMapped, {}}, {"post_sampling_probs", Kind::kMapped, {}},
      {"logit_bias", Kind::kMapped, {}}, {"ignore_eos", Kind::kMapped, {}}, {"stop", Kind::kMapped, {}},
      {"samplers", Kind::kMapped, {}}, {"model", Kind::kMapped, {}},
      // off only
      {"top_n_sigma", Kind::kOffOnly, below(0.0)},
      {"xtc_probability", Kind::kOffOnly, below(0.0)},
      {"xtc_threshold", Kind::kOffOnly, parent_off("xtc_probability", 0.0), "xtc_probability"},
      {"typical_p", Kind::kOffOnly, [](const json& v, const json&) { return v.is_number() && v.get<double>() >= 1.0; }},
      {"dynatemp_range", Kind::kOffOnly, below(0.0)},
      {"dynatemp_exponent", Kind::kOffOnly, parent_off("dynatemp_range", 0.0), "dynatemp_range"},
      {"dry_multiplier", Kind::kOffOnly, below(0.0)},
      {"dry_base", Kind::kOffOnly, parent_off("dry_multiplier", 0.0), "dry_multiplier"},
      {"dry_allowed_length", Kind::kOffOnly, parent_off("dry_multiplier", 0.0), "dry_multiplier"},
      {"dry_penalty_last_n", Kind::kOffOnly, parent_off("dry_multiplier", 0.0), "dry_multiplier"},
      {"dry_sequence_breakers", Kind::kOffOnly, parent_off("dry_multiplier", 0.0), "dry_multiplier"},
      {"mirostat", Kind::kOffOnly, below(0.0)},
      {"mirostat_tau", Kind::kOffOnly, parent_off("mirostat", 0.0), "mirostat"},
      {"mirostat_eta", Kind::kOffOnly, parent_off("mirostat", 0.0), "mirostat"},
      {"adaptive_target", Kind::kOffOnly, samplers_lack_adaptive, "samplers"},
      {"adaptive_decay", Kind::kOffOnly, samplers_lack_adaptive, "samplers"},
      {"grammar", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"json_schema", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"grammar_lazy", Kind::kOffOnly, [](const json&, const json& s) { return !s.contains("grammar") || empty_value(s.at("grammar")); }},
      {"grammar_triggers", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"preserved_tokens", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"lora", Kind::kOffOnly, lora_off},
      {"n_indent", Kind::kOffOnly, below(0.0)},
      {"reasoning_budget_tokens", Kind::kOffOnly, below(-1.0)},
      {"reasoning_control", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"n", Kind::kOffOnly, [](const json& v, const json&) { return v.is_null() || v == 1; }},
      {"n_cmpl", Kind::kOffOnly, [](const json& v, const json&) { return v.is_null() || v == 1; }},
      {"tools", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"tool_choice", Kind::kOffOnly, [](const json& v, const json&) { return v.is_null() || v == "none" || v == "auto"; }},
      {"response_format", Kind::kOffOnly, [](const json& v, const json&) {
         return v.is_null() || (v.is_object() && v.value("type", "") == "text");
       }},
      {"chat_template_kwargs", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"echo", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"penalize_nl", Kind::kOffOnly, [](const json& v, const json& s) {
         return v == true || (num_or(s, "repeat_penalty", 1.0) == 1.0 && num_or(s, "frequency_penalty", 0.0) == 0.0 &&
                              num_or(s, "presence_penalty", 0.0) == 0.0);
       }},
      // inert: output format, caching, streaming, time limits, parsing of the output
      {"verbose", Kind::kInert, {}}, {"timings_per_token", Kind::kInert, {}}, {"stream", Kind::kInert, {}},
      {"stream_options", Kind::kInert, {}}, {"include_usage", Kind::kInert, {}}, {"cache_prompt", Kind::kInert, {}},
      {"return_tokens", Kind::kInert, {}}, {"return_progress", Kind::kInert, {}}, {"sse_ping_interval", Kind::kInert, {}},
      {"n_keep", Kind::kInert, {}}, {"n_discard", Kind::kInert, {}}, {"user", Kind::kInert, {}},
      {"parallel_tool_calls", Kind::kInert, {}},
      {"n_cache_reuse", Kind::kInert, {}}, {"t_max_prompt_ms", Kind::kInert, {}}, {"t_max_predict_ms", Kind::kInert, {}},
      {"response_fields", Kind::kInert, {}}, {"id_slot", Kind::kInert, {}}, {"backend_sampling", Kind::kInert, {}},
      {"chat_format", Kind::kInert, {}}, {"reasoning_format", Kind::kInert, {}}, {"reasoning_in_content", Kind::kInert, {}},
      {"generation_prompt", Kind::kInert, {}}, {"parse_tool_calls", Kind::kInert, {}}, {"chat_parser", Kind::kInert, {}},
      {"continue_final_message", Kind::kOffOnly, [](const json& v, const json&) { return empty_value(v); }},
      {"reasoning_budget_start_tag", Kind::kInert, {}}, {"reasoning_budget_end_tags", Kind::kInert, {}},
      {"reasoning_budget_message", Kind::kInert, {}},
      // speculative decoding samples every token from the target's own chain
      {"speculative.types", Kind::kInert, {}}, {"speculative.type", Kind::kInert, {}},
      {"speculative.n_max", Kind::kInert, {}}, {"speculative.n_min", Kind::kInert, {}},
      {"speculative.p_min", Kind::kInert, {}}, {"speculative.ngram_size_n", Kind::kInert, {}},
      {"speculative.ngram_size_m", Kind::kInert, {}}, {"speculative.ngram_min_hits", Kind::kInert, {}},
  };
  return r;
}

// Every key of `obj` must be in the table and, if off-only, off in `settings`;
// a dependent field that is not off names the field that turns it on.
void check_fields(const json& obj, const json& settings, const std::string& where, const std::string& prefix) {
  for (const auto& [key, value] : obj.items()) {
    const FieldRule* rule = nullptr;
    for (const FieldRule& r : rules())
      if (key == r.name) rule = &r;
    require_input(rule != nullptr, where, prefix + key,
                  "not a llama.cpp server field this replay understands; it may change sampling, so the record "
                  "is not replayed");
    if (rule->kind != Kind::kOffOnly || rule->off(value, settings)) continue;
    const std::string on = rule->parent ? rule->parent : key;
    const json shown = rule->parent && settings.contains(on) ? settings.at(on) : value;
    require_input(false, where, prefix + on,
                  "value " + shown.dump() + " turns on a sampler the reference does not implement");
  }
}

// ============================================================================
// Mapped settings
// ============================================================================
template <class T>
T get_num(const json& s, const char* key, T dflt, const std::string& where, const std::string& prefix) {
  if (!s.contains(key) || s.at(key).is_null()) return dflt;
  if constexpr (std::is_floating_point_v<T>) return (T)float_from_json(s.at(key), prefix + key);
  else return int_from_json<T>(s.at(key), prefix + key);
}

std::vector<std::pair<int, float>> logit_bias(const json& v, const std::string& where, const std::string& field) {
  std::vector<std::pair<int, float>> out;
  auto bias_of = [&](const json& b) {
    if (b.is_boolean()) {
      require_input(!b.get<bool>(), where, field, "bias true is not defined");
      return -INFINITY;
    }
    return float_from_json(b, field);
  };
  if (v.is_object()) {
    for (const auto& [k, b] : v.items()) {
      require_input(!k.empty() && k.size() < 10 && k.find_first_not_of("0123456789") == std::string::npos, where, field,
                    "token strings as logit_bias keys are not mapped; use ids");
      out.emplace_back(std::stoi(k), bias_of(b));
    }
    return out;
  }
  require_input(v.is_array(), where, field, "expected [[id, bias], ...] or {\"id\": bias}");
  for (const json& e : v) {
    if (e.is_object() && e.contains("token") && e.contains("bias")) {  // generation_settings form
      require_input(e.at("token").is_number_integer(), where, field, "token strings are not mapped; use ids");
      out.emplace_back(int_from_json<int>(e.at("token"), field), bias_of(e.at("bias")));
      continue;
    }
    require_input(e.is_array() && e.size() == 2 && e[0].is_number_integer(), where, field,
                  "expected [id, bias] pairs (token strings are not mapped)");
    out.emplace_back(int_from_json<int>(e[0], field), bias_of(e[1]));
  }
  return out;
}

// generation_settings.samplers -> our order; the named samplers we lack must be off.
std::vector<Processor> sampler_order(const json& v, const json& s, const std::string& where, const std::string& field) {
  require_input(v.is_array(), where, field, "expected an array of sampler names");
  std::vector<Processor> order = {Processor::LogitBias, Processor::Banned};
  for (const json& n : v) {
    require_input(n.is_string(), where, field, "expected sampler names");
    const std::string name = n.get<std::string>();
    // llama.cpp spells these five as we do; logit_bias and banned are not in its list
    if (name == "penalties" || name == "top_k" || name == "top_p" || name == "min_p" || name == "temperature") {
      order.push_back(parse_processor(name, where, field));
      continue;
    }
    bool off = false;
    if (name == "dry") off = num_or(s, "dry_multiplier", 0.0) <= 0.0;
    if (name == "top_n_sigma") off = num_or(s, "top_n_sigma", -1.0) <= 0.0;
    if (name == "typ_p" || name == "typical_p") off = num_or(s, "typical_p", 1.0) >= 1.0;
    if (name == "xtc") off = num_or(s, "xtc_probability", 0.0) <= 0.0;
    require_input(off, where, field, "sampler '" + name + "' is on (or unknown) and the reference does not implement it");
  }
  return order;
}

// The effective settings: generation_settings when logged (authoritative), else the request.
SamplerConfig sampler_from(const json& s, const std::string& where, const std::string& prefix, int& n_predict,
                           std::vector<std::string>& stops, bool& ignore_eos, int& n_probs, bool& post) {
  SamplerConfig c = preset_config(Preset::LlamaCpp);  // server defaults: temp 0.8, top-k 40, top-p 0.95, min-p 0.05, last_n 64
  c.temperature = get_num<float>(s, "temperature", c.temperature, where, prefix);
  c.top_k = get_num<int>(s, "top_k", c.top_k, where, prefix);
  c.top_p = get_num<float>(s, "top_p", c.top_p, where, prefix);
  c.min_p = get_num<float>(s, "min_p", c.min_p, where, prefix);
  c.min_keep = std::max(1, get_num<int>(s, "min_keep", 0, where, prefix));
  c.repetition_penalty = get_num<float>(s, "repeat_penalty", 1.0f, where, prefix);
  c.frequency_penalty = get_num<float>(s, "frequency_penalty", 0.0f, where, prefix);
  c.presence_penalty = get_num<float>(s, "presence_penalty", 0.0f, where, prefix);
  c.penalty_window = get_num<int>(s, "repeat_last_n", 64, where, prefix);  // -1: the whole context
  require_input(c.penalty_window >= -1, where, prefix + "repeat_last_n", "must be >= -1");
  const int64_t seed = get_num<int64_t>(s, "seed", -1, where, prefix);
  c.seed = (uint64_t)(seed < 0 ? 0 : seed);  // the engine's RNG is not ours: draws are checked for support only
  if (s.contains("logit_bias")) c.logit_bias = logit_bias(s.at("logit_bias"), where, prefix + "logit_bias");
  if (s.contains("samplers")) c.order = sampler_order(s.at("samplers"), s, where, prefix + "samplers");
  n_predict = get_num<int>(s, "n_predict", get_num<int>(s, "max_tokens", -1, where, prefix), where, prefix);
  if (s.contains("stop") && !s.at("stop").is_null()) {
    require_input(s.at("stop").is_array(), where, prefix + "stop", "expected an array of strings");
    for (const json& x : s.at("stop")) {
      require_input(x.is_string(), where, prefix + "stop", "expected strings");
      stops.push_back(x.get<std::string>());
    }
  }
  if (s.contains("ignore_eos")) ignore_eos = s.at("ignore_eos") == true;
  n_probs = get_num<int>(s, "n_probs", 0, where, prefix);
  if (s.contains("post_sampling_probs")) post = s.at("post_sampling_probs") == true;
  return c;
}

// ============================================================================
// Prompt and tokens
// ============================================================================
// The server tokenizes text prompts with add_special and parse_special.
std::vector<int> prompt_ids(const json* req, const json& resp, const Tokenizer& tok, const std::string& where) {
  const json* p = req && req->contains("prompt") ? &req->at("prompt") : resp.contains("prompt") ? &resp.at("prompt") : nullptr;
  require_input(p != nullptr, where, "request.prompt", "the record holds no prompt");
  if (p->is_string()) return tok.encode(p->get<std::string>(), EncodeOptions{tok.vocab().add_bos, false, true});
  const std::string field = req && req->contains("prompt") ? "request.prompt" : "response.prompt";
  require_input(p->is_array(), where, field, "expected a string or an array of token ids");
  std::vector<int> ids;
  for (const json& t : *p) {
    require_input(t.is_number_integer(), where, field, "mixed text/token prompts are not mapped");
    ids.push_back(int_from_json<int>(t, field));
  }
  return ids;
}

float logprob_of(const json& e, bool post, const std::string& field) {
  if (post) {
    const float p = float_from_json(e.at("prob"), field + ".prob");
    return p > 0.0f ? std::log(p) : -INFINITY;
  }
  return float_from_json(e.at("logprob"), field + ".logprob");
}

// Where the llama.cpp-shaped pieces of a response are: /completion's own
// fields, or the OpenAI envelope of /v1/completions and /v1/chat/completions.
struct ServerView {
  const json* probs = nullptr;   // [{id, logprob|prob, top_logprobs|top_probs}]
  std::string probs_field;       // its name in the log
  const json* tokens = nullptr;  // response.tokens (return_tokens), when no probs
  std::string stop_type;         // eos | word | limit | ""
  const json* prompt_tokens = nullptr;  // tokens the server evaluated for the prompt
  std::string prompt_tokens_field;
  const json* predicted = nullptr;      // tokens it generated (tokens_predicted, usage.completion_tokens)
};

std::vector<AdaptedStep> steps_from(const ServerView& v, bool post, const std::string& where) {
  std::vector<AdaptedStep> steps;
  const char* top_key = post ? "top_probs" : "top_logprobs";
  const char* lp_key = post ? "prob" : "logprob";
  if (v.probs && v.probs->is_array() && !v.probs->empty()) {
    size_t k = 0;
    for (const json& e : *v.probs) {
      const std::string f = v.probs_field + "[" + std::to_string(k++) + "]";
      require_input(e.is_object() && e.contains("id") && e.contains(lp_key), where, f,
                    std::string("expected {id, ") + lp_key + ", " + top_key + "}");
      AdaptedStep s;
      s.id = int_from_json<int>(e.at("id"), f + ".id");
      s.logprob = logprob_of(e, post, f);
      if (e.contains(top_key)) {
        require_input(e.at(top_key).is_array(), where, f + "." + top_key, "expected an array");
        for (const json& t : e.at(top_key)) {
          require_input(t.is_object() && t.contains("id") && t.contains(lp_key), where, f + "." + top_key,
                        std::string("expected {id, ") + lp_key + "}");
          s.top.push_back({int_from_json<int>(t.at("id"), f + ".id"), logprob_of(t, post, f + "." + top_key)});
        }
      }
      steps.push_back(std::move(s));
    }
    return steps;
  }
  require_input(v.tokens && v.tokens->is_array() && !v.tokens->empty(), where,
                v.tokens ? "response.tokens" : v.probs_field, "no token ids logged (request return_tokens or n_probs > 0)");
  for (const json& t : *v.tokens) steps.push_back({int_from_json<int>(t, "response.tokens"), {}, {}});
  return steps;
}

AdaptedRecord adapt_server(const json* req, const json* gs, const ServerView& v, const std::string& where,
                           const Tokenizer& tok, const json& resp) {
  const json empty = json::object();
  const json& settings = gs ? *gs : req ? *req : empty;
  if (gs) check_fields(*gs, *gs, where, "response.generation_settings.");
  if (req) check_fields(*req, settings, where, "request.");
  AdaptedRecord r;
  int n_predict = -1, n_probs = 0;
  bool ignore_eos = false, post = false;
  const std::string prefix = gs ? "response.generation_settings." : "request.";
  r.options.sampler = sampler_from(settings, where, prefix, n_predict, r.options.stop_strings, ignore_eos, n_probs, post);
  r.options.stop_on_eos = !ignore_eos;
  r.processed_logprobs = post;
  r.top_n = n_probs;
  r.prompt_ids = prompt_ids(req, resp, tok, where);
  if (v.prompt_tokens && v.prompt_tokens->is_number_integer())
    require_input(v.prompt_tokens->get<int64_t>() == (int64_t)r.prompt_ids.size(), where, v.prompt_tokens_field,
                  "the server evaluated " + v.prompt_tokens->dump() + " prompt tokens, our tokenization has " +
                      std::to_string(r.prompt_ids.size()));
  AdaptedChoice c;
  c.steps = steps_from(v, post, where);
  if (v.stop_type == "eos" && r.options.stop_on_eos && c.steps.back().id != tok.eos_id())
    c.steps.push_back({tok.eos_id(), {}, {}});  // the EOS that ended the text is not always listed
  c.finish_reason = v.stop_type == "limit" ? "length" : (v.stop_type == "eos" || v.stop_type == "word") ? "stop" : "";
  // A stop string: the server lists no probabilities for the tokens it did not
  // send (the stop string's, held back as a possible match); the listed prefix is replayed.
  if (v.stop_type == "word" && v.predicted && v.predicted->is_number_integer() &&
      v.predicted->get<int64_t>() > (int64_t)c.steps.size()) {
    r.notes.push_back("the server generated " + v.predicted->dump() + " tokens but lists " +
                      std::to_string(c.steps.size()) + " (it omits those of the stop string); the listed ones are replayed");
    c.finish_reason = "";
  }
  r.options.max_tokens = n_predict > 0 ? n_predict : (int)c.steps.size();
  require_input(r.options.max_tokens >= (int)c.steps.size(), where, prefix + "n_predict",
                "more tokens logged than n_predict allows");
  r.choices.push_back(std::move(c));
  return r;
}

// The OpenAI request in the server's own spelling (server-common.cpp
// oaicompat_*_params_parse): logprobs / top_logprobs -> n_probs,
// max_completion_tokens -> n_predict, messages -> the rendered prompt's ids.
json native_request(const json& req, bool chat, const Tokenizer& tok, const std::string& where, std::string& from) {
  json n = req;
  if (chat) {
    require_input(req.contains("messages"), where, "request.messages", "a chat completion needs messages");
    std::string format;
    n["prompt"] = render_chat_prompt(req, tok, where, &format);
    from = "chat template " + format;
    n.erase("messages");
    n.erase("add_generation_prompt");
    if (req.contains("logprobs") && req.at("logprobs") == true)
      n["n_probs"] = req.contains("top_logprobs") && !req.at("top_logprobs").is_null() ? req.at("top_logprobs") : json(20);
    n.erase("top_logprobs");
  } else if (req.contains("logprobs") && !req.at("logprobs").is_null() && !req.contains("n_probs")) {
    n["n_probs"] = req.at("logprobs");
  }
  n.erase("logprobs");
  if (req.contains("max_completion_tokens") && !req.contains("n_predict")) n["n_predict"] = req.at("max_completion_tokens");
  n.erase("max_completion_tokens");
  return n;
}

}  // namespace

AdaptedRecord adapt_llamacpp_server(const json* req, const json& resp, const std::string& where, const Tokenizer& tok) {
  const json* gs = resp.contains("generation_settings") ? &resp.at("generation_settings") : nullptr;
  if (gs) require_input(gs->is_object(), where, "response.generation_settings", "expected an object");
  require_input(!(resp.contains("truncated") && resp.at("truncated") == true), where, "response.truncated",
                "the server truncated the prompt; the replay would run another context");
  ServerView v;
  v.probs = resp.contains("completion_probabilities") ? &resp.at("completion_probabilities") : nullptr;
  v.probs_field = "response.completion_probabilities";
  v.tokens = resp.contains("tokens") ? &resp.at("tokens") : nullptr;
  v.stop_type = resp.value("stop_type", std::string());
  v.prompt_tokens = resp.contains("tokens_evaluated") ? &resp.at("tokens_evaluated") : nullptr;
  v.prompt_tokens_field = "response.tokens_evaluated";
  v.predicted = resp.contains("tokens_predicted") ? &resp.at("tokens_predicted") : nullptr;
  AdaptedRecord r = adapt_server(req, gs, v, where, tok, resp);
  r.prompt_from = req && req->contains("prompt") && req->at("prompt").is_array() ? "prompt ids" : "prompt";
  return r;
}

AdaptedRecord adapt_llamacpp_oai(const json* req, const json& resp, bool chat, const std::string& where,
                                 const Tokenizer& tok) {
  require_input(req != nullptr, where, "request", "a llama.cpp server OpenAI-style response needs its request");
  std::string from = req->contains("prompt") && req->at("prompt").is_array() ? "prompt ids" : "prompt";
  const json native = native_request(*req, chat, tok, where, from);
  require_input(resp.contains("choices") && resp.at("choices").is_array() && resp.at("choices").size() == 1, where,
                "response.choices", "expected one choice (the server writes one per request)");
  const json& c = resp.at("choices")[0];
  require_input(c.is_object(), where, "response.choices[0]", "expected an object");
  ServerView v;
  const json* lp = c.contains("logprobs") && c.at("logprobs").is_object() ? &c.at("logprobs") : nullptr;
  v.probs = lp && lp->contains("content") ? &lp->at("content") : nullptr;
  v.probs_field = "response.choices[0].logprobs.content";
  const std::string finish = c.value("finish_reason", json()).is_string() ? c.at("finish_reason").get<std::string>() : "";
  require_input(finish.empty() || finish == "stop" || finish == "length", where, "response.choices[0].finish_reason",
                "'" + finish + "' is not a plain completion's finish");
  const bool words = native.contains("stop") && native.at("stop").is_array() && !native.at("stop").empty();
  v.stop_type = finish == "length" ? "limit" : finish == "stop" ? (words ? "word" : "eos") : "";
  const json* usage = resp.contains("usage") && resp.at("usage").is_object() ? &resp.at("usage") : nullptr;
  v.prompt_tokens = usage && usage->contains("prompt_tokens") ? &usage->at("prompt_tokens") : nullptr;
  v.prompt_tokens_field = "response.usage.prompt_tokens";
  v.predicted = usage && usage->contains("completion_tokens") ? &usage->at("completion_tokens") : nullptr;
  AdaptedRecord r = adapt_server(&native, nullptr, v, where, tok, resp);
  r.prompt_from = from;
  return r;
}

}  // namespace oracle
