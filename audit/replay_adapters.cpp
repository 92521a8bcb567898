// Engine log adapters: detection, model names, token strings (replay_adapters.h).
#include "audit/replay_adapters.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "reference/base/errors.h"

namespace oracle {

using nlohmann::json;

namespace {

const json* member(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && !j.at(key).is_null() ? &j.at(key) : nullptr;
}

// Request and response of a line: {"request", "response"} or a bare response.
std::pair<const json*, const json*> split(const json& line) {
  if (line.is_object() && line.contains("response")) return {member(line, "request"), &line.at("response")};
  return {nullptr, &line};
}

bool vllm_shaped(const json* req, const json& resp) {
  static const char* const resp_keys[] = {"prompt_token_ids", "prompt_logprobs", "kv_transfer_params"};
  for (const char* k : resp_keys)
    if (resp.contains(k)) return true;
  if (resp.contains("choices") && resp.at("choices").is_array())
    for (const json& c : resp.at("choices"))
      if (c.is_object() && (c.contains("token_ids") || c.contains("prompt_token_ids") || c.contains("stop_reason")))
        return true;
  static const char* const req_keys[] = {"top_k", "min_p", "repetition_penalty", "return_tokens_as_token_ids",
                                         "return_token_ids", "min_tokens", "stop_token_ids", "ignore_eos"};
  if (req)
    for (const char* k : req_keys)
      if (req->contains(k)) return true;
  return false;
}

}  // namespace

std::string engine_of(const json& line) {
  if (!line.is_object() || line.contains("schema")) return "";
  const auto [req, resp] = split(line);
  if (!resp->is_object()) return "";
  if (resp->contains("generation_settings") || resp->contains("completion_probabilities") ||
      resp->contains("stop_type"))
    return "llamacpp-server";
  const json* object = member(*resp, "object");
  if (!object || !object->is_string()) return "";
  const std::string o = object->get<std::string>();
  const std::string family = vllm_shaped(req, *resp) ? "vllm" : "openai";
  if (o == "text_completion") return family + "-completions";
  if (o == "chat.completion") return family + "-chat";
  return "";
}

std::string engine_model_name(const json& line) {
  const auto [req, resp] = split(line);
  for (const json* j : {req, resp}) {
    const json* m = j ? member(*j, "model") : nullptr;
    if (m && m->is_string() && !m->get<std::string>().empty()) return m->get<std::string>();
  }
  const json* gs = member(*resp, "generation_settings");
  const json* m = gs ? member(*gs, "model") : nullptr;
  return m && m->is_string() ? m->get<std::string>() : "";
}

AdaptedRecord adapt_engine_record(const json& line, const std::string& where, const Tokenizer& tok) {
  const std::string engine = engine_of(line);
  const auto [req, resp] = split(line);
  require_input(!engine.empty(), where, "record", "not a llama.cpp server, OpenAI or vLLM response");
  if (req) require_input(req->is_object(), where, "request", "expected a JSON object");
  AdaptedRecord r = engine == "llamacpp-server" ? adapt_llamacpp_server(req, *resp, where, tok)
                                                : adapt_openai(req, *resp, engine.rfind("vllm", 0) == 0, where, tok);
  r.engine = engine;
  r.model = engine_model_name(line);
  return r;
}

// ---- token strings ---------------------------------------------------------------------------
int TokenIndex::resolve(const std::string& token, const std::string& where, const std::string& field) {
  if (token.rfind("token_id:", 0) == 0) {
    const std::string digits = token.substr(9);
    require_input(!digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos,
                  where, field, "malformed '" + token + "'");
    return std::stoi(digits);
  }
  if (by_text_.empty()) {  // pieces first ("▁Once", "<0x0A>"), then decoded bytes (" Once", "\n")
    const int other = tok_.eos_id() != tok_.bos_id() ? tok_.eos_id() : -1;  // not BOS: keeps SPM's leading space
    for (int id = 0; id < tok_.vocab_size(); id++) by_text_.push_back({"0" + tok_.vocab().tokens[(size_t)id], id});
    for (int id = 0; id < tok_.vocab_size(); id++) by_text_.push_back({"1" + tok_.token_bytes(other, id), id});
    std::sort(by_text_.begin(), by_text_.end());
  }
  std::vector<int> ids;
  for (const char* kind : {"0", "1"}) {  // an exact piece wins over a byte-level match
    const std::string key = kind + token;
    for (auto it = std::lower_bound(by_text_.begin(), by_text_.end(), std::make_pair(key, -1));
         it != by_text_.end() && it->first == key; ++it)
      if (std::find(ids.begin(), ids.end(), it->second) == ids.end()) ids.push_back(it->second);
    if (!ids.empty()) break;
  }
  require_input(ids.size() == 1, where, field,
                "token string '" + token + "' matches " + std::to_string(ids.size()) +
                    " vocabulary entries; log token ids (vLLM: return_tokens_as_token_ids)");
  return ids[0];
}

}  // namespace oracle
