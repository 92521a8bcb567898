// OpenAI-style completions and chat-completions records, as OpenAI-compatible
// servers and vLLM write them (replay_adapters.h). Field map: docs/replay.md
// "OpenAI and vLLM"; names from vllm/entrypoints/openai/protocol.py.
#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "audit/replay/replay_adapters.h"
#include "base/errors.h"
#include "base/json_util.h"

namespace oracle {

using nlohmann::json;

namespace {

bool off_value(const json& v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_array() && v.empty()) ||
         (v.is_object() && v.empty()) || (v.is_string() && v.get<std::string>().empty());
}

// Request fields: mapped, inert (cannot change the sampled token's support:
// output format, scheduling, or the chat template — the prompt then comes from
// prompt_token_ids), or accepted only while `off` holds.
enum class Kind { kMapped, kInert, kOffOnly };
struct Rule {
  const char* name;
  Kind kind;
  std::function<bool(const json&)> off;
};

const std::vector<Rule>& request_rules() {
  static const std::vector<Rule> r = {
      {"model", Kind::kMapped, {}}, {"prompt", Kind::kMapped, {}}, {"max_tokens", Kind::kMapped, {}},
      {"max_completion_tokens", Kind::kMapped, {}}, {"temperature", Kind::kMapped, {}}, {"top_p", Kind::kMapped, {}},
      {"top_k", Kind::kMapped, {}}, {"min_p", Kind::kMapped, {}}, {"repetition_penalty", Kind::kMapped, {}},
      {"seed", Kind::kMapped, {}}, {"stop", Kind::kMapped, {}}, {"stop_token_ids", Kind::kMapped, {}},
      {"ignore_eos", Kind::kMapped, {}}, {"logit_bias", Kind::kMapped, {}}, {"logprobs", Kind::kMapped, {}},
      {"top_logprobs", Kind::kMapped, {}}, {"add_special_tokens", Kind::kMapped, {}}, {"n", Kind::kMapped, {}},
      // output-only penalties: vLLM counts output tokens only, the reference counts the whole history
      {"frequency_penalty", Kind::kOffOnly, [](const json& v) { return v.is_null() || v == 0; }},
      {"presence_penalty", Kind::kOffOnly, [](const json& v) { return v.is_null() || v == 0; }},
      {"echo", Kind::kOffOnly, off_value}, {"suffix", Kind::kOffOnly, off_value},
      {"use_beam_search", Kind::kOffOnly, off_value},
      {"min_tokens", Kind::kOffOnly, [](const json& v) { return v.is_null() || v == 0; }},
      {"truncate_prompt_tokens", Kind::kOffOnly, [](const json& v) { return v.is_null() || v == -1; }},
      {"allowed_token_ids", Kind::kOffOnly, off_value}, {"bad_words", Kind::kOffOnly, off_value},
      {"prompt_embeds", Kind::kOffOnly, off_value}, {"logits_processors", Kind::kOffOnly, off_value},
      {"vllm_xargs", Kind::kOffOnly, off_value}, {"structured_outputs", Kind::kOffOnly, off_value},
      {"guided_json", Kind::kOffOnly, off_value}, {"guided_regex", Kind::kOffOnly, off_value},
      {"guided_choice", Kind::kOffOnly, off_value}, {"guided_grammar", Kind::kOffOnly, off_value},
      {"guided_decoding_backend", Kind::kOffOnly, off_value}, {"guided_whitespace_pattern", Kind::kOffOnly, off_value},
      {"functions", Kind::kOffOnly, off_value}, {"function_call", Kind::kOffOnly, off_value},
      {"response_format", Kind::kOffOnly, [](const json& v) { return v.is_null() || (v.is_object() && v.value("type", "") == "text"); }},
      {"tool_choice", Kind::kOffOnly, [](const json& v) { return v.is_null() || v == "none" || v == "auto"; }},
      {"best_of", Kind::kInert, {}}, {"length_penalty", Kind::kInert, {}},  // beam search only (refused above)
      {"stream", Kind::kInert, {}}, {"stream_options", Kind::kInert, {}}, {"user", Kind::kInert, {}},
      {"include_stop_str_in_output", Kind::kInert, {}}, {"skip_special_tokens", Kind::kInert, {}},
      {"spaces_between_special_tokens", Kind::kInert, {}}, {"prompt_logprobs", Kind::kInert, {}},
      {"priority", Kind::kInert, {}}, {"request_id", Kind::kInert, {}}, {"cache_salt", Kind::kInert, {}},
      {"kv_transfer_params", Kind::kInert, {}}, {"return_tokens_as_token_ids", Kind::kInert, {}},
      {"return_token_ids", Kind::kInert, {}}, {"service_tier", Kind::kInert, {}}, {"store", Kind::kInert, {}},
      {"metadata", Kind::kInert, {}}, {"parallel_tool_calls", Kind::kInert, {}},
      // chat: rendered with the model's template when no prompt_token_ids are logged
      {"messages", Kind::kMapped, {}}, {"add_generation_prompt", Kind::kMapped, {}}, {"tools", Kind::kInert, {}}, {"chat_template", Kind::kInert, {}},
      {"chat_template_kwargs", Kind::kInert, {}},
      {"continue_final_message", Kind::kInert, {}}, {"documents", Kind::kInert, {}},
      {"mm_processor_kwargs", Kind::kInert, {}}, {"reasoning_effort", Kind::kInert, {}},
      {"include_reasoning", Kind::kInert, {}},
  };
  return r;
}

void check_request(const json& req, const std::string& where) {
  for (const auto& [key, value] : req.items()) {
    const Rule* rule = nullptr;
    for (const Rule& r : request_rules())
      if (key == r.name) rule = &r;
    require_input(rule != nullptr, where, "request." + key,
                  "not an OpenAI/vLLM field this replay understands; it may change sampling, so the record is "
                  "not replayed");
    if (rule->kind == Kind::kOffOnly)
      require_input(rule->off(value), where, "request." + key,
                    "value " + value.dump() + " changes sampling in a way the reference does not implement");
  }
}

template <class T>
T req_num(const json& r, const char* key, T dflt) {
  if (!r.contains(key) || r.at(key).is_null()) return dflt;
  if constexpr (std::is_floating_point_v<T>) return (T)float_from_json(r.at(key), std::string("request.") + key);
  else return int_from_json<T>(r.at(key), std::string("request.") + key);
}

// vLLM's defaults for absent fields (CompletionRequest._DEFAULT_SAMPLING_PARAMS):
// temperature 1, top_p 1, top_k off, min_p 0, repetition_penalty 1.
SamplerConfig sampler_from(const json& r, const std::string& where) {
  SamplerConfig c;
  c.preset = Preset::Hf;  // probability-space min-p, top-k/top-p over the sorted distribution
  using P = Processor;
  c.order = {P::LogitBias, P::Banned, P::Penalties, P::Temperature, P::MinP, P::TopK, P::TopP};
  c.temperature = req_num<float>(r, "temperature", 1.0f);
  c.top_p = req_num<float>(r, "top_p", 1.0f);
  c.top_k = std::max(0, req_num<int>(r, "top_k", 0));  // -1 and 0: off
  c.min_p = req_num<float>(r, "min_p", 0.0f);
  c.repetition_penalty = req_num<float>(r, "repetition_penalty", 1.0f);
  c.penalty_window = -1;  // vLLM: prompt and output tokens
  c.seed = (uint64_t)std::max<int64_t>(0, req_num<int64_t>(r, "seed", 0));
  if (r.contains("logit_bias") && !r.at("logit_bias").is_null()) {
    require_input(r.at("logit_bias").is_object(), where, "request.logit_bias", "expected {\"<id>\": bias}");
    for (const auto& [k, v] : r.at("logit_bias").items()) {
      require_input(!k.empty() && k.size() < 10 && k.find_first_not_of("0123456789") == std::string::npos, where,
                    "request.logit_bias", "keys must be token ids");
      c.logit_bias.emplace_back(std::stoi(k), float_from_json(v, "request.logit_bias"));
    }
  }
  return c;
}

std::vector<std::string> stops_from(const json& r, const std::string& where) {
  if (!r.contains("stop") || r.at("stop").is_null()) return {};
  if (r.at("stop").is_string()) return {r.at("stop").get<std::string>()};
  require_input(r.at("stop").is_array(), where, "request.stop", "expected a string or an array of strings");
  std::vector<std::string> out;
  for (const json& s : r.at("stop")) {
    require_input(s.is_string(), where, "request.stop", "expected strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// ---- prompt ------------------------------------------------------------------------------------
std::vector<int> ids_of(const json& v, const std::string& where, const std::string& field) {
  require_input(v.is_array(), where, field, "expected an array of token ids");
  std::vector<int> ids;
  for (const json& t : v) ids.push_back(int_from_json<int>(t, field));
  return ids;
}

// prompt_token_ids (vLLM) when logged, checked against our tokenization of a string prompt.
std::vector<int> prompt_of(const json* req, const json& resp, const Tokenizer& tok, bool add_bos,
                           const std::string& where, std::string& from) {
  std::vector<int> logged;
  if (resp.contains("prompt_token_ids") && resp.at("prompt_token_ids").is_array())
    logged = ids_of(resp.at("prompt_token_ids"), where, "response.prompt_token_ids");
  else if (resp.contains("choices") && resp.at("choices").is_array() && !resp.at("choices").empty() &&
           resp.at("choices")[0].is_object() && resp.at("choices")[0].contains("prompt_token_ids") &&
           resp.at("choices")[0].at("prompt_token_ids").is_array())
    logged = ids_of(resp.at("choices")[0].at("prompt_token_ids"), where, "response.choices[0].prompt_token_ids");
  const json* p = req && req->contains("prompt") ? &req->at("prompt") : nullptr;
  if (p && p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];
  std::vector<int> ours;
  if (p && p->is_string()) ours = tok.encode(p->get<std::string>(), add_bos);
  else if (p) {
    require_input(p->is_array() && (p->empty() || (*p)[0].is_number_integer()), where, "request.prompt",
                  "one prompt per record: a string or a list of token ids");
    ours = ids_of(*p, where, "request.prompt");
  }
  if (!logged.empty() && !ours.empty())
    require_input(logged == ours, where, "response.prompt_token_ids",
                  "the server's prompt tokens differ from the reference tokenizer's (" + std::to_string(logged.size()) +
                      " vs " + std::to_string(ours.size()) + " tokens)");
  if (!logged.empty()) {
    from = "prompt ids";
    return logged;
  }
  if (ours.empty() && req && req->contains("messages")) {  // chat without prompt ids: the model's template
    for (const char* key : {"chat_template", "chat_template_kwargs", "continue_final_message", "tools", "documents"})
      require_input(!req->contains(key) || off_value(req->at(key)), where, std::string("request.") + key,
                    "changes the rendered prompt; the replay renders the model's own template only (log prompt ids)");
    std::string format;
    ours = render_chat_prompt(*req, tok, where, &format);
    from = "chat template " + format;
    return ours;
  }
  require_input(!ours.empty(), where, "request.prompt", "the record holds no prompt");
  from = p && p->is_string() ? "prompt" : "prompt ids";
  return ours;
}

// ---- choices -----------------------------------------------------------------------------------
float lp_value(const json& v, const std::string& field) {
  return v.is_null() ? -INFINITY : float_from_json(v, field);
}

AdaptedChoice completion_choice(const json& c, const std::string& f, const std::string& where, TokenIndex& index) {
  AdaptedChoice out;
  out.index = c.contains("index") ? int_from_json<int>(c.at("index"), f + ".index") : 0;
  out.finish_reason = c.value("finish_reason", json()).is_string() ? c.at("finish_reason").get<std::string>() : "";
  const json* lp = c.contains("logprobs") && c.at("logprobs").is_object() ? &c.at("logprobs") : nullptr;
  std::vector<int> ids;
  if (c.contains("token_ids") && c.at("token_ids").is_array()) ids = ids_of(c.at("token_ids"), where, f + ".token_ids");
  if (ids.empty()) {
    require_input(lp && lp->contains("tokens") && lp->at("tokens").is_array(), where, f + ".token_ids",
                  "no token ids and no logprobs.tokens: the generated tokens are unknown");
    size_t k = 0;
    for (const json& t : lp->at("tokens")) {
      require_input(t.is_string(), where, f + ".logprobs.tokens", "expected strings");
      ids.push_back(index.resolve(t.get<std::string>(), where, f + ".logprobs.tokens[" + std::to_string(k++) + "]"));
    }
  }
  for (int id : ids) out.steps.push_back({id, {}, {}});
  if (!lp) return out;
  if (lp->contains("token_logprobs") && lp->at("token_logprobs").is_array()) {
    const json& tl = lp->at("token_logprobs");
    require_input(tl.size() == ids.size(), where, f + ".logprobs.token_logprobs", "one entry per token expected");
    for (size_t i = 0; i < ids.size(); i++)
      if (!tl[i].is_null()) out.steps[i].logprob = float_from_json(tl[i], f + ".logprobs.token_logprobs");
  }
  if (lp->contains("top_logprobs") && lp->at("top_logprobs").is_array()) {
    const json& tops = lp->at("top_logprobs");
    require_input(tops.size() == ids.size(), where, f + ".logprobs.top_logprobs", "one entry per token expected");
    for (size_t i = 0; i < ids.size(); i++) {
      if (tops[i].is_null()) continue;
      const std::string tf = f + ".logprobs.top_logprobs[" + std::to_string(i) + "]";
      require_input(tops[i].is_object(), where, tf, "expected {token: logprob}");
      for (const auto& [tok, v] : tops[i].items())
        out.steps[i].top.push_back({index.resolve(tok, where, tf), lp_value(v, tf)});
    }
  }
  return out;
}

AdaptedChoice chat_choice(const json& c, const std::string& f, const std::string& where, TokenIndex& index) {
  AdaptedChoice out;
  out.index = c.contains("index") ? int_from_json<int>(c.at("index"), f + ".index") : 0;
  out.finish_reason = c.value("finish_reason", json()).is_string() ? c.at("finish_reason").get<std::string>() : "";
  const json* content = c.contains("logprobs") && c.at("logprobs").is_object() && c.at("logprobs").contains("content") &&
                                c.at("logprobs").at("content").is_array()
                            ? &c.at("logprobs").at("content")
                            : nullptr;
  std::vector<int> ids;
  if (c.contains("token_ids") && c.at("token_ids").is_array()) ids = ids_of(c.at("token_ids"), where, f + ".token_ids");
  require_input(!ids.empty() || content, where, f + ".logprobs.content", "no token ids and no logprobs: tokens unknown");
  if (content) require_input(ids.empty() || content->size() == ids.size(), where, f + ".logprobs.content",
                             "one entry per token expected");
  const size_t n = ids.empty() ? content->size() : ids.size();
  for (size_t i = 0; i < n; i++) {
    AdaptedStep s;
    s.id = ids.empty() ? -1 : ids[i];
    if (content) {
      const json& e = (*content)[i];
      const std::string ef = f + ".logprobs.content[" + std::to_string(i) + "]";
      require_input(e.is_object() && e.contains("token") && e.at("token").is_string(), where, ef, "expected {token, logprob}");
      if (s.id < 0) s.id = index.resolve(e.at("token").get<std::string>(), where, ef + ".token");
      if (e.contains("logprob")) s.logprob = lp_value(e.at("logprob"), ef + ".logprob");
      if (e.contains("top_logprobs") && e.at("top_logprobs").is_array())
        for (const json& t : e.at("top_logprobs")) {
          require_input(t.is_object() && t.contains("token") && t.at("token").is_string() && t.contains("logprob"), where,
                        ef + ".top_logprobs", "expected {token, logprob}");
          s.top.push_back({index.resolve(t.at("token").get<std::string>(), where, ef + ".top_logprobs"),
                           lp_value(t.at("logprob"), ef + ".top_logprobs")});
        }
    }
    out.steps.push_back(std::move(s));
  }
  return out;
}

}  // namespace

AdaptedRecord adapt_openai(const json* req, const json& resp, bool vllm, const std::string& where, const Tokenizer& tok) {
  const json empty = json::object();
  const json& r = req ? *req : empty;
  check_request(r, where);
  const bool chat = resp.value("object", "") == "chat.completion";
  AdaptedRecord out;
  out.options.sampler = sampler_from(r, where);
  out.options.stop_strings = stops_from(r, where);
  if (r.contains("stop_token_ids") && !r.at("stop_token_ids").is_null())
    out.options.stop_token_ids = ids_of(r.at("stop_token_ids"), where, "request.stop_token_ids");
  out.options.stop_on_eos = !(r.contains("ignore_eos") && r.at("ignore_eos") == true);
  out.options.add_bos = !(r.contains("add_special_tokens") && r.at("add_special_tokens") == false) && tok.vocab().add_bos;
  out.top_n = chat ? req_num<int>(r, "top_logprobs", 0) : req_num<int>(r, "logprobs", 0);
  out.prompt_ids = prompt_of(req, resp, tok, out.options.add_bos, where, out.prompt_from);
  const int max_tokens = req_num<int>(r, chat && r.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
                                  chat ? 0 : 16);  // completions default 16; chat: unlimited
  require_input(resp.contains("choices") && resp.at("choices").is_array() && !resp.at("choices").empty(), where,
                "response.choices", "expected at least one choice");
  TokenIndex index(tok);
  size_t k = 0;
  for (const json& c : resp.at("choices")) {
    const std::string f = "response.choices[" + std::to_string(k++) + "]";
    require_input(c.is_object(), where, f, "expected an object");
    out.choices.push_back(chat ? chat_choice(c, f, where, index) : completion_choice(c, f, where, index));
    require_input(!out.choices.back().steps.empty(), where, f, "empty completion");
  }
  int longest = 0;
  for (const AdaptedChoice& c : out.choices) longest = std::max(longest, (int)c.steps.size());
  out.options.max_tokens = max_tokens > 0 ? max_tokens : longest;
  require_input(out.options.max_tokens >= longest, where, "request.max_tokens", "more tokens logged than max_tokens allows");
  (void)vllm;
  return out;
}

}  // namespace oracle
